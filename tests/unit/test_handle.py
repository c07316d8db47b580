"""A running lab's handle (linklab/handle.py): built from the state record alone, one backend
kept across reconfigurations."""

from pathlib import Path

import pytest

from linklab.backends.linux.backend import LinuxBackend
from linklab.handle import LabHandle
from linklab.model import Context, load_topology, resolve

ROOT = Path(__file__).resolve().parents[2]


def record(with_netns=True):
    lab = resolve(load_topology(ROOT / "topologies/bond2.yaml"), Context())
    rec = {"lab": lab.name, "backend": "linux", "resolved": lab.model_dump(mode="json")}
    if with_netns:
        rec["netns"] = {"h1": "elsewhere-h1", "h2": "elsewhere-h2"}
    return rec


def test_the_namespaces_come_from_the_record():
    h = LabHandle.from_record(record())
    assert h.name == "bond2" and isinstance(h.backend, LinuxBackend)
    assert h.ns("h1") == "elsewhere-h1" and [n.name for n in h.lab.nodes] == ["h1", "h2"]
    with pytest.raises(KeyError, match="no node 'h9' in lab bond2"):
        h.ns("h9")


def test_a_record_without_the_map_asks_the_backend():
    assert LabHandle.from_record(record(with_netns=False)).netns == {"h1": "ll-bond2-h1", "h2": "ll-bond2-h2"}


def test_a_newer_record_keeps_the_backend():
    h = LabHandle.from_record(record())
    newer = record()
    newer["resolved"]["links"][0]["mtu"] = 9000
    h2 = h.with_record(newer)
    assert h2.backend is h.backend and h2.lab.links[0].mtu == 9000 and h.lab.links[0].mtu != 9000
