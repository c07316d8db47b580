"""linklab compare, the regression gate: every rule on real stored runs (baselines/ and
tests/data/runs/, lab VM under software emulation), the band arithmetic on hand-made values,
and each row of issue 19's table (a change injected into a copy of the stored E1 baseline)."""

import copy
import json
import math
from pathlib import Path

import pytest

from linklab.cli import main
from linklab.errors import UsageError
from linklab.measure.stats import t_quantile
from linklab.report import bands, metrics
from linklab.report.compare import FAIL, HARMLESS, NOT_JUDGED, WITHIN, as_json, compare, render
from linklab.report.noise import NoiseFloor
from linklab.report.runs import Run

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "runs"
E1 = ROOT / "tests" / "data" / "runs" / "e1-quick-1rep"  # E1's stored baseline until 2026-11-25: one repetition, no floor
THR = metrics.BY_KEY["throughput_mbps"]


@pytest.fixture(scope="module")
def e1() -> Run:
    return Run.load(E1)


def changed(run: Run, fn=None, rows=None) -> Run:
    """A copy of a stored run with `fn(row)` applied to each row (or other rows)."""
    new_rows = copy.deepcopy(run.rows if rows is None else rows)
    for r in new_rows:
        if fn:
            fn(r)
    return Run(run.path, copy.deepcopy(run.manifest), new_rows)


def scale_throughput(f):
    def fn(r):
        for k in ("throughput_bps", "sent_bytes", "received_bytes"):
            r[k] *= f
    return fn


def failed_rules(res) -> set[tuple[str, str, str]]:
    return {(c.rule, c.point, c.what) for c in res.failures}


def write(tmp_path, run: Run, name: str) -> Path:
    d = tmp_path / name
    d.mkdir()
    (d / "manifest.json").write_text(json.dumps(run.manifest))
    (d / "rows.json").write_text(json.dumps(run.rows))
    return d


# -- the band arithmetic ---------------------------------------------------------------------

def test_prediction_interval_on_the_metrics_scale():
    s = bands.sample(THR, [80.0, 100.0, 90.0])            # sd 10
    half = t_quantile(1 - bands.PREDICTION_ALPHA / 2, 2) * 10 * math.sqrt(1 / 3 + 1 / 2)
    assert bands.prediction_half(s, 2) == pytest.approx(half)
    b = bands.band(THR, s, 2, bands.Floor(0.05, "measured"))
    assert b.source == "prediction" and b.bounds(THR) == pytest.approx((90 - half, 90 + half))
    assert bands.prediction_half(bands.sample(THR, [90.0]), 1) == 0  # one repetition: no spread to predict from


def test_log_scale_band_is_multiplicative_and_floors_apply_on_it():
    rt = metrics.BY_KEY["retransmits"]                     # log(x + 10)
    s = bands.sample(rt, [90.0, 90.0, 90.0])               # no spread: the floor sets the band
    b = bands.band(rt, s, 1, bands.Floor(math.log(2), "measured"))
    lo, hi = b.bounds(rt)
    assert (lo, hi) == pytest.approx((100 / 2 - 10, 100 * 2 - 10))   # (90+10)/2-10, (90+10)*2-10
    assert b.source == "noise floor (measured)"
    # Declared floor of retransmits: x3 or 50 segments, whichever is wider, above the mean.
    d = bands.declared_floor(rt, 90.0)
    assert bands.band(rt, s, 1, d).bounds(rt)[1] == pytest.approx(90 + 2.0 * 90)


def test_rel_band_floor_tolerance_and_resolution():
    s = bands.sample(THR, [100.0, 100.0])
    assert bands.band(THR, s, 1, bands.Floor(0.04, "measured")).bounds(THR) == pytest.approx((96, 104))
    widened = bands.band(THR, s, 1, bands.Floor(0.04, "measured"), tolerance=0.35)
    assert widened.source == "tolerance" and widened.bounds(THR) == pytest.approx((65, 135))
    tiny = bands.sample(THR, [0.5, 0.5])                 # 4 % of 0.5 Mbit/s is below the 0.1 resolution
    assert bands.band(THR, tiny, 1, bands.Floor(0.04, "measured")).source == "resolution"


