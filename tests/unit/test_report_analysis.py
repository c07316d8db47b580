"""Statistics, the CPU-model fit, every finding evaluator (agrees on agreeing data, differs on
differing data), and published-figure matching, on data built here with known answers."""

import math
from pathlib import Path

import pytest

from linklab.errors import UsageError
from linklab.published import figures as published, findings
from linklab.published.cpu_model import fit_line, fit_rows
from linklab.results.points import group
from linklab.results.runs import Run
from linklab.verdict.stats import describe


def test_describe_n_mean_sd_variance_and_student_t_interval():
    s = describe([10.0, 12.0, 14.0])
    assert (s.n, s.mean, s.sd, s.variance) == (3, 12.0, 2.0, 4.0)
    # t(0.975, 2) = 4.3027: 12 ± 4.3027 * 2 / sqrt(3)
    assert s.ci_low == pytest.approx(12 - 4.968, abs=1e-3) and s.ci_high == pytest.approx(12 + 4.968, abs=1e-3)
    one = describe([5.0])
    assert one.n == 1 and math.isnan(one.sd) and math.isnan(one.ci_low) and one.text(".1f") == "5.0"
    assert describe([]) is None


def test_cpu_fit_recovers_a_known_line_with_uncertainty():
    xs = [10_000, 40_000, 80_000, 120_000, 160_000]
    ys = [0.0001713 * x + 51.69 for x in xs]
    f = fit_line(xs, ys)
    assert f.alpha == pytest.approx(0.0001713) and f.beta == pytest.approx(51.69)
    assert f.r2 == pytest.approx(1.0) and f.alpha_se == pytest.approx(0, abs=1e-12)
    noisy = [y + e for y, e in zip(ys, (1.0, -1.0, 0.5, -0.5, 0.0))]
    g = fit_line(xs, noisy)
    assert 0 < g.r2 < 1 and g.alpha_ci[0] < 0.0001713 < g.alpha_ci[1] and g.beta_ci[0] < 51.69 < g.beta_ci[1]
    # hand-checked: sxx = 1.448e10, residual se -> alpha se = sqrt(s2/sxx)
    assert g.alpha_se == pytest.approx(math.sqrt(sum((y - g.predict(x)) ** 2 for x, y in zip(xs, noisy)) / 3 / 1.448e10),
                                       rel=1e-6)
    assert fit_line([1, 2], [3, 4]) is None and fit_line([1, 1, 1], [1, 2, 3]) is None


def test_cpu_fit_from_rows_uses_packet_size_and_busiest_core():
    rows = [{"mtu": m, "throughput_bps": bps, "cpu0_busy_pct": 0.0001713 * bps / (m * 8) + 51.69, "cpu1_busy_pct": 1.0}
            for m, bps in ((450, 5e8), (1500, 9e8), (9200, 9.9e8), (1024, 9.877e8))]
    f = fit_rows(rows)
    assert f.n == 4 and f.alpha == pytest.approx(0.0001713) and f.beta == pytest.approx(51.69)


# -- findings -----------------------------------------------------------------------------------

def run_of(tmp_path: Path, axes: dict, rows: list[dict], scale: float = 0.1) -> Run:
    rows = [{"point_index": i, "point_id": f"p{i}", "rep": 1, **r} for i, r in enumerate(rows)]
    return Run(tmp_path, {"matrix": {a: [] for a in axes}, "scale": scale}, rows)


def verdicts(run: Run, *checks, link=1e9) -> list[str]:
    ref = {"link_rate_bps": link, "findings": [{"id": f"f{i}", "says": "s", "check": c} for i, c in enumerate(checks)]}
    return [v.verdict for v in findings.evaluate(ref, group(run), run.scale)]


RR_ABOVE = {"kind": "threshold", "metric": "link_fraction", "where": {"bond_mode": "balance-rr"}, "stat": "max",
            "op": ">", "value": 1.05}


