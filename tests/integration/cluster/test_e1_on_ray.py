"""E1 quick on a local Ray cluster of two nodes with real labs: each node's unit runs in that
node's own lab VM (its own state directory), the driver records every repetition here.

Two lab VMs at once on a small machine: ~10 min, and it needs the VM lock for that long, so it
is not part of `make test` (CI's time budget). Run it alone:
    flock -s /tmp/linklab-quiet.lock flock -x /tmp/linklab-vm.lock \
        .venv/bin/python -m pytest tests/integration/cluster -v
Two VMs on two cores disturb each other's figures: this checks correctness, not speed.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from linklab.errors import EXIT_FAILURE, EXIT_INCONCLUSIVE, EXIT_OK
from linklab.interop.common import resolved_lab
from linklab.model.paths import goodput_fraction
from linklab.results.runs import Run

ROOT = Path(__file__).resolve().parents[3]
BASELINE = ROOT / "baselines" / "e1_bonding_mtu-quick-vm-tcg"
TOPOLOGY = ROOT / "topologies" / "bond2.yaml"
# Goodput per busy bond member, as a fraction of one member's: at most 1.03 (nothing exceeds what
# its members carry at the measured MTU; +3 %: iperf3's interval edges), at least 0.5: two lab
# VMs share this machine's two cores, so a CPU-bound point may lose up to half its rate against a
# sweep alone (measured 2026-11-28 on two workers: 0.92-0.99 at 802.3ad, 0.83-0.96 at balance-rr).
LOW, HIGH = 0.5, 1.03


@functools.cache
def member_rate_bps(scale: float) -> float:
    """One bond member's rate in bond2.yaml at a scale (the lab resolved once per scale)."""
    (bond,) = [link for link in resolved_lab(TOPOLOGY, scale=scale).links if link.kind == "bond"]
    (rate,) = {q.rate_bps for v in bond.veths for q in (v.egress_a, v.egress_b)}
    return rate


def member_goodput_bps(scale: float, mtu: int) -> float:
    """One bond member's TCP goodput at an MTU, at the run's scale."""
    return member_rate_bps(scale) * goodput_fraction(mtu)


def _linklab(env, *args, timeout):
    return subprocess.run([sys.executable, "-m", "linklab", *args], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=timeout)


@pytest.mark.timeout(2400)
def test_e1_quick_on_two_workers_with_real_labs(tmp_path):
    env = {**os.environ, "LINKLAB_STATE_DIR": str(tmp_path / "state")}
    res = _linklab(env, "sweep", "experiments/e1_bonding_mtu.yaml", "--quick", "--cluster", "local:2",
                   "--results", str(tmp_path / "results"), timeout=2300)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    (run_dir,) = list((tmp_path / "results" / "e1_bonding_mtu").iterdir())
    run = Run.load(run_dir)
    keys = [(r["point_id"], r["rep"]) for r in run.rows]
    assert len(keys) == 12 and len(set(keys)) == 12, "12 points, none twice"
    assert len({r["worker_node"] for r in run.rows}) == 2, "both workers measured"
    measured = [r for r in run.rows if not r.get("error")]
    assert len(measured) == 12, [r.get("error") for r in run.rows if r.get("error")]
    # Each point's goodput within what its busy members carry; balance-rr sends over both.
    for r in measured:
        one = member_goodput_bps(float(r["scale"]), int(r["mtu"]))
        busy = int(float(r["client_member_tx_active"]))
        bps = float(r["throughput_bps"])
        assert busy == 2 or r["bond_mode"] != "balance-rr", (r["point_key"], busy)
        assert LOW * busy * one <= bps <= HIGH * busy * one, (r["point_key"], bps / one, busy)
    from linklab import kernel
    if kernel.missing_features():  # the units ran in each node's lab VM, as a sweep here would
        assert run.placement.startswith("vm ("), run.placement
    else:
        assert run.placement == "native", run.placement
    assert len(run.manifest["workers"]) == 2 and all(w["placement"] for w in run.manifest["workers"])
    assert (run_dir / "report.html").is_file(), "the sweep's report"
    rep = _linklab(env, "report", str(run_dir), "--quiet", timeout=900)
    assert rep.returncode == 0, rep.stderr[-2000:]
    cmp = _linklab(env, "compare", str(BASELINE), str(run_dir), timeout=300)
    # compared: no difference, a difference (two VMs on two cores may move a metric out of its
    # band) or inconclusive (a busy host); never refused as bad input
    assert cmp.returncode in (EXIT_OK, EXIT_FAILURE, EXIT_INCONCLUSIVE), cmp.stdout[-2000:] + cmp.stderr[-2000:]
    assert "not comparable" not in cmp.stderr
    # every node's lab was taken down, its VM stopped
    for node in (tmp_path / "state" / "cluster").iterdir():
        assert not list((node / "labs").glob("*.json")), f"{node}: a lab left up"
