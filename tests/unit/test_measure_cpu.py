"""CPU accounting against /proc captured around a CPU-bound iperf3 run (tests/data/tools/README.md)."""

import os
import time
from pathlib import Path

import pytest

from linklab.measure.cpu import (
    CpuSampler,
    CpuWindow,
    ProcessCpu,
    ProcessSnapshot,
    ThreadCpu,
    cpu_delta,
    cpu_row,
    parse_pid_stat,
    parse_proc_stat,
    process_cpu,
)

DATA = Path(__file__).resolve().parent.parent / "data" / "tools"


def stat(name):
    return parse_proc_stat((DATA / name).read_text())


def test_parse_proc_stat():
    s = stat("proc_stat_before.txt")
    assert set(s) == {"cpu", "cpu0", "cpu1"}
    assert s["cpu"]["user"] == 10673 and s["cpu"]["system"] == 6590 and s["cpu"]["idle"] == 42348
    assert s["cpu1"]["iowait"] == 307 and s["cpu1"]["steal"] == 20
    with pytest.raises(ValueError):
        parse_proc_stat("intr 1 2 3\n")


def test_cpu_delta_per_core():
    d = cpu_delta(stat("proc_stat_before.txt"), stat("proc_stat_after.txt"))
    # cpu0: user +5, system +184, idle +93, softirq +84 -> 366 ticks
    assert d["cpu0"]["busy"] == pytest.approx(100 * 273 / 366)
    assert d["cpu0"]["softirq"] == pytest.approx(100 * 84 / 366)
    assert d["cpu0"]["system"] == pytest.approx(100 * 184 / 366)
    # cpu1: user +3, system +227, idle +63, softirq +78 -> 371 ticks
    assert d["cpu1"]["busy"] == pytest.approx(100 * 308 / 371)
    # all: user +8, system +411, idle +157, softirq +162 -> 738 ticks
    assert d["cpu"]["busy"] == pytest.approx(100 * 581 / 738)
    assert d["cpu"]["iowait"] == 0 and d["cpu"]["steal"] == 0
    assert sum(d["cpu"][f] for f in ("user", "nice", "system", "irq", "softirq", "steal", "idle", "iowait")) == pytest.approx(100)


def test_cpu_row_keys():
    row = cpu_row(cpu_delta(stat("proc_stat_before.txt"), stat("proc_stat_after.txt")))
    assert row["cpu_all_busy_pct"] == pytest.approx(100 * 581 / 738)
    assert row["cpu1_softirq_pct"] == pytest.approx(100 * 78 / 371)
    assert "cpu0_user_pct" in row and "cpu0_idle_pct" not in row


def test_parse_pid_stat():
    t1 = parse_pid_stat((DATA / "proc_pid_stat_t1.txt").read_text())
    t3 = parse_pid_stat((DATA / "proc_pid_stat_t3.txt").read_text())
    assert (t1.pid, t1.comm, t1.state, t1.utime, t1.stime, t1.num_threads, t1.starttime, t1.processor) == \
        (1609, "iperf3", "R", 0, 98, 1, 30281, 0)
    assert (t3.utime, t3.stime, t3.state) == (2, 292, "S")


def test_comm_with_spaces_and_parentheses():
    line = (DATA / "proc_pid_stat_t1.txt").read_text().replace("(iperf3)", "(a b) (c))")
    t = parse_pid_stat(line)
    assert t.comm == "a b) (c)" and t.stime == 98 and t.processor == 0


def _snap(name, at):
    main = parse_pid_stat((DATA / name).read_text())
    tasks = {t.pid: t for t in map(parse_pid_stat, (DATA / name.replace("pid_stat", "pid_task_stats")).read_text().splitlines())}
    return ProcessSnapshot(main.pid, at, main, tasks, "llcap-a")


def test_process_cpu_between_snapshots():
    # t1 and t3 were taken 2 s apart (`sleep 2`): +2 utime, +194 stime ticks at 100 Hz.
    pc = process_cpu(_snap("proc_pid_stat_t1.txt", 1.0), _snap("proc_pid_stat_t3.txt", 3.0), clk_tck=100)
    assert pc.pct == pytest.approx(98.0)
    assert pc.user_pct == pytest.approx(1.0) and pc.system_pct == pytest.approx(97.0)
    assert len(pc.threads) == 1  # iperf3 3.12: -P 2 from a single thread
    assert pc.busiest.cpu == 0 and pc.busiest.pct == pytest.approx(98.0)
    assert pc.netns == "llcap-a"
    assert pc.row("snd_")["snd_max_thread_cpu"] == 0