@pytest.mark.parametrize("rr_mbps,expected", [(150.0, "agrees"), (95.0, "differs")])
def test_threshold_finding(tmp_path, rr_mbps, expected):
    run = run_of(tmp_path, {"bond_mode": 0}, [{"bond_mode": "balance-rr", "throughput_bps": rr_mbps * 1e6},
                                              {"bond_mode": "802.3ad", "throughput_bps": 95e6}])
    assert verdicts(run, RR_ABOVE) == [expected]
    (v,) = findings.evaluate({"link_rate_bps": 1e9, "findings": [{"id": "f", "check": RR_ABOVE}]}, group(run), run.scale)
    # what the run gave and what the check asks, apart (README's table shows the first only)
    assert (v.measured, v.expected) == (f"link_fraction max {rr_mbps / 100:.3g} (balance-rr)", "max > 1.05")


def test_threshold_finding_not_measured_when_nothing_selected(tmp_path):
    run = run_of(tmp_path, {"bond_mode": 0}, [{"bond_mode": "802.3ad", "throughput_bps": 95e6}])
    assert verdicts(run, RR_ABOVE) == ["not measured"]


JUMBO = {"kind": "ratio", "metric": "throughput_mbps", "top": {"mtu": "max"}, "bottom": {"mtu": "min"},
         "where": {"protocol": "tcp"}, "stat": "all", "op": ">", "value": 1.03}


@pytest.mark.parametrize("jumbo_mbps,expected", [(99.0, "agrees"), (94.0, "differs")])
def test_ratio_finding_pairs_points_over_the_other_axes(tmp_path, jumbo_mbps, expected):
    rows = []
    for ip in (4, 6):
        rows += [{"ip": ip, "mtu": 1500, "protocol": "tcp", "throughput_bps": 94e6},
                 {"ip": ip, "mtu": 9000, "protocol": "tcp", "throughput_bps": jumbo_mbps * 1e6},
                 {"ip": ip, "mtu": 1500, "protocol": "udp", "throughput_bps": 50e6}]
    run = run_of(tmp_path, {"ip": 0, "mtu": 0, "protocol": 0}, rows)
    assert verdicts(run, JUMBO) == [expected]


def test_ratio_between_and_approx_ops(tmp_path):
    run = run_of(tmp_path, {"mtu": 0}, [{"mtu": 1500, "jitter_ms": 0.10}, {"mtu": 9000, "jitter_ms": 0.15}])
    between = {"kind": "ratio", "metric": "jitter_ms", "top": {"mtu": 9000}, "bottom": {"mtu": 1500}, "op": "between",
               "value": [0.5, 2.0]}
    approx = dict(between, op="approx", value=[1.5, 0.05])
    far = dict(between, op="approx", value=[1.0, 0.05])
    assert verdicts(run, between, approx, far) == ["agrees", "agrees", "differs"]


SATURATES = {"kind": "saturates", "metric": "throughput_mbps", "axis": "mtu", "from": 1500, "within": 0.1}


@pytest.mark.parametrize("at_9200,expected", [(99.0, "agrees"), (60.0, "differs")])
def test_saturates_finding(tmp_path, at_9200, expected):
    run = run_of(tmp_path, {"mtu": 0}, [{"mtu": 450, "throughput_bps": 80e6}, {"mtu": 1500, "throughput_bps": 95e6},
                                        {"mtu": 9200, "throughput_bps": at_9200 * 1e6}])
    assert verdicts(run, SATURATES) == [expected]


def test_saturates_differs_when_throughput_does_not_rise(tmp_path):
    run = run_of(tmp_path, {"mtu": 0}, [{"mtu": 450, "throughput_bps": 99e6}, {"mtu": 1500, "throughput_bps": 95e6}])
    assert verdicts(run, SATURATES) == ["differs"]