def test_every_metric_states_its_scale_and_sides():
    for m in metrics.METRICS:
        assert m.scale in metrics.SCALES and m.sides in metrics.SIDES, m.key
        assert (m.sides == "both") == (not m.sides_why), f"{m.key}: a one-sided metric says why, only it"
        assert m.judged or not m.table, m.key
    assert {m.key for m in metrics.METRICS if m.sides != "both"} == {"busiest_core_pct", "sender_cpu_pct",
                                                                      "receiver_cpu_pct"}


# -- issue 19's table: a change injected into a copy of the stored E1 baseline ---------------

def _spread(r):
    if r["client_member_tx_active"] == 1:  # 802.3ad: one stream's bytes on one member -> both
        r.update(client_member_tx_active=2, client_member_tx_max_share=0.5)


TABLE = [("none", None, 0), ("throughput -25 %", scale_throughput(0.75), 1),
         ("throughput +30 % (a shaper that stopped limiting)", scale_throughput(1.30), 1),
         ("one point missing", "drop", 1), ("802.3ad spread over both members", _spread, 1),
         ("throughput -50 %", scale_throughput(0.5), 1)]


@pytest.mark.parametrize("what,fn,want", TABLE, ids=[t[0] for t in TABLE])
def test_issue_table_row_as_ci_gates_it(tmp_path, e1, capsys, what, fn, want):
    if fn == "drop":
        new = changed(e1, rows=[r for r in e1.rows if r["point_index"] != 11])
    else:
        new = changed(e1, fn)
    code = main(["compare", str(E1), str(write(tmp_path, new, "new"))])
    out = capsys.readouterr().out
    assert code == want, out
    assert ("result: pass" in out) == (want == 0)


def test_tolerance_widens_bands_but_never_structure(e1):
    # --tolerance 35 (a baseline from another machine): -25 % passes, -50 % and the structural
    # rows still fail.
    assert compare(e1, changed(e1, scale_throughput(0.75)), tolerance=0.35).ok
    assert not compare(e1, changed(e1, scale_throughput(0.5)), tolerance=0.35).ok
    res = compare(e1, changed(e1, _spread), tolerance=0.35)
    assert {c.rule for c in res.failures} == {"members", "band"}
    assert {c.what for c in res.failures if c.rule == "band"} == {"busiest bond member's share (of bytes)"}
    gone = compare(e1, changed(e1, rows=[r for r in e1.rows if r["point_index"] != 3]), tolerance=0.35)
    assert [(c.rule, c.point) for c in gone.failures] == [("missing", "802.3ad mtu=1500 streams=20")]


# -- each rule on real stored runs -----------------------------------------------------------

def test_two_sided_by_default_one_sided_cpu(e1):
    up = compare(e1, changed(e1, scale_throughput(1.3)))
    assert any(c.what == THR.title and c.direction == "up" for c in up.failures)
    # CPU: more is a failure, less (the same throughput) harmless.
    def cpu(f):
        return lambda r: r.update(cpu_client_iperf3_pct=r["cpu_client_iperf3_pct"] * f)
    more = compare(e1, changed(e1, cpu(3.0)))
    assert {c.what for c in more.failures} == {"sender iperf3 CPU (% of a core)"}
    less = compare(e1, changed(e1, cpu(0.2)))
    assert less.ok and any(c.verdict == HARMLESS for c in less.checks)


def test_failure_names_point_metric_baseline_new_band_and_rule(e1):
    res = compare(e1, changed(e1, scale_throughput(0.5)))
    c = next(c for c in res.failures if c.what == THR.title and c.point == "802.3ad mtu=450 streams=1")
    text = render(res)
    line = next(line for line in text.splitlines() if "802.3ad mtu=450 streams=1" in line and "throughput" in line)
    lo, hi = c.bounds()
    assert line.split()[0] == "band"
    for part in ("n=1 mean 85.5 sd -", "42.7 (n=1) (-50 %)", f"[{lo:.1f}, {hi:.1f}] declared floor"):
        assert part in line, line
    assert "REGRESSION" in text and "declared floors" in text
    j = as_json(res)
    f = next(x for x in j["failures"] if x["point"] == c.point and x["metric"] == "throughput_mbps")
    assert f["rule"] == "band" and f["baseline_n"] == 1 and f["band_low"] == pytest.approx(lo) and f["new_mean"] < lo


