"""linklab report: finding a run from what users type, and summarizing it per point."""

from datetime import datetime

import pytest

from linklab.errors import UsageError
from linklab.sweep.matrix import expand
from linklab.sweep.report import build_report, busiest_core, find_run, point_lines, write_report
from linklab.sweep.store import ResultsStore

POINTS = expand({"bond_mode": ["802.3ad", "balance-rr"], "streams": [1]})
REFERENCE = """\
throughput:
  - {bond_mode: 802.3ad, streams: 1, throughput_mbps: 941}
  - {bond_mode: balance-rr, streams: 1, throughput_mbps: 1390, approx: true}
  - {bond_mode: balance-rr, streams: 20, throughput_mbps: null}
"""


def make_run(root, now, rates, *, reference=True, experiments=None):
    manifest = {"fingerprint": "fp", "matrix": {"bond_mode": ["802.3ad", "balance-rr"], "streams": [1]},
                "points": 2, "repetitions": len(rates[0]), "scale": 0.1, "description": "demo",
                "placement": {"kind": "vm", "vm": {"accel": "tcg"}}, "kernel": "6.1.0-test"}
    if reference:
        manifest |= {"reference": "demo.reference.yaml", "experiment_file": str(experiments / "demo.yaml")}
    store = ResultsStore.create(root, "demo", manifest, now=now)
    for point, reps in zip(POINTS, rates):
        for rep, mbps in enumerate(reps, 1):
            row = ({"preflight_ok": False, "error": "pre-flight failed: bond0 mode is balance-rr"} if mbps is None else
                   {"throughput_bps": mbps * 1e6, "retransmits": 3 * rep, "cpu0_busy_pct": 40.0,
                    "cpu1_busy_pct": 70.0 + rep, "cpu_client_iperf3_pct": 55.0, "preflight_ok": True})
            if mbps is not None and point.axes["bond_mode"] == "802.3ad":
                row |= {"ping_rtt_mean_ms": 0.25 * rep, "ping_rtt_p95_ms": 0.5, "ping_loss_pct": 0.0}
            store.record(point, rep, {"iperf3.json": "{}"}, row)
    return store.path


@pytest.fixture
def experiments(tmp_path):
    d = tmp_path / "experiments"
    d.mkdir()
    (d / "demo.reference.yaml").write_text(REFERENCE)
    return d


def test_find_run_accepts_run_dir_experiment_dir_file_and_name(tmp_path, experiments):
    root = tmp_path / "results"
    old = make_run(root, datetime(2024, 1, 1), [[90.0], [150.0]], experiments=experiments)
    new = make_run(root, datetime(2024, 1, 2), [[91.0], [151.0]], experiments=experiments)
    assert find_run(str(old), root) == old
    assert find_run(str(root / "demo"), root) == new
    assert find_run("experiments/demo.yaml", root) == new
    assert find_run("demo", root) == new
    assert find_run(None, root) == new


def test_find_run_unknown_lists_what_has_results(tmp_path, experiments):
    root = tmp_path / "results"
    make_run(root, datetime(2024, 1, 1), [[90.0], [150.0]], experiments=experiments)
    with pytest.raises(UsageError) as e:
        find_run("e9_nothing", root)
    assert "no results found for 'e9_nothing'" in str(e.value) and "demo" in e.value.hint
    with pytest.raises(UsageError, match="no results under"):
        find_run(None, tmp_path / "empty")


def test_point_lines_mean_over_reps_and_failed_reps_excluded(tmp_path, experiments):
    run = make_run(tmp_path, datetime(2024, 1, 1), [[90.0, 94.0], [150.0, None]], experiments=experiments)
    lines = point_lines(ResultsStore.open(run).rows(), ["bond_mode", "streams"])
    assert [ln["point"]["bond_mode"] for ln in lines] == ["802.3ad", "balance-rr"]
    assert lines[0]["throughput_mbps"] == pytest.approx([90.0, 94.0]) and lines[0]["failed"] == 0
    assert lines[1]["throughput_mbps"] == pytest.approx([150.0]) and lines[1]["failed"] == 1
    assert lines[0]["busiest_core_pct"] == pytest.approx([71.0, 72.0])


