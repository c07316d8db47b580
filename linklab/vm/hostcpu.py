"""The host's view of the lab VM's CPU, for the guest to read: inside the VM a guest cannot see
what else the host's cores did (other VMs, builds), yet that is what disturbs a measurement.

While a command is forwarded into the VM, the host side samples once a second the host's
/proc/stat (all cores) and QEMU's own CPU time (/proc/<pid>/stat, all its threads) and keeps
the last samples in <state dir>/vm/host-cpu.json (shared with the guest). A repetition reads
the samples around its window (window(), pure) and flags it when other work took a large share
of the host, or the hypervisor under the host took its CPU away (steal: the host is itself a
virtual machine, as CI machines are), each with its own flag (linklab/measure/disturbance.py)."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from linklab.fsutil import write_json_atomic
from linklab.measure.cpu import CLK_TCK, parse_pid_stat, parse_proc_stat
from linklab.measure.probes.base import Probe, Repetition

KEEP = 900  # samples (15 minutes at 1 s): longer than any repetition
FILE = "host-cpu.json"  # in the lab VM's directory of the state directory
# Where the host writes the samples, told to every command it forwards: a command in the VM may
# run under another state directory than the VM's own (the kernel test tier's private one).
ENV = "LINKLAB_HOST_CPU_FILE"


def sample(qemu_pid: int, proc: str = "/proc") -> dict[str, Any] | None:
    try:
        with open(f"{proc}/stat") as f:
            st = parse_proc_stat(f.read())
        with open(f"{proc}/{qemu_pid}/stat") as f:
            q = parse_pid_stat(f.read())
    except (OSError, ValueError):
        return None
    c = st["cpu"]
    total = sum(c[k] for k in ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"))
    return {"t": time.time(), "total": total, "idle": c["idle"] + c["iowait"], "steal": c["steal"],
            "qemu": q.utime + q.stime, "ncpu": len(st) - 1, "clk_tck": CLK_TCK}


def window(samples: list[dict[str, Any]], t0: float, t1: float) -> dict[str, float] | None:
    """Host CPU between wall-clock times t0 and t1 from the samples bracketing them (pure):
    host_busy_pct, host_qemu_pct, host_steal_pct (the hypervisor's: time the host's own vCPUs
    wanted to run and could not) and host_other_pct (the rest: other processes and the host's
    kernel), each % of all the host's cores. Samples from before steal was recorded count none."""
    before = [s for s in samples if s["t"] <= t0 + 0.5]
    after = [s for s in samples if s["t"] >= t1 - 0.5]
    if not before or not after:
        return None
    a, b = before[-1], after[0]
    dt = b["total"] - a["total"]
    if dt <= 0 or b["t"] - a["t"] < 0.5 * (t1 - t0):
        return None
    busy = (dt - (b["idle"] - a["idle"])) / dt * 100
    qemu = (b["qemu"] - a["qemu"]) / dt * 100
    steal = (b.get("steal", 0) - a.get("steal", 0)) / dt * 100
    return {"host_busy_pct": round(busy, 1), "host_qemu_pct": round(qemu, 1), "host_steal_pct": round(steal, 1),
            "host_other_pct": round(max(busy - qemu - steal, 0.0), 1), "host_cpus": b["ncpu"]}


class HostCpu(Probe):
    """The host's CPU during a repetition's window, as the host recorded it in `path`: a probe
    of repetitions run in the lab VM (linklab/placement.py supplies it there; a guest cannot see
    the host's other work, and natively there is no host apart from the lab's kernel)."""

    phase = "host_cpu"
    WAIT_S = 2.5  # the host samples once a second: wait for one after the window

    def __init__(self, path: Path):
        self.path = path

    def row(self, rep: Repetition) -> dict[str, Any]:
        return self.between(rep.wall_opened, rep.wall_closed)

    def between(self, t0: float, t1: float) -> dict[str, Any]:
        """window() between wall-clock times t0 and t1, waiting for the sample after t1;
        {"host_busy_pct": None} when the samples do not cover them."""
        deadline = time.monotonic() + self.WAIT_S
        while True:
            got = window(read(self.path), t0, t1)
            if got is not None or time.monotonic() > deadline:
                return got or {"host_busy_pct": None}
            time.sleep(0.1)


def read(path: Path) -> list[dict[str, Any]]:
    try:
        return json.loads(path.read_text()).get("samples", [])
    except (OSError, ValueError):
        return []


class Recorder:
    """Samples in a daemon thread while the forwarded command runs; several may run at once
    (one per forwarded command): each rewrites the file atomically with the samples it read."""

    def __init__(self, path: Path, qemu_pid: int, interval: float = 1.0):
        self.path, self.pid, self.interval = path, qemu_pid, interval
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "Recorder":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()

    def _run(self) -> None:
        while not self.stop.is_set():
            s = sample(self.pid)
            if s is not None:
                samples = [x for x in read(self.path) if x["t"] > s["t"] - KEEP] + [s]
                try:
                    write_json_atomic(self.path, {"pid": self.pid, "host_pid": os.getpid(), "samples": samples[-KEEP:]})
                except OSError:
                    return
            self.stop.wait(self.interval)