def test_missing_failed_and_disturbed_points_fail_unless_allowed(e1):
    def on(idx, **kw):
        return lambda r: r.update(**kw) if r["point_index"] == idx else None

    cases = {"failed": on(0, error="iperf3: control socket closed"),
             "preflight": on(1, preflight_ok=False, error="pre-flight failed: h1:bond0 LACP not aggregated"),
             "disturbed": on(2, flags="host_disturbed", flag_evidence="other work 40% of 2 cores")}
    for rule, fn in cases.items():
        res = compare(e1, changed(e1, fn))
        assert [c.rule for c in res.failures] == [rule], render(res)
        lenient = compare(e1, changed(e1, fn), allow_missing=True)
        assert lenient.ok == (rule != "preflight"), render(lenient)  # pre-flight state is structure
    res = compare(e1, changed(e1, rows=e1.rows[1:]), allow_missing=True)
    assert res.ok and [(c.rule, c.verdict) for c in res.checks if c.rule == "missing"] == [("missing", NOT_JUDGED)]


def test_preflight_state_must_match_both_ways(e1):
    def fail_pf(r):
        if r["point_index"] == 4:
            r.update(preflight_ok=False, error="pre-flight failed: don't-fragment ping of 9173 bytes got no reply")
    base_failed = changed(e1, fail_pf)
    # The baseline's pre-flight failed here; the new run's passes: the state changed.
    res = compare(base_failed, e1)
    assert [(c.rule, c.point) for c in res.failures] == [("preflight", "802.3ad mtu=9200 streams=1")]
    # Both failed the same way: nothing changed.
    assert compare(base_failed, changed(base_failed)).ok


def test_structure_path_mtu_new_flag_and_members(e1):
    def at(idx, **kw):
        return lambda r: r.update(**kw) if r["point_index"] == idx else None

    assert [c.rule for c in compare(e1, changed(e1, at(4, path_mtu=1500))).failures] == ["path_mtu"]
    res = compare(e1, changed(e1, at(0, flags="emulator_rtt", flag_evidence="idle RTT 1.9 ms, asked 0.3")))
    assert [(c.rule, c.what) for c in res.failures] == [("flag", "emulator_rtt")]
    assert "idle RTT 1.9 ms" in render(res)
    # A flag the baseline's point carries is not new; a flag gone is harmless.
    flagged = next(r for r in e1.rows if r["flags"] == "queue_dropped")
    assert compare(e1, changed(e1, lambda r: r.update(flags="") if r is not None else None)).ok
    assert compare(e1, changed(e1, at(flagged["point_index"], flags="queue_dropped"))).ok
    # balance-rr spread over both members; one member carrying it all is a structural change.
    one = compare(e1, changed(e1, at(6, client_member_tx_active=1, server_member_rx_active=1)))
    assert {(c.rule, c.what) for c in one.failures} == {("members", "bond members (client tx)"),
                                                        ("members", "bond members (server rx)")}


def test_baseline_disturbed_repetitions_are_left_out_and_an_all_disturbed_point_fails(e1):
    base = changed(e1, lambda r: r.update(flags="host_disturbed") if r["point_index"] == 5 else None)
    res = compare(base, e1)
    assert [(c.rule, c.point) for c in res.failures] == [("baseline", "802.3ad mtu=9200 streams=20")]
    assert compare(base, e1, allow_missing=True).ok


def test_real_run_with_slower_links_fails_and_more_throughput_fails_too(capsys):
    # The same E1 quick sweep on a lab with the bond's rate halved: throughput leaves the band.
    assert main(["compare", str(DATA / "e1-quick"), str(DATA / "e1-quick-halfrate")]) == 1
    out = capsys.readouterr().out
    assert "REGRESSION" in out and "lab overrides differ" in out and "throughput (Mbit/s)" in out
    # Two E2 quick runs under contention: the second, on a less loaded machine, doubled its
    # throughput at three points. Two-sided: a gate that let +100 % pass would miss a shaper
    # that stopped limiting.
    res = compare(Run.load(DATA / "e2-quick-a"), Run.load(DATA / "e2-quick-b"))
    up = [c for c in res.failures if c.what == THR.title]
    assert len(up) == 3 and all(c.direction == "up" and c.change_pct > 100 for c in up)