def test_mechanism_says_link_or_cpu_bound(tmp_path):
    run = run_of(tmp_path, {"mtu": 0}, [
        {"mtu": 1500, "throughput_bps": 95.5e6, "cpu0_busy_pct": 40.0},           # 100 % of goodput: link-bound
        {"mtu": 450, "throughput_bps": 40e6, "cpu0_busy_pct": 97.0}])             # half of goodput, core full
    ref = {"link_rate_bps": 1e9, "findings": [{"id": "x", "says": "s", "mechanism": "bound",
                                              "check": {"kind": "threshold", "metric": "throughput_mbps", "op": ">",
                                                        "value": 0}}]}
    mech = findings.evaluate(ref, group(run), 0.1)[0].mechanism
    assert "mtu=1500: 100 % of 1 member(s)' goodput, busiest core 40 % → link-bound" in mech
    assert "mtu=450: 47 % of 1 member(s)' goodput, busiest core 97 % → CPU-bound" in mech


def _mechanism(run, name: str, check: dict) -> str:
    ref = {"link_rate_bps": 1e9, "findings": [{"id": "x", "says": "s", "mechanism": name, "check": check}]}
    return findings.evaluate(ref, group(run), run.scale)[0].mechanism


def test_emulator_mechanism_says_whose_round_trip_the_delay_is(tmp_path):
    """E4's IPv6-vs-IPv4 delay: the idle RTT against what the path asks, and the flag's count."""
    run = run_of(tmp_path, {"ip": 0}, [
        {"ip": 4, "ping_rtt_mean_ms": 0.48, "ping_rtt_p50_ms": 0.47, "path_asked_rtt_ms": 0.0157, "flags": "emulator_rtt"},
        {"ip": 6, "ping_rtt_mean_ms": 0.50, "ping_rtt_p50_ms": 0.56, "path_asked_rtt_ms": 0.0157, "flags": "queue_dropped;emulator_rtt"}])
    ratio = {"kind": "ratio", "metric": "ping_rtt_ms", "top": {"ip": 6}, "bottom": {"ip": 4}, "stat": "mean", "op": "<",
             "value": 1.0}
    assert _mechanism(run, "emulator", ratio) == ("idle ping RTT 0.47-0.56 ms where the path asks 0.016 ms, emulator_rtt "
                                                  "on 2 of 2 repetitions → the delay measured is the emulator's own round trip")
    slow = run_of(tmp_path, {"ip": 0}, [{"ip": 4, "ping_rtt_mean_ms": 20.5, "ping_rtt_p50_ms": 20.4, "path_asked_rtt_ms": 20.0},
                                        {"ip": 6, "ping_rtt_mean_ms": 20.6, "ping_rtt_p50_ms": 20.5, "path_asked_rtt_ms": 20.0}])
    assert _mechanism(slow, "emulator", ratio).endswith("emulator_rtt on 0 of 2 repetitions → the path's own delay dominates")


def test_frame_time_mechanism_puts_jitter_beside_one_frames_time_at_the_rate_run(tmp_path):
    """At scale 0.1 a 9000-byte frame takes 0.72 ms on a 1 Gbit/s-written link (0.072 at 1 Gbit/s)."""
    run = run_of(tmp_path, {"mtu": 0}, [{"mtu": 1500, "jitter_ms": 0.18}, {"mtu": 9000, "jitter_ms": 0.72}])
    ratio = {"kind": "ratio", "metric": "jitter_ms", "top": {"mtu": "max"}, "bottom": {"mtu": "min"}, "stat": "all",
             "op": "between", "value": [0.5, 2.0]}
    assert _mechanism(run, "frame_time", ratio) == (
        "MTU 1500: jitter 0.18 ms, 1.5 frame times (0.12 ms at 100 Mbit/s; 0.012 ms at the written 1000); "
        "MTU 9000: jitter 0.72 ms, 1 frame times (0.72 ms at 100 Mbit/s; 0.072 ms at the written 1000) "
        "→ jitter of about a frame time: the link's pacing at the rate run")


def test_bad_findings_are_usage_errors_naming_the_choices(tmp_path):
    run = run_of(tmp_path, {"mtu": 0}, [{"mtu": 1500, "throughput_bps": 1e6}])
    with pytest.raises(UsageError, match="unknown check kind 'nope' .valid: threshold, ratio, saturates"):
        verdicts(run, {"kind": "nope"})
    with pytest.raises(UsageError, match="unknown metric 'speed'"):
        verdicts(run, {"kind": "threshold", "metric": "speed", "op": ">", "value": 1})


