"""A lab VM whose kernel locked up is recognised from its console, so a command waiting on it fails
within seconds instead of waiting until its caller's limit (a CI run hung 20 min on one)."""

import os
from pathlib import Path

import pytest

from linklab.vm import launcher
from linklab.vm.launcher import GuestLockedUp, LabVM, kernel_lockup

# Captured from the lab VM (QEMU TCG, Debian 6.1) when a container test's runc and another process
# spun in the slab allocator: reports at 26 ... 104 s, then the same CPUs still stuck past 1000 s.
CONSOLE = (Path(__file__).resolve().parents[1] / "data/tools/console_soft_lockup_tcg.txt").read_text()
FIRST_MINUTES = CONSOLE[:CONSOLE.index("stuck for 104s") + 200]


def test_a_cpu_stuck_for_minutes_is_a_lockup_and_tens_of_seconds_is_not():
    assert kernel_lockup(FIRST_MINUTES) is None  # 26-104 s: a loaded host can show that much
    assert kernel_lockup(CONSOLE) == "watchdog: BUG: soft lockup - CPU#1 stuck for 1244s! [exe:398]"
    assert kernel_lockup(FIRST_MINUTES, limit_s=100) == "watchdog: BUG: soft lockup - CPU#0 stuck for 104s! [runc:390]"
    assert kernel_lockup("rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:\n") is None


def test_waiting_on_the_vm_raises_once_its_console_reports_a_lockup_after_the_wait_began(tmp_path, monkeypatch):
    monkeypatch.setattr(launcher, "LOCKUP_CHECK_S", 0.0)
    vm = LabVM(tmp_path, rwdirs=[tmp_path])
    vm.dir.mkdir(parents=True)
    # A lockup reported before this wait began (an earlier command's) is not this wait's concern.
    vm.console_log.write_text(CONSOLE)
    alive = vm._alive_check({"pid": os.getpid()})
    assert alive() is True
    with open(vm.console_log, "a") as f:
        f.write("[ 1500.1] watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [python3:77]\n")
    assert alive() is True
    with open(vm.console_log, "a") as f:
        f.write("[ 1600.1] watchdog: BUG: soft lockup - CPU#0 stuck for 130s! [python3:77]\n")
    with pytest.raises(GuestLockedUp, match=r"locked up \(BUG: soft lockup - CPU#0 stuck for 130s! \[python3:77\]\)"):
        alive()
    # A VM that is gone is simply not alive.
    assert vm._alive_check({"pid": 2**22 + 12345})() is False