def test_points_matched_by_parameters_not_order(e1):
    rev = changed(e1, rows=list(reversed(e1.rows)))
    for i, r in enumerate(rev.rows):
        r["point_index"], r["point_id"] = i, f"other-{i}"
    res = compare(e1, rev)
    assert res.ok and len(res.deltas) == len(compare(e1, e1).deltas)


def test_refuses_different_experiment_scale_placement_unless_told(e1, capsys):
    e4 = ROOT / "baselines" / "e4_jumbo_ipv6-quick-vm-tcg"
    assert main(["compare", str(DATA / "e1-quick"), str(e4)]) == 2
    assert "not comparable: experiment" in capsys.readouterr().err
    native = changed(e1)
    native.manifest["placement"] = {"kind": "native"}
    with pytest.raises(UsageError, match="not comparable: placement"):
        compare(e1, native)
    assert compare(e1, native, allow={"placement"}).ok
    other = changed(e1, rows=[dict(r, mtu=1) for r in e1.rows])
    with pytest.raises(UsageError, match="no point of the new run matches"):
        compare(e1, other)


def test_compare_cli_bad_input_is_exit_2(tmp_path, capsys):
    assert main(["compare", str(tmp_path / "nothing"), str(DATA / "e1-quick")]) == 2
    assert "no results found" in capsys.readouterr().err
    assert main(["compare", str(E1), str(DATA / "e1-quick"), "--noise", str(tmp_path / "none.json")]) == 2


def test_measured_noise_floor_sets_the_bands(tmp_path, e1):
    nf = NoiseFloor(None, {"throughput_mbps": {"scale": "rel", "floor": 0.04, "n": 120, "max": 0.03, "rms": 0.01,
                                               "median": 0.01}}, {"experiment": "e1", "reruns": ["a"] * 10})
    res = compare(e1, changed(e1, scale_throughput(0.94)), noise=nf)
    thr = [c for c in res.checks if c.what == THR.title]
    assert all(c.band.source == "noise floor (measured)" and c.verdict == FAIL for c in thr)
    assert compare(e1, changed(e1, scale_throughput(0.97)), noise=nf).ok
    path = nf.save(tmp_path / "noise.json")
    assert NoiseFloor.load(path).floor(THR) == bands.Floor(0.04, "measured")
    # Measured on another scale than metrics.py now uses: not applied.
    assert NoiseFloor(None, {"throughput_mbps": {"scale": "log", "floor": 1}}).floor(THR) is None
    assert all(c.verdict == WITHIN for c in compare(e1, e1, noise=nf).checks)


# -- a real baseline with 5 repetitions per point (tests/data/runs/e1-quick-5rep) --------------

@pytest.fixture(scope="module")
def e1x5() -> Run:
    return Run.load(DATA / "e1-quick-5rep")


def floor_of(**floors) -> NoiseFloor:
    return NoiseFloor(None, {k: {"scale": metrics.BY_KEY[k].scale, "floor": v} for k, v in floors.items()},
                      {"experiment": "e1", "reruns": []})


def one_rep(run: Run, rep: int) -> Run:
    return changed(run, rows=[r for r in run.rows if r["rep"] == rep])


def test_prediction_interval_from_five_quiet_repetitions(e1x5):
    # 802.3ad, MTU 1500, one stream: 95.3-95.6 Mbit/s in 5 quiet repetitions. With a 0.1 % floor
    # the band is the prediction interval for one new repetition, t(0.995, 4) = 4.6 sd wide each
    # way; the baseline's own repetitions lie inside it, 2 % less does not.
    nf = floor_of(throughput_mbps=0.001)
    point = "802.3ad mtu=1500 streams=1"
    for rep in range(1, 6):
        res = compare(e1x5, one_rep(e1x5, rep), noise=nf)
        c = next(c for c in res.checks if c.point == point and c.what == THR.title)
        assert c.band.source == "prediction" and c.base.n == 5 and c.verdict == WITHIN, (rep, c.new.mean)
    half = t_quantile(0.995, 4) * c.base.sd_y * math.sqrt(1 / 5 + 1)
    assert c.band.half == pytest.approx(half) and 0.3 < half < 1.5
    slower = changed(one_rep(e1x5, 3), lambda r: r.update(throughput_bps=r["throughput_bps"] * 0.98)
                     if r["point_key"] == "bond_mode=802.3ad,mtu=1500,streams=1" else None)
    bad = compare(e1x5, slower, noise=nf)
    assert [(f.point, f.what) for f in bad.failures if f.rule == "band"] == [(point, THR.title)], render(bad)