def test_process_started_inside_window_counts_from_its_start():
    after = _snap("proc_pid_stat_t3.txt", 30281 / 100 + 3.0)
    pc = process_cpu(None, after, clk_tck=100)
    assert pc.seconds == pytest.approx(3.0)
    assert pc.pct == pytest.approx(100 * 294 / 100 / 3.0)


def test_window_row_groups_by_namespace_and_comm():
    t = lambda pct, cpu: ThreadCpu(1, "iperf3", pct, 0, pct, cpu)  # noqa: E731
    procs = {
        1: ProcessCpu(1, "iperf3", "h1", 4, 90.0, 0, 90, (t(90.0, 1),)),
        2: ProcessCpu(2, "iperf3", "h1", 4, 30.0, 0, 30, (t(30.0, 0),)),
        3: ProcessCpu(3, "iperf3", "h2", 4, 40.0, 0, 40, (t(40.0, 0),)),
    }
    row = CpuWindow(4.0, {}, procs).row()
    assert row["cpu_h1_iperf3_pct"] == 120.0 and row["cpu_h1_iperf3_processes"] == 2
    assert row["cpu_h1_iperf3_max_thread_pct"] == 90.0 and row["cpu_h1_iperf3_max_thread_cpu"] == 1
    assert row["cpu_h2_iperf3_pct"] == 40.0
    labelled = CpuWindow(4.0, {}, procs).row(labels={"h1": "client"})
    assert labelled["cpu_client_iperf3_pct"] == 120.0 and labelled["cpu_h2_iperf3_pct"] == 40.0
    assert not any(k.startswith("cpu_h1_") for k in labelled)


def test_sampler_sees_own_busy_loop():
    """The sampler's figure for this process matches the CPU time the kernel charged it
    (os.times), whatever else the machine is doing: a fixed floor failed under load."""
    before = os.times()
    with CpuSampler(pids=[os.getpid()], interval=0.05) as s:
        end = time.monotonic() + 0.4
        while time.monotonic() < end:
            time.sleep(0)  # still busy, but lets the sampler thread take the GIL (else: 2 samples)
    after = os.times()
    w = s.window
    assert w.seconds >= 0.4 and "cpu" in w.cores and len(w.series) >= 3
    charged = (after.user + after.system - before.user - before.system) / w.seconds * 100
    # Tolerance: a few clock ticks (10 ms = 2.5 points of a 0.4 s window) at each end, plus
    # the thread start/stop outside the sampler's window that os.times brackets.
    assert charged - 12 <= w.processes[os.getpid()].pct <= charged + 3
    assert w.processes[os.getpid()].pct > 0


def test_sampler_by_comm_needs_interval():
    with pytest.raises(ValueError):
        CpuSampler(comms=["iperf3"])


def test_busy_excludes_iowait_and_guest_is_not_counted_twice():
    # Hand-made: the captured window had no iowait or guest time to tell these apart.
    before = parse_proc_stat("cpu  100 0 100 100 0 0 0 0 0 0\n")
    after = parse_proc_stat("cpu  200 0 100 200 100 0 0 0 50 0\n")  # +100 user (50 of it guest), +100 idle, +100 iowait
    d = cpu_delta(before, after)["cpu"]
    assert d["user"] == pytest.approx(100 / 3) and d["idle"] == pytest.approx(100 / 3)
    assert d["iowait"] == pytest.approx(100 / 3)
    assert d["busy"] == pytest.approx(100 / 3)


def test_sampler_keeps_the_side_of_a_process_that_exits(monkeypatch):
    """A zombie's /proc/PID/stat still reads but its /proc/PID/ns/net is gone (it has left its
    namespaces): a sample taken between its exit and its reaping must not move it to "host",
    which emptied cpu_client_iperf3_pct in a CI run."""
    from linklab.measure import cpu

    running = _snap("proc_pid_stat_t1.txt", 1.0)
    exiting = ProcessSnapshot(running.pid, 3.0, _snap("proc_pid_stat_t3.txt", 3.0).process, {}, None)
    snaps = iter([running, exiting])
    monkeypatch.setattr(cpu, "pids_by_comm", lambda comms, proc: [running.pid])
    monkeypatch.setattr(cpu, "read_process", lambda pid, proc: next(snaps, None))
    s = CpuSampler(comms=["iperf3"], interval=60)
    s._snap_processes(initial=True)
    s._snap_processes(initial=False)
    assert s._last[running.pid].netns == "llcap-a"
    assert s._last[running.pid].process.utime == exiting.process.utime  # the exiting sample's times count