NO_GAIN = {"kind": "threshold", "metric": "link_fraction", "where": {"sysctl_profile": "default"}, "stat": "max",
           "op": "<=", "value": 1.05}


def _with_variant(default_mbps: float, variant_mbps: float | None, variant: dict | None = None) -> tuple[list, dict]:
    rows = [{"sysctl_profile": "default", "throughput_bps": default_mbps * 1e6},
            {"sysctl_profile": "all", "throughput_bps": 240e6}]
    if variant_mbps is not None:
        rows.append({"sysctl_profile": "paper_kernel", "throughput_bps": variant_mbps * 1e6})
    ref = {"link_rate_bps": 1e9, "variants": {"sysctl_profile": ["paper_kernel"]},
           "findings": [{"id": "no-gain", "says": "s", "check": NO_GAIN,
                         "variant": variant or {"where": {"sysctl_profile": "paper_kernel"}, "cause": "RACK"}},
                        {"id": "floor", "says": "s", "check": {**NO_GAIN, "where": {}, "stat": "min", "op": ">=",
                                                                "value": 0.9}}]}
    return rows, ref


@pytest.mark.parametrize("default_mbps,variant_mbps,expected", [
    (167.0, 70.0, "explained"),        # differs; the variant removes the cause
    (167.0, 160.0, "differs"),         # differs; the variant does not remove it
    (167.0, None, "differs"),          # differs; the variant was not run
    (95.0, 160.0, "agrees"),           # agrees on its own: the variant is not asked
])
def test_a_differing_finding_is_explained_only_by_its_variant_measured_in_the_run(tmp_path, default_mbps,
                                                                                 variant_mbps, expected):
    rows, ref = _with_variant(default_mbps, variant_mbps)
    run = run_of(tmp_path, {"sysctl_profile": 0}, rows)
    got = findings.evaluate(ref, group(run), run.scale)
    assert got[0].verdict == expected
    if expected == "explained":
        assert "with variant sysctl_profile=paper_kernel: link_fraction max 0.7" in got[0].measured
        assert got[0].mechanism.startswith("RACK (measured: variant sysctl_profile=paper_kernel agrees)")
    if variant_mbps is None:
        assert "variant sysctl_profile=paper_kernel not measured in this run" in got[0].measured
    # the variant's own verdict, where it was checked (only for a finding that differed)
    assert got[0].variant == {"explained": "agrees", "agrees": ""}.get(expected, "not measured" if variant_mbps is None
                                                                        else "differs")
    # The variant's points are no finding's own: the least over every profile is the default's, not
    # the variant's 0.7 (which would make this finding differ).
    assert got[1].verdict == "agrees" and f"min {default_mbps / 100:.3g} (" in got[1].measured


def test_a_variant_must_be_listed_and_have_where(tmp_path):
    run = run_of(tmp_path, {"sysctl_profile": 0}, _with_variant(167.0, 70.0)[0])
    _, ref = _with_variant(167.0, 70.0, variant={"where": {"sysctl_profile": "other"}})
    with pytest.raises(UsageError, match=r"variant sysctl_profile=other is not listed under `variants:` "
                                         r"\(listed: sysctl_profile=paper_kernel\)"):
        findings.evaluate(ref, group(run), run.scale)
    _, ref = _with_variant(167.0, 70.0, variant={"cause": "x"})
    with pytest.raises(UsageError, match="variant needs `where`"):
        findings.evaluate(ref, group(run), run.scale)


TUNING_HELPS = {"kind": "ratio", "metric": "throughput_mbps", "top": {"sysctl_profile": "all"},
                "bottom": {"sysctl_profile": "default"}, "stat": "all", "op": ">", "value": 1.05}