def test_disturbed_repetitions_are_left_out_of_the_band_and_fail_in_the_new_run(e1x5):
    # 802.3ad, MTU 450, one stream: 85.5, 85.4, 84.8 quiet; 61.6 and 66.7 measured while other
    # work held the host (host_disturbed, after the sweep measured each once more).
    res = compare(e1x5, one_rep(e1x5, 1), noise=floor_of(throughput_mbps=0.02))
    c = next(c for c in res.checks if c.point == "802.3ad mtu=450 streams=1" and c.what == THR.title)
    assert c.base.n == 3 and c.base.mean == pytest.approx(85.2, abs=0.1) and c.verdict == WITHIN
    # The run against itself: every point with a disturbed repetition fails `disturbed`, nothing else.
    self_cmp = compare(e1x5, e1x5)
    disturbed = {p for p in {r["point_key"] for r in e1x5.rows if "host_disturbed" in r["flags"]}}
    assert {c.rule for c in self_cmp.failures} == {"disturbed"} and len(self_cmp.failures) == len(disturbed) == 6
    assert compare(e1x5, e1x5, allow_missing=True).ok


def test_each_flag_gets_its_own_evidence():
    from linklab.report.points import row_flags
    row = {"flags": "core_saturated;queue_dropped;host_disturbed",
           "flag_evidence": "cpu0 87% busy (>= 85%); dropped h1/bond0-m0 bfifo 10:: 402 (0.31%); host 99% busy"}
    assert row_flags(row) == {"core_saturated": "cpu0 87% busy (>= 85%)",
                              "queue_dropped": "dropped h1/bond0-m0 bfifo 10:: 402 (0.31%)",
                              "host_disturbed": "host 99% busy"}
    # Evidence that does not split one part per flag stays whole, on the first.
    assert row_flags({"flags": "a;b", "flag_evidence": "x"}) == {"a": "x", "b": ""}


def test_a_point_with_nothing_measured_fails_even_where_the_baseline_had_a_failure(e1x5):
    # The baseline lost one repetition of a point to an iperf3 error; the new run lost all of it.
    base = changed(e1x5, lambda r: r.update(error="iperf3: interrupted") if r["rep"] == 2 and r["point_index"] == 2
                   else None)
    new = changed(e1x5, lambda r: r.update(error="iperf3: unable to connect") if r["point_index"] == 2 else None)
    res = compare(base, new, allow_missing=False)
    assert ("failed", "802.3ad mtu=1500 streams=1", "repetitions") in failed_rules(res)
    # One failed repetition in each: the baseline had that too, not a change.
    one = changed(e1x5, lambda r: r.update(error="iperf3: interrupted") if r["rep"] == 4 and r["point_index"] == 2
                  else None)
    assert ("failed", "802.3ad mtu=1500 streams=1", "repetitions") not in failed_rules(compare(base, one))


# -- another machine: CPU judged relative to the run's level (linklab/report/machine.py) --------

# e1base (the stored E1 quick baseline and its noise floor): a fixture in tests/unit/conftest.py.

def machine(cpu: float, points: dict | None = None, thr: dict | None = None):
    """A row change: every CPU figure x cpu (x points[point_id prefix] where given), and
    throughput x thr[point_id prefix] where given."""
    def fn(r):
        f = next((v for k, v in (points or {}).items() if r["point_id"].startswith(k)), cpu)
        for k in list(r):
            if (k.startswith("cpu") and k.endswith("_busy_pct") and k[3:4].isdigit()) or k in (
                    "cpu_client_iperf3_pct", "cpu_server_iperf3_pct"):
                if isinstance(r[k], (int, float)):
                    r[k] = r[k] * f
        t = next((v for k, v in (thr or {}).items() if r["point_id"].startswith(k)), 1.0)
        scale_throughput(t)(r)
    return fn


