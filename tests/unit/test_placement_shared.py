"""Results a sweep writes in the lab VM must land in a directory the VM shares with the host."""

from pathlib import Path

import pytest

from linklab import placement
from linklab.errors import UsageError


class FakeVM:
    def __init__(self, rwdirs, running_rwdirs=None):
        self.rwdirs = [Path(d) for d in rwdirs]
        self._running = running_rwdirs

    def running(self):
        return self._running is not None

    def info(self):
        return {"rwdirs": self._running}


def test_paths_inside_shared_dirs_pass(tmp_path, monkeypatch):
    monkeypatch.setattr(placement, "lab_vm", lambda: FakeVM([tmp_path]))
    placement.require_shared_with_vm(tmp_path / "results", "results directory")
    placement.require_shared_with_vm(tmp_path, "results directory")


def test_path_outside_is_refused_with_the_shared_dirs_named(tmp_path, monkeypatch):
    proj = tmp_path / "proj"
    monkeypatch.setattr(placement, "lab_vm", lambda: FakeVM([proj]))
    with pytest.raises(UsageError) as e:
        placement.require_shared_with_vm(tmp_path / "elsewhere", "results directory")
    assert "is not shared with the lab VM" in str(e.value) and str(proj) in e.value.hint
    with pytest.raises(UsageError):  # a sibling whose name merely starts the same is not inside
        placement.require_shared_with_vm(tmp_path / "proj-results", "results directory")


def test_a_running_vm_shares_what_it_was_started_with(tmp_path, monkeypatch):
    # Started from another directory: what counts is the running VM's list, not this cwd.
    monkeypatch.setattr(placement, "lab_vm", lambda: FakeVM([tmp_path / "here"], [str(tmp_path / "there")]))
    placement.require_shared_with_vm(tmp_path / "there" / "results", "results directory")
    with pytest.raises(UsageError):
        placement.require_shared_with_vm(tmp_path / "here" / "results", "results directory")


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