def test_busiest_core_ignores_all_and_per_process_keys():
    row = {"cpu0_busy_pct": 10, "cpu1_busy_pct": "55.5", "cpu_all_busy_pct": 99, "cpu_client_iperf3_pct": 120}
    assert busiest_core(row) == ("1", 55.5)
    assert busiest_core({"cpu_all_busy_pct": 5}) is None


def test_report_has_ci_table_and_published_comparison(tmp_path, experiments):
    run = make_run(tmp_path, datetime(2024, 1, 1), [[90.0, 94.0], [150.0, 140.0]], experiments=experiments)
    path, text = write_report(run)
    assert path == run / "report.md" and path.read_text() == text
    assert "| bond_mode | streams | reps | Mbit/s |" in text
    assert "| 802.3ad | 1 | 2 | 92.0 ±25.4 |" in text  # t(0.975, 1) = 12.706, s = 2.83, n = 2
    # ping columns appear because one point measured them; the other point shows "-"
    assert "| ping ms | ping p95 ms | ping loss % |" in text
    assert "| 0.375 ±1.588 | 0.500 ±0.000 | 0.0 ±0.0 |" in text and text.count("| - | - | - |") == 1
    assert "vm (tcg), scale 0.1" in text and "4 of 4 repetitions recorded" in text
    # 92 Mbit/s at scale 0.1 is 920 against the published 941; the null reference entry is skipped
    assert "bond_mode=802.3ad streams=1" in text and "920" in text and "0.98" in text
    assert "~1390" in text and "streams=20" not in text


def test_report_says_when_reference_missing_and_run_incomplete(tmp_path, experiments):
    run = make_run(tmp_path, datetime(2024, 1, 1), [[90.0], [150.0]], experiments=experiments)
    (experiments / "demo.reference.yaml").unlink()
    store = ResultsStore.open(run)
    store.update_manifest(repetitions=3)
    text = build_report(run)
    assert "2 of 6 repetitions recorded — run incomplete" in text
    assert "reference demo.reference.yaml not found" in text


def test_report_compares_published_ratios(tmp_path):
    exps = tmp_path / "experiments"
    exps.mkdir()
    (exps / "jumbo.reference.yaml").write_text(
        "relative:\n  - {metric: throughput, protocol: tcp, jumbo_over_normal: 1.15}\n"
        "  - {metric: throughput, protocol: udp, jumbo_over_normal: 1.25}\n")
    points = expand({"mtu": [1500, 9000], "protocol": ["tcp"]})
    store = ResultsStore.create(tmp_path / "results", "jumbo", {
        "fingerprint": "fp", "matrix": {"mtu": [1500, 9000], "protocol": ["tcp"]}, "points": 2, "repetitions": 2,
        "scale": 0.1, "reference": "jumbo.reference.yaml", "experiment_file": str(exps / "jumbo.yaml")},
        now=datetime(2024, 1, 1))
    for point, rates in zip(points, ([80.0, 100.0], [110.0, 115.0])):
        for rep, mbps in enumerate(rates, 1):
            store.record(point, rep, {}, {"throughput_bps": mbps * 1e6})
    text = build_report(store.path)
    # (110 + 115) / 2 / ((80 + 100) / 2) = 1.25; udp has no rows, so no line for it
    assert "protocol=tcp" in text and "throughput MTU 9000 / MTU 1500" in text
    line = next(ln for ln in text.splitlines() if "protocol=tcp" in ln)
    assert line.split()[-2:] == ["1.250", "1.150"]
    assert "protocol=udp" not in text and "÷scale" not in text


def test_axis_text_shows_a_bond_setting_by_its_mode():
    from linklab.sweep.report import axis_text
    assert axis_text({"mode": "balance-tlb", "options": {"miimon": 100}}) == "balance-tlb"
    assert axis_text('{"mode": "balance-rr", "options": {}}') == "balance-rr"
    assert axis_text({"delay": "1ms"}) == '{"delay": "1ms"}' and axis_text(1500) == "1500"