def test_a_slower_machine_passes_with_its_cpu_level_named(e1base):
    # x1.45 CPU everywhere and -5 % at the point the emulator's CPU limits: what a CI machine measured.
    base, nf = e1base
    res = compare(base, changed(base, machine(1.45, thr={"p007": 0.95})), noise=nf)
    assert res.ok, render(res)
    level = [c for c in res.checks if c.rule == "cpu_level"]
    assert len(level) == 1 and level[0].verdict == WITHIN and "x1.45" in level[0].new_text
    assert any(n.startswith("another machine: its CPU is x1.45") for n in res.notes)
    # The measured figure and the one judged are both shown.
    busiest = next(c for c in res.checks if c.what == "busiest core (%)")
    assert " / 1.45 = " in render(res, show_all=True) and busiest.level == pytest.approx(1.45)


def test_one_point_costlier_than_the_machine_explains_fails(e1base):
    base, nf = e1base
    # 1.65x above the level at one point: what another machine measured with nothing changed.
    assert compare(base, changed(base, machine(1.33, points={"p005": 1.33 * 1.65})), noise=nf).ok
    res = compare(base, changed(base, machine(1.45, points={"p005": 1.45 * 3.0})), noise=nf)
    assert {c.point for c in res.failures} == {"802.3ad mtu=9200 streams=20"}, render(res)
    assert {c.what for c in res.failures} >= {"busiest core (%)"}


def test_cpu_beyond_what_machines_differ_by_fails_its_level(e1base):
    base, nf = e1base
    res = compare(base, changed(base, machine(3.3)), noise=nf)
    assert [c.rule for c in res.failures] == ["cpu_level"], render(res)
    assert compare(base, changed(base, machine(1.0 / 3.3)), noise=nf).failures[0].rule == "cpu_level"
    # x2.16: what a CI machine of the kind measured with nothing changed (2026-11-26)
    assert "cpu_level" not in {c.rule for c in compare(base, changed(base, machine(2.16)), noise=nf).failures}


def test_throughput_room_on_another_machine_is_one_sided_and_bounded(e1base):
    base, nf = e1base
    thr_fail = lambda res: {c.point for c in res.failures if c.what == THR.title}  # noqa: E731
    # The same machine: -6 % at one point fails (the measured floor is ~4 %).
    assert thr_fail(compare(base, changed(base, machine(1.0, thr={"p000": 0.94})), noise=nf)) == {"802.3ad mtu=450 streams=1"}
    # A slower machine: -6 % passes, -15 % fails, +6 % fails (a slower machine never speeds a link up).
    assert not thr_fail(compare(base, changed(base, machine(1.45, thr={"p000": 0.94})), noise=nf))
    assert thr_fail(compare(base, changed(base, machine(1.45, thr={"p000": 0.85})), noise=nf)) == {"802.3ad mtu=450 streams=1"}
    assert thr_fail(compare(base, changed(base, machine(1.45, thr={"p000": 1.06})), noise=nf)) == {"802.3ad mtu=450 streams=1"}
    # Every point -25 % on a slower machine: caught everywhere.
    assert len(thr_fail(compare(base, changed(base, machine(1.45, thr={"p": 0.75})), noise=nf))) == 12


def test_a_share_flag_at_its_threshold_s_edge_is_listed_not_failed(e1base):
    # CI 2026-11-25: balance-rr MTU 9200 one stream, 9 drops (0.11 %) where the flag starts at 0.1 %.
    base, nf = e1base

    def dropped(pct):
        def fn(r):
            if r["point_id"].startswith("p010"):
                r["flags"] = ";".join([f for f in str(r.get("flags") or "").split(";") if f] + ["queue_dropped"])
                r["flag_evidence"] = f"dropped h1/bond0-m1 bfifo 10:: 9 ({pct}%), h1/bond0-m1 htb 1:: 9 ({pct}%)"
        return fn

    edge = compare(base, changed(base, dropped(0.11)), noise=nf)
    assert edge.ok, render(edge)
    listed = [c for c in edge.checks if c.rule == "flag"]
    assert len(listed) == 1 and listed[0].verdict == HARMLESS and "marginal: at most 0.11 %" in listed[0].new_text
    clear = compare(base, changed(base, dropped(0.5)), noise=nf)
    assert [(c.rule, c.what) for c in clear.failures] == [("flag", "queue_dropped")]


