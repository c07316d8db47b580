"""A command on a machine whose cores are N times slower, measured: every thread of the command's
processes (the lab VM's QEMU among them, and what they start) is capped at 1/N of a core, each in
a cgroup of its own (cgroup v1's CFS quota, 10 ms periods). Every CPU the command uses then runs
at 1/N of its speed, while the windows, sleeps and timeouts it asks for stay as long as they are:
what CI takes on a slower machine of the kind, measured rather than scaled from today's figures.
Run it alone on the machine.

    .venv/bin/python bench/slow_machine.py --slower 2 -- bash .ci/run
    .venv/bin/python bench/slow_machine.py --slower 2 --anchor -- .venv/bin/python -m linklab vm run --stop-after -- \\
        .venv/bin/python -m pytest tests/integration/kernel/test_checks.py -k selftest -q

--anchor runs the command uncapped first, then capped: the two side by side in one run.

A thread is capped within POLL_S of appearing; until then it shares the cap of the thread that
started it (a short-lived command mostly runs while its parent waits, so the cap is its own). A
process handed to init (the lab VM once the CLI that booted it exits) stays followed. Only the
command's own processes are touched; everything is put back when it ends.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup/cpu")
PERIOD_US = 10_000
POLL_S = 0.3


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(d))
    return kids


class Capper:
    """Puts every thread of a process tree in a capped cgroup of its own, until stopped."""

    def __init__(self, root_pid: int, slower: float):
        if not (CGROUP / "cpu.cfs_quota_us").exists():
            raise SystemExit(f"bench/slow_machine.py: needs cgroup v1's cpu controller at {CGROUP}")
        self.root_pid, self.quota = root_pid, int(PERIOD_US / slower)
        self.dir = CGROUP / f"linklab-slow-{os.getpid()}"
        self.dir.mkdir()
        self.followed: set[int] = {root_pid}
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self.stopping.wait(POLL_S):
            self.sweep()

    def sweep(self) -> None:
        kids = _children()
        todo = list(self.followed)
        while todo:
            pid = todo.pop()
            for c in kids.get(pid, []):
                if c not in self.followed:
                    self.followed.add(c)
                    todo.append(c)
        for pid in list(self.followed):
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                self.followed.discard(pid)
                continue
            for tid in map(int, tids):
                if not (self.dir / str(tid)).is_dir():  # a group per live thread: none yet, not placed
                    self._place(tid)
        self._prune()

    def _place(self, tid: int) -> None:
        g = self.dir / str(tid)
        try:
            g.mkdir(exist_ok=True)
            (g / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (g / "cpu.cfs_quota_us").write_text(str(self.quota))
            (g / "tasks").write_text(str(tid))
        except OSError:
            pass  # the thread ended meanwhile

    def _prune(self) -> None:
        for g in self.dir.iterdir():
            if g.is_dir() and not (g / "tasks").read_text().strip():
                try:
                    g.rmdir()
                except OSError:
                    pass

    def start(self) -> None:
        self.sweep()
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join()
        for g in (d for d in self.dir.iterdir() if d.is_dir()):
            for tid in (g / "tasks").read_text().split():
                try:
                    (CGROUP / "tasks").write_text(tid)
                except OSError:
                    pass
            g.rmdir()
        self.dir.rmdir()


def run(command: list[str], slower: float) -> tuple[float, int]:
    t0 = time.monotonic()
    proc = subprocess.Popen(command)
    capper = Capper(proc.pid, slower) if slower > 1 else None
    if capper:
        capper.start()
    try:
        rc = proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        rc = proc.wait()
    finally:
        if capper:
            capper.stop()
    return time.monotonic() - t0, rc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--slower", type=float, default=2.0, help="every core this many times slower (default 2)")
    ap.add_argument("--anchor", action="store_true", help="run the command uncapped first, then capped")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="after --: the command")
    a = ap.parse_args()
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not command:
        ap.error("give a command after --")
    results = []
    for slower in ((1.0, a.slower) if a.anchor else (a.slower,)):
        print(f"bench/slow_machine.py: cores x{slower:g} slower: {' '.join(command)}", flush=True)
        wall, rc = run(command, slower)
        results.append((slower, wall, rc))
        print(f"bench/slow_machine.py: cores x{slower:g} slower: {wall // 60:.0f} min {wall % 60:.0f} s, exit {rc}",
              flush=True)
    print("\n| cores | wall | exit |\n|---|---|---|")
    for slower, wall, rc in results:
        print(f"| x{slower:g} slower | {wall // 60:.0f} min {wall % 60:.0f} s | {rc} |")
    sys.exit(max(rc for *_, rc in results))


if __name__ == "__main__":
    main()
