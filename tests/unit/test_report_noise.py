"""The noise floor (`linklab noise`) and `linklab baseline`'s repetition rule, on copies of the
stored E1 baseline (real rows, lab VM under software emulation) with known deviations."""

import copy
import json
import math
from pathlib import Path
from statistics import NormalDist

import pytest

from linklab.cli import main
from linklab.errors import UsageError
from linklab.report import metrics
from linklab.report.noise import FAMILY_ALPHA, NOISE_FILE, NoiseFloor, judged_pairs, load_reruns, measure, scores
from linklab.report.runs import Run

ROOT = Path(__file__).resolve().parents[2]
E1 = ROOT / "tests" / "data" / "runs" / "e1-quick-1rep"  # E1's stored baseline until 2026-11-25: one repetition, no floor


@pytest.fixture(scope="module")
def e1() -> Run:
    return Run.load(E1)


def rerun(base: Run, factors: dict[int, float], tmp_path: Path | None = None, name: str = "r") -> Run:
    """A copy of the baseline whose throughput at point i is multiplied by factors[i]."""
    rows = copy.deepcopy(base.rows)
    for r in rows:
        r["throughput_bps"] *= factors.get(r["point_index"], 1.0)
    run = Run(base.path, copy.deepcopy(base.manifest), rows)
    if tmp_path is not None:
        d = tmp_path / name
        d.mkdir(parents=True)
        (d / "manifest.json").write_text(json.dumps(run.manifest))
        (d / "rows.json").write_text(json.dumps(rows))
        run = Run.load(d)
    return run


def test_scores_are_each_points_distance_on_the_metrics_scale(e1):
    s = scores(e1, rerun(e1, {0: 1.05, 1: 0.9}))
    thr = s["throughput_mbps"]
    assert len(thr) == 12 and sorted(thr)[-2:] == pytest.approx([0.05, 0.1])
    # cwnd / rate moves inversely: 1/1.05 - 1 and 1/0.9 - 1
    assert sorted(s["cwnd_ms"])[-2:] == pytest.approx([1 - 1 / 1.05, 1 / 0.9 - 1])
    assert all(v == 0 for v in s["retransmits"])


def test_floor_is_the_wider_of_the_largest_score_and_z_rms(e1):
    reruns = [rerun(e1, {i: 1 + 0.01 * ((i + k) % 5 - 2) for i in range(12)}) for k in range(4)]
    nf = measure(e1, reruns)
    got = [abs(0.01 * ((i + k) % 5 - 2) / 1) for k in range(4) for i in range(12)]
    rms = math.sqrt(sum(g * g for g in got) / len(got))
    pairs = judged_pairs(e1)
    z = NormalDist().inv_cdf(1 - FAMILY_ALPHA / pairs / 2)
    f = nf.floors["throughput_mbps"]
    assert f["n"] == 48 and f["max"] == pytest.approx(0.02) and f["rms"] == pytest.approx(rms)
    assert f["floor"] == pytest.approx(max(0.02, z * rms)) and nf.meta["pairs"] == pairs and 100 < pairs < 130
    # A metric that never moved gets a zero floor (its resolution still bounds the band).
    assert nf.floors["retransmits"]["floor"] == 0
    assert nf.floor(metrics.BY_KEY["throughput_mbps"]).source == "measured"


def test_too_few_reruns_or_other_experiments_are_refused(e1):
    with pytest.raises(UsageError, match="at least 3 quiet reruns"):
        measure(e1, [e1, e1])
    e4 = Run.load(ROOT / "baselines" / "e4_jumbo_ipv6-quick-vm-tcg")
    with pytest.raises(UsageError, match="not comparable"):
        measure(e1, [e1, e1, e4])


def test_disturbed_rows_are_left_out(e1):
    r = rerun(e1, {0: 2.0})
    for row in r.rows:
        if row["point_index"] == 0:
            row["flags"] = "host_disturbed"
    assert max(scores(e1, r)["throughput_mbps"]) == 0


def test_noise_cli_writes_beside_the_baseline_and_compare_uses_it(tmp_path, e1, capsys):
    base = tmp_path / "base"
    base.mkdir()
    for f in ("manifest.json", "rows.json"):
        (base / f).write_text((E1 / f).read_text())
    runs = tmp_path / "reruns" / "e1_bonding_mtu"
    for k in range(3):
        rerun(e1, {i: 1 + 0.01 * (k - 1) for i in range(12)}, runs, f"20261201-00000{k}")
        (runs / f"20261201-00000{k}" / "manifest.json").write_text(json.dumps({**e1.manifest, "complete": True}))
    assert len(load_reruns([str(runs)])) == 3
    assert main(["noise", str(base), str(runs)]) == 0
    out = capsys.readouterr().out
    assert "throughput" in out and "fewer than 10 reruns" in out
    nf = NoiseFloor.load(base / NOISE_FILE)
    assert nf.floors["throughput_mbps"]["max"] == pytest.approx(0.01)
    assert main(["compare", str(base), str(E1)]) == 0
    assert "noise floor measured from 3 quiet reruns" in capsys.readouterr().out
    # A new baseline stored over it removes the floor measured against the old one.
    assert main(["baseline", str(E1), str(base), "--min-repetitions", "1"]) == 0
    assert not (base / NOISE_FILE).exists() and "removed" in capsys.readouterr().out