# -- a machine twice as slow (CI, 2026-11-25: levels x1.89 and x1.95 with the baseline's code) ----

def slower_by(cpu: float, rtt: dict | None = None, thr: dict | None = None, saturated: tuple = ()):
    """machine(cpu, thr=thr), TCP's RTT and window x rtt[point_id prefix], and core_saturated
    raised (with its busiest core, as the sweep writes it) at the points in `saturated`."""
    base_change = machine(cpu, thr=thr)

    def fn(r):
        base_change(r)
        f = next((v for k, v in (rtt or {}).items() if r["point_id"].startswith(k)), 1.0)
        for k in ("rtt_mean_us", "cwnd_mean"):
            if isinstance(r.get(k), (int, float)):
                r[k] = r[k] * f
        if r["point_id"].startswith(saturated) if saturated else False:
            r["flags"] = ";".join([x for x in str(r.get("flags") or "").split(";") if x] + ["core_saturated"])
            r["flag_evidence"] = "cpu0 89% busy (>= 85%)"
            r["cpu0_busy_pct"] = 89.0
    return fn


def test_a_machine_twice_as_slow_moves_tcp_rtt_and_window_by_its_level_squared(e1base):
    base, nf = e1base
    fails = lambda res: {(c.point, c.what) for c in res.failures}  # noqa: E731
    rtt = ("balance-rr mtu=450 streams=20", "iperf3 TCP RTT (ms)")
    # x1.9 CPU: RTT and window x3 at balance-rr MTU 450 (CI measured x2.9-3.6) pass ...
    assert rtt not in fails(compare(base, changed(base, slower_by(1.9, rtt={"p007": 3.0})), noise=nf))
    # ... x8 does not, and on the baseline's own machine x3 fails.
    assert rtt in fails(compare(base, changed(base, slower_by(1.9, rtt={"p007": 8.0})), noise=nf))
    assert rtt in fails(compare(base, changed(base, slower_by(1.0, rtt={"p007": 3.0})), noise=nf))


def test_a_point_whose_core_saturates_at_the_slower_speed_may_lose_what_the_core_cannot_give(e1base):
    base, nf = e1base
    thr_fail = lambda res: {c.point for c in res.failures if c.what == THR.title}  # noqa: E731
    # balance-rr MTU 450, 20 streams: busiest core 64 % in the baseline, x1.95 = 125 %: -13 %
    # (what CI measured) passes, -30 % does not; 802.3ad MTU 450, one stream (15 %) has no such room:
    # only the allowance of a machine that slow (0.2 x ln 1.95 = 13 %: it lost 13-15 % on CI's), so
    # -13 % passes there and -22 % does not.
    assert not thr_fail(compare(base, changed(base, slower_by(1.95, thr={"p007": 0.87})), noise=nf))
    assert thr_fail(compare(base, changed(base, slower_by(1.95, thr={"p007": 0.70})), noise=nf)) == {
        "balance-rr mtu=450 streams=20"}
    assert not thr_fail(compare(base, changed(base, slower_by(1.95, thr={"p000": 0.87})), noise=nf))
    assert thr_fail(compare(base, changed(base, slower_by(1.95, thr={"p000": 0.78})), noise=nf)) == {
        "802.3ad mtu=450 streams=1"}


def test_a_core_saturated_only_at_the_slower_speed_is_judged_by_the_cpu_bands(e1base):
    base, nf = e1base
    flag = lambda res: [c for c in res.checks if c.rule == "flag" and c.what == "core_saturated"]  # noqa: E731
    slow = compare(base, changed(base, slower_by(1.9, saturated=("p009",))), noise=nf)
    assert [c.verdict for c in flag(slow)] == [HARMLESS] and "this machine's" in flag(slow)[0].new_text
    same = compare(base, changed(base, slower_by(1.0, saturated=("p009",))), noise=nf)
    assert [c.verdict for c in flag(same)] == ["FAIL"]


# -- a failed gate confirmed by a second run of the same code (.ci/run) -------------------------

