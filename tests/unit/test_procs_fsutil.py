"""The package's one process stopper and one atomic writer."""

import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

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


def test_terminate_raises_runs_the_callers_cleanup_and_restores_the_handlers():
    # A child in terminate_raises() is sent SIGTERM: its except-clause runs (the lab VM's boot
    # stops its half-booted QEMU there) with SystemExit(143); afterwards TERM's default is back.
    code = textwrap.dedent("""
        import signal, sys, time
        from linklab import procs
        try:
            with procs.terminate_raises():
                print("ready", flush=True)
                time.sleep(30)
        except BaseException as e:
            print("cleaned", type(e).__name__, e.code, signal.getsignal(signal.SIGTERM) == signal.SIG_DFL, flush=True)
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=20)
    assert out.split() == ["cleaned", "SystemExit", "143", "True"], out
    # outside the main thread: a no-op, never an error ("signal only works in main thread")
    before, errors = signal.getsignal(signal.SIGTERM), []

    def enter():
        try:
            with procs.terminate_raises():
                pass
        except Exception as e:
            errors.append(e)
    t = threading.Thread(target=enter)
    t.start()
    t.join(5)
    assert not errors and signal.getsignal(signal.SIGTERM) == before


def test_write_atomic_replaces_and_leaves_no_temp(tmp_path):
    target = tmp_path / "d" / "f.json"
    fsutil.write_json_atomic(target, {"a": 1})
    fsutil.write_json_atomic(target, {"a": 2})
    assert target.read_text() == '{\n "a": 2\n}\n'
    assert [p.name for p in target.parent.iterdir()] == ["f.json"]
    assert fsutil.is_tmp_name(fsutil.tmp_name(target).name)


def test_write_atomic_failure_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "f"
    fsutil.write_atomic(target, "old")
    # Content that is neither text nor bytes is refused before anything is written.
    with pytest.raises(TypeError, match="content must be str or bytes, got int"):
        fsutil.write_atomic(target, 5)
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["f"]
    # A failure after the temp file is written (the rename): the old file stays, the temp goes.
    def fail(src, dst):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(fsutil.os, "replace", fail)
    with pytest.raises(OSError, match="No space left"):
        fsutil.write_atomic(target, "new")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["f"]


# A kill -9 between write_atomic's write and its rename leaves `.<lab>.json.tmp-<pid>` (CI's
# kill test found one, and it then stayed through every later command of that lab).

def _stale_temp(tmp_path, monkeypatch, lab="killlab"):
    from linklab import state
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path / "state"))
    state.labs_dir().mkdir(parents=True)
    stale = state.labs_dir() / f".{lab}.json{fsutil.TMP_MARK}622"
    stale.write_text('{"half": ')
    return state, stale


def test_taking_a_labs_lock_removes_its_temp_files_left_by_a_killed_writer(tmp_path, monkeypatch):
    state, stale = _stale_temp(tmp_path, monkeypatch)
    other = state.labs_dir() / f".otherlab.json{fsutil.TMP_MARK}623"
    other.write_text("x")
    with state.locked("killlab"):
        assert not stale.exists()
    assert other.exists()  # another lab's writer may be alive: only its own lock holder judges


def test_a_temp_file_of_a_lab_whose_lock_is_held_is_left_alone(tmp_path, monkeypatch):
    state, stale = _stale_temp(tmp_path, monkeypatch)
    import fcntl
    with open(state.lock_path("killlab"), "a") as holder:  # a live writer
        fcntl.flock(holder, fcntl.LOCK_EX)
        assert state.remove_stale_locks() == []
        assert stale.exists()
    assert state.remove_stale_locks() == [str(stale), str(state.lock_path("killlab"))]
    assert list(state.labs_dir().iterdir()) == []  # neither temp nor the lock file it needed


def test_json_text_round_trips_with_one_top_level_key_per_line():
    import json

    from linklab.fsutil import json_text

    data = {"b": {"z": [1, 2.5, None], "a": "é"}, "a": True, 3: "int key", "path": Path("/x")}
    text = json_text(data)
    assert json.loads(text) == {"a": True, "b": {"a": "é", "z": [1, 2.5, None]}, "3": "int key", "path": "/x"}
    lines = text.splitlines()
    assert lines[0] == "{" and lines[-1] == "}" and len(lines) == 2 + len(data)
    assert [json.loads("{" + line.rstrip(",") + "}").popitem()[0] for line in lines[1:-1]] == ["3", "a", "b", "path"]
    assert json_text([1, {"b": 1, "a": 2}]) == '[1, {"a": 2, "b": 1}]\n' and json_text({}) == "{}\n"


def test_json_text_writes_each_value_as_json_dumps_does():
    # Its fast paths (ints and strings written directly, one encoder built once) must not change
    # a byte: results written before them are compared with results written after.
    import enum
    import json

    from linklab.fsutil import json_text

    class Level(enum.IntEnum):
        HIGH = 3

    values = {"int": 7, "neg": -3, "big": 10**30, "bool": True, "none": None, "nan": float("nan"),
              "inf": float("-inf"), "float": 1.5e-7, "str": 'q"u\\o\te é ✓', "intenum": Level.HIGH,
              "nested": {"b": [1, "x"], "a": {"d": 1.0}}, "path": Path("/p"), 5: "int key"}
    expected = "{\n" + ",\n".join(f" {json.dumps(str(k))}: {json.dumps(v, sort_keys=True, default=str)}"
                                  for k, v in sorted(values.items(), key=lambda kv: str(kv[0]))) + "\n}\n"
    assert json_text(values) == expected