def test_baseline_refuses_a_run_with_fewer_than_5_repetitions(tmp_path, capsys):
    assert main(["baseline", str(E1), str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert "fewer than 5 repetitions" in err and "802.3ad mtu=450 streams=1: 1" in err
    assert not (tmp_path / "b").exists()
    assert main(["baseline", str(E1), str(tmp_path / "b"), "--min-repetitions", "1"]) == 0
    assert json.loads((tmp_path / "b" / "rows.json").read_text()) == json.loads((E1 / "rows.json").read_text())


def test_flags_and_member_classes_seen_in_quiet_reruns_are_not_new(e1):
    # core_saturated comes and goes at E1's 20-stream points: a quiet rerun carrying it at point 1
    # makes it known there (not at point 3); a rerun spreading point 0 over both members makes
    # that known at point 0.
    from linklab.report.compare import compare

    def with_(idx, **kw):
        run = rerun(e1, {})
        for r in run.rows:
            if r["point_index"] == idx:
                r.update(kw)
        return run

    reruns = [with_(1, flags="queue_dropped;core_saturated"), with_(0, client_member_tx_active=2), rerun(e1, {})]
    nf = measure(e1, reruns)
    new = with_(1, flags="queue_dropped;core_saturated")
    assert compare(e1, new).failures and compare(e1, new, noise=nf).ok
    elsewhere = with_(3, flags="queue_dropped;core_saturated")
    assert [c.rule for c in compare(e1, elsewhere, noise=nf).failures] == ["flag"]
    spread = with_(0, client_member_tx_active=2)
    assert [c.rule for c in compare(e1, spread).failures] == ["members"]
    assert compare(e1, spread, noise=nf).ok


def test_baseline_names_the_points_short_of_quiet_repetitions_in_a_real_run(tmp_path, capsys):
    # E1 quick with 5 repetitions on a loaded machine: 12 repetitions stayed host_disturbed.
    assert main(["baseline", str(ROOT / "tests/data/runs/e1-quick-5rep"), str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert "at 6 point(s)" in err and "balance-rr mtu=1500 streams=1: 2" in err and "--min-repetitions" in err


def test_a_lab_is_forgotten_only_when_its_vm_stopped(monkeypatch):
    # What `linklab sweep` (and with it an unattended `linklab noise --record` or `baseline`) and
    # `linklab down` do with a lab recorded in a lab VM that has stopped since.
    from linklab import placement, state

    calls = []
    monkeypatch.setattr(state, "remove", lambda name: calls.append(name))
    monkeypatch.setattr(placement, "lab_is_in_vm", lambda name: name == "bond2")
    for running in (True, False):
        monkeypatch.setattr(placement, "lab_vm", lambda running=running: type("VM", (), {"running": lambda self: running})())
        assert placement.forget_lab_gone_with_vm("bond2") == (not running)
        assert not placement.forget_lab_gone_with_vm("other")
    assert calls == ["bond2"]


def test_baseline_records_at_least_5_repetitions_or_the_experiments_own(monkeypatch, tmp_path):
    from linklab.report import cli as report_cli
    asked = []
    monkeypatch.setattr(report_cli, "_sweep", lambda argv: asked.append(argv) or 1)  # stops before storing
    for exp, quick, want in (("experiments/e1_bonding_mtu.yaml", True, "5"),     # quick: 1 repetition
                             ("experiments/e3_sdn_mtu.yaml", False, "10")):      # the paper's 10
        assert main(["baseline", exp, str(tmp_path / "b")] + (["--quick"] if quick else [])) == 1
        argv = asked.pop()
        assert argv[argv.index("--repetitions") + 1] == want and ("--quick" in argv) == quick
    assert main(["baseline", "experiments/e1_bonding_mtu.yaml", str(tmp_path / "b"), "--repetitions", "3"]) == 2


def test_the_baseline_ci_gates_against_has_5_quiet_repetitions_and_its_own_floor():
    # .ci/run gates with no tolerance only because this holds: a band needs repetitions, and a
    # floor measured against another baseline says nothing about this one.
    from collections import Counter
    stored = ROOT / "baselines" / "e1_bonding_mtu-quick-vm-tcg"
    base = Run.load(stored)
    quiet = Counter(r["point_index"] for r in base.ok_rows() if "host_disturbed" not in str(r.get("flags") or ""))
    assert len(quiet) == 12 and min(quiet.values()) >= 5, quiet
    nf = NoiseFloor.load(stored / NOISE_FILE)
    assert nf.meta["baseline_run"] == base.name and len(nf.meta["reruns"]) >= 10
    assert nf.floor(metrics.BY_KEY["throughput_mbps"]) is not None