def test_a_repeat_fails_only_the_checks_that_failed_in_both(tmp_path, e1base, capsys):
    from linklab.report.compare import UNCONFIRMED, confirm
    base, nf = e1base
    first = changed(base, machine(1.0, thr={"p000": 0.7}))
    first.path = tmp_path / "first"
    stall_elsewhere = changed(base, machine(1.0, thr={"p005": 0.7}))     # a stall on another point
    same_again = changed(base, machine(1.0, thr={"p000": 0.7, "p005": 0.7}))  # the regression recurs
    res = confirm(compare(base, stall_elsewhere, noise=nf), compare(base, first, noise=nf))
    assert res.ok and [c.point for c in res.checks if c.verdict == UNCONFIRMED] == ["802.3ad mtu=9200 streams=20"]
    assert "1 failed here only (--confirms)" in render(res)
    res = confirm(compare(base, same_again, noise=nf), compare(base, first, noise=nf))
    assert {c.point for c in res.failures} == {"802.3ad mtu=450 streams=1"}, render(res)
    with pytest.raises(UsageError, match="the run being judged"):
        confirm(compare(base, first, noise=nf), compare(base, first, noise=nf))
    # the CLI, as .ci/run calls it
    b, a, n = write(tmp_path, base, "base"), write(tmp_path, first, "a"), write(tmp_path, same_again, "b")
    assert main(["compare", str(b), str(n)]) == 1
    assert main(["compare", str(b), str(n), "--confirms", str(a)]) == 1
    out = capsys.readouterr().out
    assert "confirming" in out and "802.3ad mtu=9200 streams=20" in out.split("not confirmed:")[-1]
    assert main(["compare", str(b), write(tmp_path, stall_elsewhere, "c").as_posix(), "--confirms", str(a)]) == 0


def test_a_repeat_of_only_the_failed_points_confirms_them_and_judges_no_other(tmp_path, e1base, capsys):
    # .ci/run measures again only what failed: `compare --failed-points`, then `sweep --points`.
    from linklab.report.compare import UNCONFIRMED, confirm, failed_point_ids
    base, nf = e1base
    first = changed(base, machine(1.0, thr={"p000": 0.7, "p007": 0.7}))
    first.path = tmp_path / "first"
    ids = failed_point_ids(compare(base, first, noise=nf))
    assert [i[:4] for i in ids] == ["p000", "p007"]
    # The repeat holds those two points only; p000 fails again, p007 was a stall.
    repeat = changed(base, machine(1.0, thr={"p000": 0.7}), rows=[r for r in base.rows if r["point_id"] in ids])
    res = confirm(compare(base, repeat, noise=nf), compare(base, first, noise=nf))
    # Checks are named by the baseline's point labels, not the partial run's ("802.3ad streams=1").
    assert {c.point for c in res.failures} == {"802.3ad mtu=450 streams=1"}, render(res)
    stall = [c for c in res.checks if c.point == "balance-rr mtu=450 streams=20" and c.what == THR.title]
    assert [c.verdict for c in stall] == [WITHIN] and not any(c.verdict == UNCONFIRMED for c in res.checks)
    not_repeated = [c for c in res.checks if c.verdict == NOT_JUDGED]
    assert len(not_repeated) == 10 and all(c.rule == "missing" and "not repeated" in c.new_text for c in not_repeated)
    # A point that failed before and is missing from the repeat still fails.
    gone = changed(base, rows=[r for r in base.rows if r["point_id"] == ids[1]])
    res = confirm(compare(base, gone, noise=nf), compare(base, first, noise=nf))
    assert [(c.rule, c.point) for c in res.failures] == [("missing", "802.3ad mtu=450 streams=1")]
    # The CLI prints the ids for `linklab sweep --points`; a whole-run failure names every point.
    b, a = write(tmp_path, base, "base"), write(tmp_path, first, "a")
    capsys.readouterr()
    assert main(["compare", str(b), str(a), "--failed-points"]) == 1
    assert capsys.readouterr().out.strip() == ",".join(ids)
    assert main(["compare", str(b), str(b), "--failed-points"]) == 0 and capsys.readouterr().out.strip() == ""
    costly = compare(base, changed(base, machine(4.0)), noise=nf)
    assert any(c.rule == "cpu_level" and c.verdict == FAIL for c in costly.checks)
    assert len(failed_point_ids(costly)) == 12