@pytest.mark.parametrize("variant_mbps,expected", [(70.0, "explained"), (235.0, "differs")])
def test_a_ratio_variant_replaces_one_side_only(tmp_path, variant_mbps, expected):
    """E2's "the tuning beats the defaults": the paper's defaults were its kernel's, so the variant
    replaces the ratio's bottom (default -> paper_kernel) and leaves its top (all) as it was."""
    rows, ref = _with_variant(235.0, variant_mbps)
    run = run_of(tmp_path, {"sysctl_profile": 0}, rows)
    ref["findings"] = [{"id": "helps", "says": "s", "check": TUNING_HELPS,
                        "variant": {"bottom": {"sysctl_profile": "paper_kernel"}, "cause": "dupthresh"}}]
    got = findings.evaluate(ref, group(run), run.scale)[0]
    assert got.verdict == expected, got.measured
    assert "throughput_mbps sysctl_profile=all ÷ sysctl_profile=default: all: 1.02" in got.measured
    assert f"sysctl_profile=all ÷ sysctl_profile=paper_kernel: all: {240 / variant_mbps:.3g}" in got.measured


def test_an_axis_the_check_fixed_for_both_sides_stays_on_the_side_the_variant_leaves():
    """E3's collapse: checked with the switch ports at the hosts' MTU (where: port_mtu null); the
    variant leaves the ports at 1500 on the MTU-2000 side only, the 1500 side stays matched."""
    check = {"kind": "ratio", "top": {"mtu": 2000}, "bottom": {"mtu": 1500}, "where": {"port_mtu": None, "protocol": "tcp"}}
    assert findings._varied(check, {"top": {"port_mtu": 1500}}) == {
        "kind": "ratio", "top": {"mtu": 2000, "port_mtu": 1500}, "bottom": {"port_mtu": None, "mtu": 1500},
        "where": {"protocol": "tcp"}}
    assert findings._varied(check, {"where": {"protocol": "udp"}})["where"] == {"port_mtu": None, "protocol": "udp"}


def test_a_side_variant_needs_a_ratio(tmp_path):
    run = run_of(tmp_path, {"sysctl_profile": 0}, _with_variant(167.0, 70.0)[0])
    _, ref = _with_variant(167.0, 70.0, variant={"top": {"sysctl_profile": "paper_kernel"}})
    with pytest.raises(UsageError, match="a variant's top/bottom applies to a ratio check; this check is 'threshold'"):
        findings.evaluate(ref, group(run), run.scale)


def test_every_bundled_reference_finding_is_well_formed(tmp_path):
    """Each reference file's findings evaluate (to any verdict) on a run with none of their points."""
    run = run_of(tmp_path, {"zz": 0}, [{"zz": 1, "throughput_bps": 1e6}])
    for ref_file in sorted(Path("experiments").glob("*.reference.yaml")):
        ref = published.load_reference(ref_file)
        got = findings.evaluate(ref, group(run), 0.1)
        assert len(got) == len(ref.get("findings") or []) and all(v.verdict == "not measured" for v in got)


# -- published figures --------------------------------------------------------------------------

