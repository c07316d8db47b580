"""CPU load during a measurement window: per core from /proc/stat, per process and thread
from /proc/<pid>/stat and /proc/<pid>/task/<tid>/stat.

/proc/stat is per kernel, not per network namespace: in a lab the sender, the receiver and
every emulated link share one kernel and its cores, so a core at 100 % says nothing about
which side saturated it. Per-process CPU is what attributes load to a side (a namespace's
iperf3), and each thread's last CPU (field 39) says which core it was using.
Softirq time of packet processing is charged to cores, not to processes.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice")
# guest/guest_nice are already inside user/nice: leave them out of the total.
_TOTAL_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
REPORT_FIELDS = ("user", "nice", "system", "irq", "softirq", "steal", "idle", "iowait", "busy")

CLK_TCK = os.sysconf("SC_CLK_TCK")


# --- whole cores -------------------------------------------------------------------------

def parse_proc_stat(text: str) -> dict[str, dict[str, int]]:
    """/proc/stat -> {"cpu": {user: ticks, ...}, "cpu0": {...}, ...}."""
    out: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        parts = line.split()
        if not parts or not parts[0].startswith("cpu"):
            continue
        vals = [int(v) for v in parts[1:]]
        out[parts[0]] = {f: (vals[i] if i < len(vals) else 0) for i, f in enumerate(CPU_FIELDS)}
    if "cpu" not in out:
        raise ValueError("not /proc/stat content: no 'cpu' line")
    return out


def cpu_delta(before: Mapping[str, Mapping[str, int]], after: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, float]]:
    """Percent of each core's time per state between two snapshots, plus busy = not idle/iowait.
    Key "cpu" is all cores together (still 0-100 %, i.e. an average over cores)."""
    out: dict[str, dict[str, float]] = {}
    for name, a in after.items():
        if name not in before:
            continue  # a CPU came online mid-window: no baseline
        d = {f: a[f] - before[name][f] for f in _TOTAL_FIELDS}
        total = sum(d.values())
        if total <= 0:
            out[name] = {f: 0.0 for f in REPORT_FIELDS}
            continue
        pct = {f: 100.0 * d[f] / total for f in _TOTAL_FIELDS}
        pct["busy"] = 100.0 - pct["idle"] - pct["iowait"]
        out[name] = {f: pct[f] for f in REPORT_FIELDS}
    return out


def cpu_row(delta: Mapping[str, Mapping[str, float]], prefix: str = "cpu",
            fields: Iterable[str] = ("busy", "user", "system", "softirq")) -> dict[str, float]:
    """{"cpu_all_busy_pct": .., "cpu0_busy_pct": .., "cpu0_softirq_pct": ..}."""
    row = {}
    for name, pct in delta.items():
        core = "_all" if name == "cpu" else name[3:]
        for f in fields:
            row[f"{prefix}{core}_{f}_pct"] = pct[f]
    return row


def read_proc_stat(proc: str = "/proc") -> dict[str, dict[str, int]]:
    with open(f"{proc}/stat") as fh:
        return parse_proc_stat(fh.read())


# --- processes and threads ---------------------------------------------------------------

@dataclass(frozen=True)
class TaskStat:
    """The fields of /proc/<pid>/stat we use (times in clock ticks)."""

    pid: int  # the tid when read from task/<tid>/stat
    comm: str
    state: str
    utime: int  # field 14
    stime: int  # field 15
    num_threads: int  # field 20
    starttime: int  # field 22, ticks after boot
    processor: int  # field 39: CPU it last ran on


def parse_pid_stat(text: str) -> TaskStat:
    # comm may contain spaces and parentheses: it ends at the last ')'.
    text = text.strip()
    lp, rp = text.index("("), text.rindex(")")
    rest = text[rp + 2:].split()
    f = lambda n: rest[n - 3]  # noqa: E731 -- field numbers as in proc(5)
    return TaskStat(pid=int(text[:lp]), comm=text[lp + 1:rp], state=f(3), utime=int(f(14)), stime=int(f(15)),
                    num_threads=int(f(20)), starttime=int(f(22)), processor=int(f(39)))


@dataclass(frozen=True)
class ProcessSnapshot:
    pid: int
    taken_at: float  # seconds since boot (CLOCK_BOOTTIME, the clock of starttime)
    process: TaskStat
    threads: Mapping[int, TaskStat] = field(default_factory=dict)
    netns: str | None = None


@dataclass(frozen=True)
class ThreadCpu:
    tid: int
    comm: str
    pct: float  # percent of one core
    user_pct: float
    system_pct: float
    cpu: int  # last CPU it ran on


@dataclass(frozen=True)
class ProcessCpu:
    pid: int
    comm: str
    netns: str | None
    seconds: float
    pct: float  # percent of one core; > 100 means more than one core's worth
    user_pct: float
    system_pct: float
    threads: tuple[ThreadCpu, ...]

    @property
    def busiest(self) -> ThreadCpu | None:
        return max(self.threads, key=lambda t: t.pct, default=None)

    def row(self, prefix: str) -> dict[str, float | int | str | None]:
        b = self.busiest
        return {f"{prefix}pct": self.pct, f"{prefix}user_pct": self.user_pct, f"{prefix}system_pct": self.system_pct,
                f"{prefix}threads": len(self.threads), f"{prefix}max_thread_pct": b.pct if b else None,
                f"{prefix}max_thread_cpu": b.cpu if b else None}


def _pct(ticks: int, seconds: float, clk_tck: int) -> float:
    return 100.0 * ticks / clk_tck / seconds if seconds > 0 else 0.0


def process_cpu(before: ProcessSnapshot | None, after: ProcessSnapshot, clk_tck: int = CLK_TCK) -> ProcessCpu:
    """CPU a process used between two snapshots. before=None (or a thread absent from it) means
    it started inside the window: its whole lifetime counts, measured from its starttime.
    Threads that exited before `after` are not in it and their time is lost: snapshot often."""
    def window_start(t: TaskStat, base: TaskStat | None) -> float:
        return before.taken_at if (before and base is not None) else t.starttime / clk_tck

    threads = []
    for tid, t in sorted(after.threads.items()):
        base = before.threads.get(tid) if before else None
        secs = after.taken_at - window_start(t, base)
        du, ds = t.utime - (base.utime if base else 0), t.stime - (base.stime if base else 0)
        threads.append(ThreadCpu(tid, t.comm, _pct(du + ds, secs, clk_tck), _pct(du, secs, clk_tck),
                                 _pct(ds, secs, clk_tck), t.processor))
    p, pb = after.process, (before.process if before else None)
    secs = after.taken_at - window_start(p, pb)
    du, ds = p.utime - (pb.utime if pb else 0), p.stime - (pb.stime if pb else 0)
    return ProcessCpu(pid=after.pid, comm=p.comm, netns=after.netns, seconds=secs,
                      pct=_pct(du + ds, secs, clk_tck), user_pct=_pct(du, secs, clk_tck),
                      system_pct=_pct(ds, secs, clk_tck), threads=tuple(threads))


def boottime() -> float:
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def netns_of(pid: int, proc: str = "/proc", netns_dir: str = "/var/run/netns") -> str | None:
    """Name of the named namespace the process is in (None: the host's or an unnamed one)."""
    try:
        st = os.stat(f"{proc}/{pid}/ns/net")
        for name in os.listdir(netns_dir):
            s = os.stat(os.path.join(netns_dir, name))
            if (s.st_ino, s.st_dev) == (st.st_ino, st.st_dev):
                return name
    except OSError:
        pass
    return None


def read_process(pid: int, proc: str = "/proc") -> ProcessSnapshot | None:
    """Snapshot a process and its threads; None if it has exited."""
    try:
        now = boottime()
        with open(f"{proc}/{pid}/stat") as fh:
            main = parse_pid_stat(fh.read())
        threads = {}
        for tid in os.listdir(f"{proc}/{pid}/task"):
            try:
                with open(f"{proc}/{pid}/task/{tid}/stat") as fh:
                    threads[int(tid)] = parse_pid_stat(fh.read())
            except (FileNotFoundError, ProcessLookupError):
                continue  # thread exited between listdir and open
    except (FileNotFoundError, ProcessLookupError):
        return None
    return ProcessSnapshot(pid, now, main, threads, netns_of(pid, proc))


def pids_by_comm(comms: Iterable[str], proc: str = "/proc") -> list[int]:
    wanted, out = set(comms), []
    for entry in os.listdir(proc):
        if entry.isdigit():
            try:
                with open(f"{proc}/{entry}/comm") as fh:
                    if fh.read().strip() in wanted:
                        out.append(int(entry))
            except OSError:
                continue
    return out


# --- sampler -----------------------------------------------------------------------------

@dataclass(frozen=True)
class CpuWindow:
    seconds: float
    cores: dict[str, dict[str, float]]  # cpu_delta() over the whole window
    processes: dict[int, ProcessCpu]
    series: tuple[tuple[float, dict[str, dict[str, float]]], ...] = ()  # (seconds from start, cpu_delta of that step)

    def by_side(self) -> dict[tuple[str, str], list[ProcessCpu]]:
        """Processes grouped by (namespace or "host", comm): a lab side and its program."""
        groups: dict[tuple[str, str], list[ProcessCpu]] = {}
        for pc in self.processes.values():
            groups.setdefault((pc.netns or "host", pc.comm), []).append(pc)
        return groups

    def row(self, prefix: str = "cpu", labels: Mapping[str, str] | None = None) -> dict[str, float | int | str | None]:
        """Core keys from cpu_row(), then per (side, comm) — stable across runs, unlike pids:
        {prefix}_{side}_{comm}_pct (summed over its processes, % of one core),
        _max_thread_pct, _max_thread_cpu (the core the busiest thread last ran on), _processes.
        side is labels[netns] (e.g. "client") when given, else the namespace's name."""
        row: dict[str, float | int | str | None] = dict(cpu_row(self.cores, prefix))
        labels = labels or {}
        for (ns, comm), pcs in sorted(self.by_side().items(), key=lambda kv: (labels.get(kv[0][0], kv[0][0]), kv[0][1])):
            ns = labels.get(ns, ns)
            threads = [t for pc in pcs for t in pc.threads]
            top = max(threads, key=lambda t: t.pct, default=None)
            key = f"{prefix}_{ns}_{comm}_"
            row[key + "pct"] = sum(pc.pct for pc in pcs)
            row[key + "max_thread_pct"] = top.pct if top else None
            row[key + "max_thread_cpu"] = top.cpu if top else None
            row[key + "processes"] = len(pcs)
        return row


class CpuSampler:
    """Snapshots before/after a measurement window; with interval, also samples every
    `interval` seconds in a thread, which gives a per-core time series and catches processes
    (by pid or by comm, e.g. "iperf3") that start and exit inside the window.

        with CpuSampler(comms=["iperf3"], interval=1.0) as s:
            runner.run(client.argv(), netns="h1", timeout=...)
        window = s.window
    """

    def __init__(self, pids: Iterable[int] = (), comms: Iterable[str] = (), interval: float | None = None,
                 proc: str = "/proc"):
        self.pids, self.comms, self.interval, self.proc = set(pids), tuple(comms), interval, proc
        if self.comms and not interval:
            raise ValueError("watching processes by comm needs an interval (they may start and exit inside the window)")
        self._first: dict[int, ProcessSnapshot | None] = {}
        self._last: dict[int, ProcessSnapshot] = {}
        self._series: list[tuple[float, dict[str, dict[str, float]]]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.window: CpuWindow | None = None

    def _snap_processes(self, initial: bool) -> None:
        pids = self.pids | (set(pids_by_comm(self.comms, self.proc)) if self.comms else set())
        for pid in pids:
            snap = read_process(pid, self.proc)
            if snap is None:
                continue
            seen = self._last.get(pid)
            if snap.netns is None and seen is not None and seen.netns is not None:
                # An exiting process (a zombie until its parent reaps it) has let go of its
                # namespaces, /proc/PID/ns/net is gone, while its stat still reads: it stays on the
                # side it ran on (else its CPU lands under "host" and the side's column is empty).
                snap = replace(snap, netns=seen.netns)
            if pid not in self._first:
                # Seen only after start: None baseline = count from the process's own start.
                self._first[pid] = snap if initial else None
            self._last[pid] = snap

    def start(self) -> CpuSampler:
        self._t0 = boottime()
        self._stat0 = self._prev = read_proc_stat(self.proc)
        self._snap_processes(initial=True)
        if self.interval:
            self._thread = threading.Thread(target=self._loop, name="linklab-cpu-sampler", daemon=True)
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._step()

    def _step(self) -> None:
        now = read_proc_stat(self.proc)
        self._series.append((boottime() - self._t0, cpu_delta(self._prev, now)))
        self._prev = now
        self._snap_processes(initial=False)

    def stop(self) -> CpuWindow:
        self._stop.set()
        if self._thread:
            self._thread.join()
        end = read_proc_stat(self.proc)
        self._snap_processes(initial=False)
        procs = {pid: process_cpu(self._first.get(pid), last) for pid, last in self._last.items()}
        self.window = CpuWindow(boottime() - self._t0, cpu_delta(self._stat0, end), procs, tuple(self._series))
        return self.window

    def __enter__(self) -> CpuSampler:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
