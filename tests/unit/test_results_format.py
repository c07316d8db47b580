"""The results manifest's format (linklab/results/manifest.py): written into every new run,
and older runs upgraded as they load, so the stored baselines and test runs keep loading."""

import json
from pathlib import Path

import pytest

from linklab.errors import UsageError
from linklab.results.runs import Run
from linklab.results import manifest
from linklab.results.store import ResultsStore

ROOT = Path(__file__).resolve().parents[2]
STORED = sorted(p.parent for p in [*ROOT.glob("baselines/*/manifest.json"), *ROOT.glob("tests/data/runs/*/manifest.json")])


def test_there_are_stored_runs_of_the_first_format():
    first = [d for d in STORED if "format" not in json.loads((d / "manifest.json").read_text())]
    assert len(first) >= 10  # what the upgrade on load is tested on below
    e1 = ROOT / "baselines" / "e1_bonding_mtu-quick-vm-tcg"  # re-recorded after the format field came
    assert json.loads((e1 / "manifest.json").read_text())["format"] == manifest.FORMAT


@pytest.mark.parametrize("run_dir", STORED, ids=lambda d: f"{d.parent.name}/{d.name}")
def test_every_stored_run_loads_in_the_current_format(run_dir):
    run = Run.load(run_dir)
    assert run.manifest["format"] == manifest.FORMAT
    assert "fingerprint_parts" in run.manifest  # None where the run predates it, as it was
    assert run.rows and run.experiment == json.loads((run_dir / "manifest.json").read_text())["experiment"]


def test_a_new_run_is_written_in_the_current_format(tmp_path):
    store = ResultsStore.create(tmp_path, "e", {"fingerprint": "f"})
    assert json.loads((store.path / "manifest.json").read_text())["format"] == manifest.FORMAT
    assert ResultsStore.open(store.path).manifest["format"] == manifest.FORMAT


def test_a_run_from_a_newer_linklab_is_refused_not_misread(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"format": manifest.FORMAT + 1, "experiment": "e"}))
    with pytest.raises(UsageError, match=f"results format {manifest.FORMAT + 1}, written by a newer linklab"):
        Run.load(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "two", "experiment": "e"}))
    with pytest.raises(UsageError, match="unknown results format 'two'"):
        ResultsStore.open(tmp_path)


def test_upgrades_cover_every_older_format():
    assert set(manifest.UPGRADES) == set(range(1, manifest.FORMAT))
    assert manifest.upgrade({"experiment": "e"}, "m") == {"experiment": "e", "fingerprint_parts": None,
                                                           "format": manifest.FORMAT}