def test_published_matching_rules_and_comparable_units(tmp_path):
    bond_rr = {"mode": "balance-rr", "options": {"miimon": 100}}
    bond_tlb = {"mode": "balance-tlb", "options": {"miimon": 100, "xmit_hash_policy": "layer3+4"}}
    run = run_of(tmp_path, {"bond": 0, "server": 0}, [
        {"bond": bond_rr, "server": "rxa", "streams": 1, "throughput_bps": 178e6, "retransmits": 2000,
         "sent_bytes": 222.5e6, "cwnd_mean": 33100},
        {"bond": bond_tlb, "server": "rxa", "streams": 1, "throughput_bps": 94e6, "retransmits": 2, "sent_bytes": 117.5e6,
         "cwnd_mean": 23300}])
    ref = {"link_rate_bps": 1e9, "duration_s": 10, "runs": [
        {"server": "rxa", "streams": 1, "bond_mode": "balance-rr", "throughput_bps": 1.78e9, "retransmits": 20079,
         "cwnd_bytes": 331000},
        {"case": "single link", "throughput_bps": 9.4e8},
        {"streams": 1, "throughput_bps": 9.4e8}]}
    pub = published.compare(run, ref)
    by_q = {c.quantity: c for c in pub.comparisons}
    # bond_mode (E5's key) is read from the bond axis's mode
    assert by_q["throughput"].ratio == pytest.approx(1.0) and by_q["throughput"].of_link == pytest.approx((1.78, 1.78))
    # 20079 over 10 s at 1.78 Gbit/s = 2.225 GB -> 9024/GB; linklab 2000 over 0.2225 GB -> 8989/GB
    assert by_q["retransmits per GB sent"].published == pytest.approx(9024.3, rel=1e-3)
    assert by_q["retransmits per GB sent"].ratio == pytest.approx(8988.8 / 9024.3, rel=1e-3)
    # cwnd as time: 331 kB at 1.78 Gbit/s = 1.488 ms, the same window-to-rate ratio at scale 0.1
    assert by_q["cwnd ÷ rate"].published == pytest.approx(1.4876, rel=1e-3) and by_q["cwnd ÷ rate"].ratio == pytest.approx(1.0)
    reasons = {tuple(u.point): u.reason for u in pub.unmatched}
    assert "not an axis or recorded setting" in reasons[("case",)]
    assert reasons[("streams",)].startswith("names no axis of this run")


def test_published_key_answered_by_an_aliased_axis(tmp_path):
    run = run_of(tmp_path, {"length": 0}, [{"length": 450, "mtu_varied": "length", "throughput_bps": 50e6}])
    ref = {"link_rate_bps": 1e9, "match_axes": {"mtu": ["mtu", "length"]},
           "throughput": [{"mtu": 450, "throughput_mbps": 549}, {"mtu": 1500, "throughput_mbps": 941}]}
    pub = published.compare(run, ref)
    assert [c.point for c in pub.comparisons] == [{"mtu": 450}] and pub.comparisons[0].ratio == pytest.approx(500 / 549)


def test_published_entry_may_name_any_report_metric(tmp_path):
    run = run_of(tmp_path, {"mtu": 0}, [{"mtu": 500, "ping_rtt_mean_ms": 22.0, "jitter_ms": 1.0}])
    pub = published.compare(run, {"throughput": [{"mtu": 500, "ping_rtt_ms": 44.1, "jitter_ms": 1.7}]})
    got = {c.quantity: round(c.ratio, 3) for c in pub.comparisons}
    assert got == {"ping RTT": 0.499, "UDP jitter": 0.588}


def test_published_udp_drop_compared_on_udp_rows(tmp_path):
    run = run_of(tmp_path, {"protocol": 0}, [{"protocol": "udp", "lost_percent": 30.0},
                                             {"protocol": "tcp", "lost_percent": None, "throughput_bps": 9e7}])
    pub = published.compare(run, {"udp_drop_pct": {"mean": 40, "min": 0, "max": 60}})
    assert [(c.quantity, c.ratio) for c in pub.comparisons] == [("UDP datagrams lost", 0.75)]


@pytest.mark.parametrize("mismatch_mbps,expected", [(0.0, "agrees"), (60.0, "differs")])
def test_ratio_across_a_null_axis_value_finds_which_variant_collapses(tmp_path, mismatch_mbps, expected):
    # E3's shape: port_mtu null (matched) at 1500 and 2000, port_mtu 1500 (Mininet's ports) only at 2000;
    # the CSV records null as an empty cell.
    rows = [{"port_mtu": "", "mtu": 1500, "throughput_bps": 90e6}, {"port_mtu": "", "mtu": 2000, "throughput_bps": 80e6},
            {"port_mtu": 1500, "mtu": 2000, "throughput_bps": mismatch_mbps * 1e6}]
    run = run_of(tmp_path, {"port_mtu": 0, "mtu": 0}, rows)
    base = {"kind": "ratio", "metric": "throughput_mbps", "stat": "all", "op": "<", "value": 0.5}
    matched = dict(base, top={"mtu": 2000}, bottom={"mtu": 1500}, where={"port_mtu": None})
    mininet = dict(base, top={"mtu": 2000, "port_mtu": 1500}, bottom={"mtu": 1500, "port_mtu": None})
    assert verdicts(run, matched, mininet) == ["differs", expected]


