"""Sweeps on a local Ray cluster (`--cluster local:N`) with the dry workload: no lab, points
sleep. Ray starts in 5-10 s here; each test has its own cluster, stopped when the sweep ends."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from linklab.results.runs import Run

ROOT = Path(__file__).resolve().parents[3]
E1 = ROOT / "experiments" / "e1_bonding_mtu.yaml"
POINTS = 12  # E1 quick: bond_mode (2) x mtu (3) x streams (2), one repetition each


def _sweep(tmp_path: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "LINKLAB_STATE_DIR": str(tmp_path / "state")}
    argv = [sys.executable, "-m", "linklab", "sweep", str(E1), "--quick", "--results", str(tmp_path / "results"), *extra]
    return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def _finish(proc: subprocess.Popen, timeout: float = 150) -> str:
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"the sweep did not end within {timeout} s:\n{out[-3000:]}")
    assert proc.returncode == 0, out[-3000:]
    return out


def _run(tmp_path: Path) -> Run:
    runs = sorted((tmp_path / "results" / "e1_bonding_mtu").iterdir())
    assert len(runs) == 1, runs
    return Run.load(runs[0])


def _descendants(pid: int) -> set[int]:
    """`pid` and every process below it (the sweep, its Ray nodes, their workers and agents)."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        if p not in out:
            out.add(p)
            todo += children.get(p, [])
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _rows_on_disk(tmp_path: Path) -> int:
    return len(list((tmp_path / "results").glob("e1_bonding_mtu/*/points/*/rep*/row.json")))


@pytest.mark.timeout(200)
def test_dry_sweep_on_two_nodes_uses_both_and_records_each_point_once(tmp_path):
    out = _finish(_sweep(tmp_path, "--cluster", "local:2", "--dry-run", "0.5"))
    run = _run(tmp_path)
    keys = [(r["point_id"], r["rep"]) for r in run.rows]
    assert len(keys) == POINTS and len(set(keys)) == POINTS
    assert run.manifest["complete"] and run.manifest["cluster"]["address"] == "local:2"
    nodes = {r["worker_node"] for r in run.rows}
    assert len(nodes) == 2, "both workers measured"
    assert {w["node_id"] for w in run.manifest["workers"]} == nodes
    assert all(w["kernel"] and w["hostname"] and w["placement"] == {"kind": "dry-run"} for w in run.manifest["workers"])
    # each group of points sharing the outermost axis (bond_mode) stayed on one worker
    by_mode = {}
    for r in run.rows:
        by_mode.setdefault(r["bond_mode"], set()).add(r["worker_node"])
    assert all(len(v) == 1 for v in by_mode.values()), by_mode
    assert "running:" in out and " left" in out  # progress: what runs where, and what is left
    # the same command again: complete, nothing redone
    again = _finish(_sweep(tmp_path, "--cluster", "local:2", "--dry-run", "0.5"))
    assert "already complete" in again and len(_run(tmp_path).rows) == POINTS


@pytest.mark.timeout(240)
def test_a_worker_killed_mid_unit_has_its_point_rerun_and_recorded_once_with_the_kill_as_evidence(tmp_path):
    proc = _sweep(tmp_path, "--cluster", "local:2", "--dry-run", "1")
    killed = None
    deadline = time.monotonic() + 120
    while killed is None and time.monotonic() < deadline and proc.poll() is None:
        # a unit's worker process is titled `ray::run_unit` while it runs; kill one once a
        # repetition is recorded, so it dies in the middle of its unit
        if _rows_on_disk(tmp_path) >= 1:
            workers = sorted(p for p in _descendants(proc.pid) if "ray::run_unit" in _cmdline(p))
            if workers:
                os.kill(workers[0], signal.SIGKILL)
                killed = workers[0]
        time.sleep(0.1)
    assert killed is not None, "no unit's worker process was found to kill"
    out = _finish(proc)
    run = _run(tmp_path)
    keys = [(r["point_id"], r["rep"]) for r in run.rows]
    assert len(keys) == POINTS and len(set(keys)) == POINTS, "every point once, none twice"
    assert not [r for r in run.rows if r.get("error")]
    hit = [r for r in run.rows if r.get("worker_failures")]
    assert len(hit) == 1 and hit[0]["worker_failures"] == 1, [(r["point_id"], r.get("worker_failures")) for r in run.rows]
    evidence = hit[0]["worker_failure_evidence"]
    assert re.search(r"WorkerCrashedError|NodeDiedError|ActorDiedError|died", evidence), evidence
    raw = run.path / "points" / hit[0]["point_id"] / "rep1" / "worker_failures.txt"
    assert raw.read_text().strip() == evidence
    assert "measuring it again" in out


@pytest.mark.timeout(200)
def test_local_cluster_listens_on_loopback_only(tmp_path):
    proc = _sweep(tmp_path, "--cluster", "local:2", "--dry-run", "1")
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and _rows_on_disk(tmp_path) < 2 and proc.poll() is None:
            time.sleep(0.2)
        assert _rows_on_disk(tmp_path) >= 2, "the cluster measured nothing"
        ours = _descendants(proc.pid)
        ss = subprocess.run(["ss", "-H", "-l", "-n", "-p", "-t", "-u"], capture_output=True, text=True, check=True).stdout
        for line in ss.splitlines():
            pids = {int(p) for p in re.findall(r"pid=(\d+)", line)}
            if pids & ours:
                seen.append(line)
    finally:
        _finish(proc)
    assert len(seen) >= 3, f"expected the cluster's listening sockets (GCS, raylets...), saw {seen}"
    local = re.compile(r"^\S+\s+\S+\s+\d+\s+\d+\s+(127\.\d+\.\d+\.\d+|\[::1\]|\[::ffff:127\.\d+\.\d+\.\d+\]):\d+\s")
    bad = [line for line in seen if not local.match(line)]
    assert not bad, "listening beyond loopback:\n" + "\n".join(bad)


def test_bad_cluster_address_is_bad_input(tmp_path):
    proc = _sweep(tmp_path, "--cluster", "nowhere", "--dry-run", "0")
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "ray://HOST:PORT" in out
    assert not (tmp_path / "results").exists()
