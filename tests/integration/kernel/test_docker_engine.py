"""linklab's own Docker engine across `clean`: stopped with its storage freed when no container
is left, and started afresh, the image loaded again, by the next container lab."""

import os
from pathlib import Path

import pytest

from linklab import lab, runner, state
from linklab.docker import engine

DATA = Path(__file__).resolve().parents[1] / "data"
QUIET = dict(say=lambda *_: None)
NAME = "ctrpair"  # tests/integration/data/ctr_pair.yaml: two containers and a host


def _up_and_running() -> None:
    rec = lab.up(DATA / "ctr_pair.yaml", **QUIET)
    api = engine.running()
    assert api is not None and os.path.ismount(engine.STORAGE)
    assert sorted(c["Names"][0] for c in api.containers({"linklab.lab": NAME})) == ["/ll-ctrpair-c1", "/ll-ctrpair-c2"]
    assert all(runner.container_pid(rec["netns"][c]) for c in ("c1", "c2"))
    assert len(engine.daemons()["dockerd"]) == 1 and len(engine.daemons()["containerd"]) == 1


@pytest.mark.timeout(600)
def test_clean_stops_the_engine_and_frees_its_storage_and_the_next_lab_loads_the_image_again():
    """`clean` with no container left stops every dockerd and containerd on the engine's sockets
    (recorded by a command or not: one killed mid-start records nothing) before it frees the
    storage; a tmpfs freed under a running dockerd left it answering with no images."""
    assert state.all_labs() == [], "a lab is up: clean would keep the engine for it"
    try:
        _up_and_running()
        lab.down(NAME, **QUIET)
        released = lab.clean(None, **QUIET)
        assert any("Docker engine" in r for r in released), released
        assert engine.daemons() == {"dockerd": [], "containerd": []} and not os.path.ismount(engine.STORAGE)
        assert engine.running() is None
        _up_and_running()  # a new engine, the image imported again
    finally:
        if state.load(NAME):
            lab.down(NAME, **QUIET)
