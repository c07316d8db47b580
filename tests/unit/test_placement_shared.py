"""Results a sweep writes in the lab VM reach the host: directly in a directory the VM shares,
through a spool in the state directory anywhere else (linklab/results/spool.py)."""

import json
import os
import threading
from pathlib import Path

import pytest

from linklab import placement
from linklab.errors import StateError
from linklab.results import spool


class FakeVM:
    def __init__(self, rwdirs, running_rwdirs=None):
        self.rwdirs = [Path(d) for d in rwdirs]
        self._running = running_rwdirs

    def running(self):
        return self._running is not None

    def info(self):
        return {"rwdirs": self._running}


def test_paths_inside_shared_dirs_are_shared(tmp_path, monkeypatch):
    monkeypatch.setattr(placement, "lab_vm", lambda: FakeVM([tmp_path]))
    assert placement.is_shared_with_vm(tmp_path / "results") and placement.is_shared_with_vm(tmp_path)


def test_a_path_outside_is_not(tmp_path, monkeypatch):
    monkeypatch.setattr(placement, "lab_vm", lambda: FakeVM([tmp_path / "proj"]))
    assert not placement.is_shared_with_vm(tmp_path / "elsewhere")
    assert not placement.is_shared_with_vm(tmp_path / "proj-results")  # a sibling whose name merely starts the same


def test_a_running_vm_shares_what_it_was_started_with(tmp_path, monkeypatch):
    # Started from another directory: what counts is the running VM's list, not this cwd.
    monkeypatch.setattr(placement, "lab_vm", lambda: FakeVM([tmp_path / "here"], [str(tmp_path / "there")]))
    assert placement.is_shared_with_vm(tmp_path / "there" / "results")
    assert not placement.is_shared_with_vm(tmp_path / "here" / "results")


# ---- the spool -----------------------------------------------------------------------------------

def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def outside(tmp_path, monkeypatch):
    """A state directory the (fake) VM shares, and a results directory it does not."""
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(placement, "lab_vm", lambda: FakeVM([tmp_path / "checkout"], [str(tmp_path / "state")]))
    return tmp_path / "data" / "results"


def test_a_shared_results_directory_is_used_as_it_is(tmp_path, monkeypatch):
    monkeypatch.setattr(placement, "lab_vm", lambda: FakeVM([tmp_path], [str(tmp_path)]))
    with spool.through_vm(tmp_path / "results", "e1", say=lambda *_: None) as where:
        assert where == (tmp_path / "results").resolve()
    assert not (tmp_path / "results").exists()


def test_runs_written_in_the_spool_land_in_the_results_directory_whatever_ends_the_sweep(outside):
    old = outside / "e1" / "20261128-100000"
    _write(old / "manifest.json", "{}")
    _write(old / "points" / "p1" / "rep1" / "row.json", "old")
    said = []
    with pytest.raises(KeyboardInterrupt):
        with spool.through_vm(outside, "e1", say=said.append) as where:
            assert where.parent == Path(os.environ["LINKLAB_STATE_DIR"]) / "results-spool"
            assert placement.is_shared_with_vm(where) and not placement.is_shared_with_vm(outside)
            # Seeded with the experiment's runs: a resume in the VM finds them.
            assert _tree(where / "e1") == _tree(outside / "e1")
            # The sweep in the VM: resumes the old run (a failed attempt set aside, rep2 added), and a new one
            run = where / "e1" / "20261128-100000"
            os.rename(run / "points" / "p1" / "rep1", run / "points" / "p1" / "rep1.failed-1")
            _write(run / "points" / "p1" / "rep1" / "row.json", "again")
            _write(run / "points" / "p1" / "rep2" / "row.json", "two")
            _write(run / "points" / "p1" / ".rep3.tmp-99" / "row.json", "half")  # being written: not a result
            _write(where / "e1" / "20261128-110000" / "manifest.json", '{"new": 1}')
            raise KeyboardInterrupt  # Ctrl-C, or the VM stopped under it: the same copy
    assert _tree(outside / "e1") == {
        "20261128-100000/manifest.json": "{}",
        "20261128-100000/points/p1/rep1.failed-1/row.json": "old",
        "20261128-100000/points/p1/rep1/row.json": "again",
        "20261128-100000/points/p1/rep2/row.json": "two",
        "20261128-110000/manifest.json": '{"new": 1}'}
    assert not spool.spool_for(outside).exists()
    assert any("does not share" in s for s in said) and said[-1] == f"linklab: 4 files of the sweep copied into {outside.resolve()}"


