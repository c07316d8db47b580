"""linklab report: finding runs, grouping and labelling points, the written report."""

import hashlib
import json
from datetime import datetime
from pathlib import Path

import pytest

from linklab.errors import UsageError
from linklab.results import samples
from linklab.verdict import metrics
from linklab.report.build import build, write, write_report
from linklab.results.points import axis_texts, group
from linklab.results.runs import Run, export, find_run
from linklab.sweep.matrix import expand
from linklab.results.store import ResultsStore

POINTS = expand({"bond_mode": ["802.3ad", "balance-rr"], "streams": [1]})
REFERENCE = """\
link_rate_bps: 1.0e9
throughput:
  - {case: single link, throughput_mbps: 98}
  - {bond_mode: 802.3ad, streams: 1, throughput_mbps: 941}
  - {bond_mode: balance-rr, streams: 1, throughput_mbps: 1390, approx: true}
  - {bond_mode: balance-rr, streams: 20, throughput_mbps: null}
findings:
  - id: rr-above
    says: balance-rr exceeds one link
    check: {kind: threshold, metric: link_fraction, where: {bond_mode: balance-rr}, stat: max, op: ">", value: 1.05}
"""


def make_run(root, now, rates, *, experiments):
    manifest = {"fingerprint": "fp", "matrix": {"bond_mode": ["802.3ad", "balance-rr"], "streams": [1]},
                "points": 2, "repetitions": len(rates[0]), "scale": 0.1, "description": "demo",
                "placement": {"kind": "vm", "vm": {"accel": "tcg"}}, "kernel": "6.1.0-test",
                "reference": "demo.reference.yaml", "experiment_file": str(experiments / "demo.yaml")}
    store = ResultsStore.create(root, "demo", manifest, now=now)
    for point, reps in zip(POINTS, rates):
        for rep, mbps in enumerate(reps, 1):
            row = ({"preflight_ok": False, "error": "pre-flight failed: bond0 mode is balance-rr"} if mbps is None else
                   {"throughput_bps": mbps * 1e6, "retransmits": 3 * rep, "sent_bytes": 1e9, "cpu0_busy_pct": 40.0,
                    "cpu1_busy_pct": 70.0 + rep, "cpu_client_iperf3_pct": 55.0, "preflight_ok": True,
                    "new_field_from_elsewhere": 7.5})
            if mbps is not None and point is POINTS[1]:  # flags as the store writes them, and as a list
                row.update({"flags": "core_saturated;queue_dropped", "flag_evidence": "cpu1 91% busy"} if rep == 2
                           else {"flags": [{"name": "reordering", "evidence": "SACK 12"}]})
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
    with pytest.raises(UsageError) as e:
        find_run("e9_nothing", root)
    assert "no results found for 'e9_nothing'" in str(e.value) and "demo" in e.value.hint


def test_points_group_failed_reps_and_busiest_core(tmp_path, experiments):
    run = Run.load(make_run(tmp_path, datetime(2024, 1, 1), [[90.0, 94.0], [150.0, None]], experiments=experiments))
    pts = group(run)
    assert [p.label for p in pts] == ["802.3ad", "balance-rr"]  # streams is the same everywhere: left out
    assert [p.failed for p in pts] == [0, 1]
    assert [metrics.get("busiest_core_pct", r) for r in pts[0].ok] == [71.0, 72.0]
    assert metrics.busiest_core({"cpu_all_busy_pct": 99, "cpu1_busy_pct": "55.5", "cpu_client_iperf3_pct": 120}) == ("1", 55.5)


def test_bond_values_differing_only_in_an_option_get_distinct_labels():
    a = {"mode": "balance-xor", "options": {"xmit_hash_policy": "layer2"}}
    b = {"mode": "balance-xor", "options": {"xmit_hash_policy": "layer3+4"}}
    assert axis_texts([a, b]) == ["balance-xor xmit_hash_policy=layer2", "balance-xor xmit_hash_policy=layer3+4"]
    # distinct modes are enough on their own
    c = {"mode": "balance-tlb", "options": {"xmit_hash_policy": "layer3+4", "miimon": 100}}
    assert axis_texts([{"mode": "balance-rr", "options": {"miimon": 100}}, c]) == ["balance-rr", "balance-tlb"]
    assert axis_texts(['{"mode": "balance-rr"}', 1500]) == ["balance-rr", "1500"]


