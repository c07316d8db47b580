"""The package's one process stopper and one atomic writer."""

import subprocess
import sys
import time

from linklab import fsutil, procs

IGNORES_TERM = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"


def _start(code=IGNORES_TERM):
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True)
    p.stdout.readline()
    return p


def test_stop_kills_what_ignores_term_within_grace():
    p = _start()
    t0 = time.monotonic()
    assert procs.stop([p.pid], grace=0.3) == []
    assert p.wait(5) == -9 and time.monotonic() - t0 < 5


def test_stop_recorded_spares_a_reused_pid():
    p = _start()
    rec = procs.identity(p.pid)
    assert rec["comm"].startswith("python") and procs.is_same(rec)
    assert procs.stop_recorded([{**rec, "start": rec["start"] + 1}]) == []  # another process's start time
    assert p.poll() is None
    assert procs.stop_recorded([rec]) == [rec]
    assert p.wait(5) != 0 and not procs.is_same(rec)


def test_stop_group_that_is_ours_reaches_children_after_the_leader_died():
    p = _start("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
               "print('ready', flush=True); time.sleep(60)")
    procs.stop([p.pid], grace=0.5, group=p.pid, group_is_ours=True)
    p.wait(5)
    time.sleep(0.2)
    assert not procs._group_exists(p.pid) or all(not procs.alive(int(x)) for x in
                                                 subprocess.run(["pgrep", "-g", str(p.pid)], capture_output=True,
                                                                text=True).stdout.split())


def test_write_atomic_replaces_and_leaves_no_temp(tmp_path):
    target = tmp_path / "d" / "f.json"
    fsutil.write_json_atomic(target, {"a": 1})
    fsutil.write_json_atomic(target, {"a": 2})
    assert target.read_text() == '{\n "a": 2\n}\n'
    assert [p.name for p in target.parent.iterdir()] == ["f.json"]
    assert fsutil.is_tmp_name(fsutil.tmp_name(target).name)


def test_write_atomic_failure_keeps_the_old_file(tmp_path):
    target = tmp_path / "f"
    fsutil.write_atomic(target, "old")
    try:
        fsutil.write_atomic(target, 5)
    except TypeError:
        pass
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["f"]