def test_a_spool_left_by_a_killed_sweep_is_copied_first(outside):
    left = spool.spool_for(outside) / "e1" / "20261128-090000" / "manifest.json"
    _write(left, '{"left": 1}')
    with spool.through_vm(outside, "e1", say=lambda *_: None) as where:
        assert (where / "e1" / "20261128-090000" / "manifest.json").read_text() == '{"left": 1}'  # and seeded again
    assert (outside / "e1" / "20261128-090000" / "manifest.json").read_text() == '{"left": 1}'


def test_two_sweeps_into_one_directory_through_the_vm_are_refused(outside):
    entered, release = threading.Event(), threading.Event()

    def first():
        with spool.through_vm(outside, "e1", say=lambda *_: None):
            entered.set()
            release.wait(10)

    t = threading.Thread(target=first)
    t.start()
    try:
        assert entered.wait(10)
        with pytest.raises(StateError, match="another sweep is writing into"):
            with spool.through_vm(outside, "e1", say=lambda *_: None):
                pass
    finally:
        release.set()
        t.join()


def test_a_sweep_in_the_vm_with_results_outside_gets_the_spool_and_the_host_keeps_the_run(outside, monkeypatch, capsys):
    from linklab import state
    from linklab.cli import main
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    state.save({"lab": "bond2", "placement": {"kind": "vm"}, "topology": {}})
    forwarded = []

    def vm_sweep(argv, say, boot=True):  # what the sweep in the VM does: writes a run where it is told
        forwarded.append(argv)
        root = Path(argv[argv.index("--results", argv.index("--results") + 1) + 1])
        _write(root / "e1_bonding_mtu" / "20261128-120000" / "manifest.json", json.dumps({"complete": False}))
        return 1  # and fails: its run is kept all the same

    monkeypatch.setattr(placement, "forward", vm_sweep)
    assert main(["sweep", "experiments/e1_bonding_mtu.yaml", "--quick", "--results", str(outside)]) == 1
    assert forwarded[0][:5] == ["sweep", "experiments/e1_bonding_mtu.yaml", "--quick", "--results", str(outside)]
    assert forwarded[0][5:] == ["--results", str(spool.spool_for(outside))]  # the last one given wins
    assert json.loads((outside / "e1_bonding_mtu" / "20261128-120000" / "manifest.json").read_text()) == {"complete": False}


def test_a_sweep_whose_lab_went_with_its_stopped_vm_builds_it_again(tmp_path, monkeypatch, capsys):
    # `linklab vm stop` leaves the lab recorded as living in the VM; a sweep then forgets it and
    # boots the VM to build it again (it used to stop with "the lab VM is not running", exit 3).
    from linklab import state
    from linklab.cli import main
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    state.save({"lab": "bond2", "placement": {"kind": "vm"}})
    assert placement.lab_is_in_vm("bond2")
    monkeypatch.setattr(placement, "lab_vm", lambda: FakeVM([Path.cwd()]))  # not running
    forwarded = []
    monkeypatch.setattr(placement, "want_vm_for_up", lambda *a: (True, "this kernel lacks bonding"))
    monkeypatch.setattr(placement, "forward_booting", lambda argv, say: forwarded.append(argv) or 1)
    assert main(["sweep", "experiments/e1_bonding_mtu.yaml", "--quick"]) == 1  # the forwarded run's code
    assert forwarded and forwarded[0][0] == "sweep"
    assert state.load("bond2") is None
    assert "lab bond2 lived in the lab VM, which has stopped: the sweep builds it again" in capsys.readouterr().out


def test_what_the_vm_must_write_outside_what_it_shares_is_refused_with_where_it_may_go(tmp_path, monkeypatch):
    from linklab.errors import UsageError
    monkeypatch.setattr(placement, "lab_vm", lambda: FakeVM([tmp_path / "proj"]))
    placement.require_shared_with_vm(tmp_path / "proj" / "out.json", "JSON file")  # shared: no error
    with pytest.raises(UsageError) as e:
        placement.require_shared_with_vm(tmp_path / "elsewhere" / "out.json", "JSON file")
    assert "JSON file" in str(e.value) and str(tmp_path / "proj") in e.value.hint
