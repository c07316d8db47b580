"""ab.json read back in the current format, whichever linklab wrote it (linklab/ab/manifest.py)."""

import json

import pytest

from linklab.ab import manifest
from linklab.errors import UsageError


def _write(tmp_path, doc):
    (tmp_path / manifest.AB_FILE).write_text(json.dumps(doc))
    return tmp_path


def test_a_format_1_manifest_is_read_with_its_unmatched_points_renamed(tmp_path):
    # as `linklab ab` wrote it before format 2: the points one arm alone had under "only"
    old = {"format": 1, "kind": "ab", "experiment": "e1", "complete": True, "subset": {"mtu": ["450"]},
           "only": {"a": ["mtu=1500"], "b": []}, "runs": {"a": "a/run", "b": "b/run"}}
    got = manifest.read(_write(tmp_path, old))
    assert got["format"] == manifest.FORMAT == 2
    assert got["unmatched"] == {"a": ["mtu=1500"], "b": []} and "only" not in got
    assert got["subset"] == {"mtu": ["450"]} and got["runs"] == old["runs"]  # the rest as written


def test_a_current_manifest_is_read_as_written_and_a_newer_one_is_refused(tmp_path):
    now = {"format": 2, "kind": "ab", "unmatched": {"a": [], "b": ["x"]}}
    assert manifest.read(_write(tmp_path, now)) == now
    with pytest.raises(UsageError, match="A/B run format 3, written by a newer linklab"):
        manifest.read(_write(tmp_path, {**now, "format": 3}))
    (tmp_path / manifest.AB_FILE).write_text("{not json")
    with pytest.raises(UsageError, match="not a readable A/B run manifest"):
        manifest.read(tmp_path)