def test_report_files_statistics_published_and_findings(tmp_path, experiments):
    run = make_run(tmp_path, datetime(2024, 1, 1), [[90.0, 94.0], [150.0, 140.0]], experiments=experiments)
    path, text = write_report(run)
    assert path == run / "report.md" and path.read_text() == text
    html = (run / "report.html").read_text()
    assert (run / "figures" / "throughput.svg").is_file() and (run / "figures" / "throughput.png").is_file()
    assert "http://" not in html.replace("http://www.w3.org", "") and "<script" not in html
    assert "| 802.3ad | 2 | 92.0 ±25.4 |" in text  # t(0.975, 1) = 12.706, s = 2.83, n = 2
    # full statistics: n, mean, sd, variance, CI
    assert "| 802.3ad | throughput (Mbit/s) | 2 | 92.0 | 2.83 | 8 | 66.6 | 117.4 |" in text
    assert "lab VM, software emulation (TCG)" in text and "4 of 4 recorded" in text
    # 92 Mbit/s at scale 0.1 is 920 against the published 941
    assert "| bond_mode=802.3ad streams=1 | throughput (Mbit/s) | 941 | 92 ±25.41 | 2 | 920 | 0.92 / 0.94 | 0.98 |" in text
    # the single-link entry names no axis of the run: not compared, and says why
    assert "| case=single link | 'case' is not an axis or recorded setting of this run |" in text
    assert "| bond_mode=balance-rr streams=20 | no repetition of this run has these values |" in text
    # rr at 145 Mbit/s at scale 0.1 is 1.45 links: agrees
    assert "| ✔ agrees | balance-rr exceeds one link | link_fraction max 1.45 (balance-rr)" in text
    # columns nobody declared are still shown, and flags with their evidence
    assert "new_field_from_elsewhere" in text and "| reordering | SACK 12 |" in text
    # flagged points are marked in the table (how many repetitions carry which flag), not only listed
    assert "| core_saturated, queue_dropped | cpu1 91% busy |" in text
    assert "core_saturated 1/2, queue_dropped 1/2, reordering 1/2 |" in text and "| ⚑ 802.3ad" not in text


def test_a_limiting_factor_flag_is_listed_like_the_others(tmp_path, experiments):
    # A repetition flagged as the sweep flags it (measure/disturbance.py) from captured real output:
    # a receiver window held at 56 588 bytes, 0.34 of the path.
    from linklab.measure import disturbance
    from linklab.measure.iperf3 import parse_result
    from linklab.measure.ss import limits_row, parse_tcp_info
    tools = Path(__file__).resolve().parent.parent / "data" / "tools"
    row = {**parse_result((tools / "iperf3_tcp_rwnd_limited.json").read_text()).row(""),
           **limits_row(parse_tcp_info((tools / "ss_tcp_info_rwnd_limited.txt").read_text()))}
    row.update(disturbance.flags(row, theory_bps=99.27e6), preflight_ok=True)
    manifest = {"fingerprint": "fp", "matrix": {"bond_mode": ["802.3ad", "balance-rr"], "streams": [1]}, "points": 2,
                "repetitions": 1, "scale": 0.1, "experiment_file": str(experiments / "demo.yaml")}
    store = ResultsStore.create(tmp_path, "demo", manifest, now=datetime(2024, 1, 1))
    store.record(POINTS[0], 1, {"iperf3.json": "{}"}, row)
    store.record(POINTS[1], 1, {"iperf3.json": "{}"}, {**row, "flags": "", "flag_evidence": ""})
    text = write_report(store.path, figures=False)[1]
    assert "| ⚑ 802.3ad |" in text and "rwnd_limited 1/1 |" in text and "rwnd_limited: the receiver's window" in text
    assert "| 802.3ad | 1 | rwnd_limited | the receiver's window held the sender: goodput 34.2 Mbit/s, 0.34 of" in text