def test_unscaled_reference_compares_rates_as_measured(tmp_path):
    run = run_of(tmp_path, {"mtu": 0, "port_mtu": 0}, [{"mtu": 2000, "port_mtu": "", "throughput_bps": 2.0e6}])
    entry = {"mtu": 2000, "port_mtu": None, "throughput_mbps": 2.45}
    scaled = published.compare(run, {"runs": [entry]}).comparisons[0]
    unscaled = published.compare(run, {"runs": [entry], "rates_unscaled": True}).comparisons[0]
    assert round(scaled.on_original_scale, 3) == 20.0 and round(unscaled.on_original_scale, 3) == 2.0


def test_ratio_over_a_derived_key_pairs_points_of_a_mapping_axis(tmp_path):
    # E5: the axis is `bond` (a mapping); findings name bond_mode, a field of it.
    rr = {"mode": "balance-rr", "options": {"miimon": 100}}
    tlb = {"mode": "balance-tlb", "options": {"miimon": 100, "xmit_hash_policy": "layer3+4"}}
    rows = [{"bond": rr, "server": "rxa", "retransmits": 700, "sent_bytes": 1e8},
            {"bond": tlb, "server": "rxa", "retransmits": 5, "sent_bytes": 1e8}]
    run = run_of(tmp_path, {"bond": 0, "server": 0}, rows)
    check = {"kind": "ratio", "metric": "retrans_per_gb", "top": {"bond_mode": "balance-rr"},
             "bottom": {"bond_mode": "balance-tlb"}, "stat": "min", "op": ">=", "value": 10}
    assert verdicts(run, check) == ["agrees"]
    assert verdicts(run, dict(check, value=1000)) == ["differs"]


def test_one_member_mechanism_finds_the_repetitions_whose_streams_all_hashed_onto_one_member(tmp_path):
    """E5's four-stream gap: a balance-tlb repetition whose four streams all left by one member
    carries one link (95 Mbit/s at scale 0.1) where its point's other carried two."""
    run = run_of(tmp_path, {"bond_mode": 0, "streams": 0}, [
        {"bond_mode": "balance-rr", "streams": 4, "rep": 1, "throughput_bps": 189e6, "client_member_tx_active": 2},
        {"bond_mode": "balance-tlb", "streams": 4, "rep": 1, "throughput_bps": 190e6, "client_member_tx_active": 2},
        {"bond_mode": "balance-tlb", "streams": 1, "rep": 1, "throughput_bps": 95e6, "client_member_tx_active": 1}])
    tlb2 = {"bond_mode": "balance-tlb", "streams": 4, "rep": 2, "throughput_bps": 95.2e6, "client_member_tx_active": 1,
            "point_index": 1, "point_id": "p1"}
    run.rows.append(tlb2)
    ratio = {"kind": "ratio", "metric": "throughput_mbps", "top": {"bond_mode": "balance-rr"},
             "bottom": {"bond_mode": "balance-tlb"}, "where": {"streams": 4}, "stat": "all", "op": "between",
             "value": [0.85, 1.15]}
    got = _mechanism(run, "one_member", ratio)
    assert got.startswith("balance-tlb streams=4: 1 of 2 repetitions on one member (95.2 Mbit/s; the others on two: 190)"), got
    assert got.endswith("→ 1 repetition whose streams all hashed onto one member carried one link: the published runs "
                        "where that happened were discarded")
    spread = run_of(tmp_path, {"bond_mode": 0, "streams": 0}, [
        {"bond_mode": "balance-rr", "streams": 4, "throughput_bps": 189e6, "client_member_tx_active": 2},
        {"bond_mode": "balance-tlb", "streams": 4, "throughput_bps": 190e6, "client_member_tx_active": 2}])
    assert _mechanism(spread, "one_member", ratio) == "every repetition of several streams left by more than one member"