def test_a_report_without_figures_has_the_same_text_and_never_imports_matplotlib(tmp_path, experiments):
    # The kernel tier checks a real sweep's report this way: matplotlib costs ~1 min to import in
    # the lab VM. In a fresh interpreter, since this one may have imported it for another test.
    import subprocess
    import sys
    run = make_run(tmp_path, datetime(2024, 1, 1), [[90.0, 94.0], [150.0, 140.0]], experiments=experiments)
    code = ("import sys; from pathlib import Path; from linklab.report.build import write_report; "
            f"write_report(Path({str(run)!r}), figures=False); print('matplotlib' in sys.modules)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout.strip() == "False", res.stdout + res.stderr
    text = (run / "report.md").read_text()
    assert "| 802.3ad | 2 | 92.0 ±25.4 |" in text and "![" not in text and not (run / "figures").exists()
    assert "<img" not in (run / "report.html").read_text()
    # The same report with its figures: every table reads the same.
    _, with_figures = write_report(run)
    tables = lambda md: [line for line in md.splitlines() if line.startswith("|")]
    assert "![" in with_figures and tables(with_figures) == tables(text)


def test_figures_are_deterministic(tmp_path, experiments):
    run = make_run(tmp_path, datetime(2024, 1, 1), [[90.0, 94.0], [150.0, 140.0]], experiments=experiments)
    a, b = build([run]), build([run])
    assert [f.id for f in a.figures] and [f.svg for f in a.figures] == [f.svg for f in b.figures]
    assert [f.png for f in a.figures] == [f.png for f in b.figures]
    assert a.html == b.html
    svg = a.figures[0].svg.decode()
    assert "<dc:date>" not in svg and "Matplotlib" not in svg


def test_two_runs_in_one_page_and_trimmed_copy_reads_the_same(tmp_path, experiments):
    root = tmp_path / "results"
    ra = make_run(root, datetime(2024, 1, 1), [[90.0], [150.0]], experiments=experiments)
    rb = make_run(root, datetime(2024, 1, 2), [[80.0], [120.0]], experiments=experiments)
    rep = build([ra, rb])
    assert "A: demo/20240101-000000" in rep.markdown and "B: demo/20240102-000000" in rep.markdown
    paths = write(rep, tmp_path / "both")
    assert paths["html"].is_file()
    copy = export(Run.load(ra), tmp_path / "baseline")
    assert not (copy / "points").exists()
    assert Run.load(copy).rows == Run.load(ra).rows
    assert hashlib.sha256(build([copy]).figures[0].svg).digest() == hashlib.sha256(build([ra]).figures[0].svg).digest()


def test_a_baseline_keeps_the_samples_its_figures_need(tmp_path, experiments):
    # Raw tool output (captured from real runs) stays behind in the run; the exported rows carry
    # the idle RTTs and the throughput intervals, so the baseline draws the same distribution
    # and time series as the run itself.
    tools = Path(__file__).parents[1] / "data" / "tools"
    root = tmp_path / "results"
    store = ResultsStore.create(root, "demo", {"fingerprint": "fp", "points": 2, "repetitions": 1,
                                               "matrix": {"bond_mode": ["802.3ad", "balance-rr"], "streams": [1]},
                                               "experiment_file": str(experiments / "demo.yaml")},
                                now=datetime(2024, 1, 3))
    for point in POINTS:
        raw = {"iperf3.json": (tools / "iperf3_tcp_p4.json").read_text(),
               "ping.txt": (tools / "ping_normal.txt").read_text()}
        store.record(point, 1, raw, {"throughput_bps": 9e8, "preflight_ok": True})
    run = Run.load(store.path)
    copy = Run.load(export(run, tmp_path / "baseline"))
    row = copy.rows[0]
    want_ivs = samples.row_intervals(run.path, run.rows[0])
    assert len(want_ivs) >= 5 and row["intervals_bps"] == [[round(t, 3), round(v)] for t, v in want_ivs]
    want_rtts = samples.row_ping_rtts(run.path, run.rows[0])
    assert want_rtts and row["ping_rtts_ms"] == [round(v, 3) for v in want_rtts]
    # read back from the row, not from raw files the copy does not have
    assert not (copy.path / "points").exists()
    assert samples.row_intervals(copy.path, row) == [(round(t, 3), round(v)) for t, v in want_ivs]
    ids = {f.id for f in build([copy.path]).figures}
    assert {"intervals", "ping_rtt"} <= ids, ids


def test_a_flows_axis_value_is_named_by_its_flows_in_labels_and_findings():
    from linklab.results.points import axis_texts, value_text
    one_each_way = [{"name": "up1", "client": "a", "server": "b"}, {"name": "down1", "client": "a", "server": "b"}]
    assert axis_texts(["rrul", json.dumps(one_each_way)]) == ["rrul", "up1+down1"]
    assert value_text([{"client": "a", "server": "b"}]) == "1 items"  # unnamed: its length
    # the same names with other settings stay apart: their JSON, not one text for two points
    other = [{**one_each_way[0], "cc": "bbr"}, one_each_way[1]]
    texts = axis_texts([one_each_way, other])
    assert len(set(texts)) == 2 and all(t.startswith("[") for t in texts)
