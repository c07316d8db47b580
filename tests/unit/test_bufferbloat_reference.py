"""experiments/bufferbloat.reference.yaml's findings as computed verdicts (linklab/published/
findings.py) on synthetic rows of the bufferbloat matrix: every finding agrees on rows that behave
as the RFCs say, and each differs on rows where its one design does not."""

from pathlib import Path

import pytest

from linklab.published import figures, findings
from linklab.results.points import group
from linklab.results.runs import Run
from linklab.verdict import metrics

ROOT = Path(__file__).resolve().parents[2]
REF = figures.load_reference(ROOT / "experiments" / "bufferbloat.reference.yaml")
AQM, PARAMS = "links[bottleneck].impair.aqm", "links[bottleneck].impair.aqm_params"
ECN = {"ecn": True}

# What each design does under RRUL on the dumbbell, as the literature says: (queue p50 ms, ping
# added p50 ms, marks, drops, goodput bit/s summed over both directions at scale 0.1)
AGREEING = {
    ("fifo", "{}"): (98.0, 210.0, None, 900, 188e6),
    ("fq_codel", "{}"): (4.8, 1.2, 0, 400, 186e6),
    ("fq_codel", "ecn"): (5.1, 1.4, 380, 3, 187e6),
    ("cake", "{}"): (4.5, 0.9, 350, 2, 184e6),
    ("pie", "{}"): (14.0, 16.0, 0, 300, 183e6),
    ("pie", "ecn"): (15.5, 17.0, 290, 20, 185e6),
}


def rows_of(behaviour: dict) -> list[dict]:
    rows = []
    for i, ((aqm, params), (queue, added, marks, drops, bps)) in enumerate(behaviour.items()):
        rows.append({"point_index": i, "point_id": f"p{i}", "rep": 1, AQM: aqm, PARAMS: ECN if params == "ecn" else {},
                     "queue_backlog_p50_ms": queue, "load_ping_added_p50_ms": added, "queue_marks": marks,
                     "queue_drops": drops, "throughput_bps": bps,
                     "goodput_up_bps": bps / 2, "goodput_down_bps": bps / 2, "ping_rtt_p50_ms": 20.5, "path_asked_rtt_ms": 20.0})
    return rows


def verdicts(behaviour: dict, tmp_path: Path) -> dict[str, findings.Verdict]:
    run = Run(tmp_path, {"matrix": {AQM: [], PARAMS: []}, "scale": 0.1}, rows_of(behaviour))
    return {v.id: v for v in findings.evaluate(REF, group(run), run.scale)}


def test_every_finding_agrees_where_each_design_does_what_the_rfcs_say(tmp_path):
    got = verdicts(AGREEING, tmp_path)
    assert list(got) == [f["id"] for f in REF["findings"]] and len(got) == 12
    assert {k: v.verdict for k, v in got.items() if v.verdict != findings.AGREES} == {}
    # the measured text names what was compared: the FIFO's ping added 210 ms, fq_codel's 1.2 and 1.4
    assert got["fifo-adds-its-length"].measured == f"load_added_ms {AQM}=fifo {{}}: 210"
    assert got["fq-sparse-flow-beats-fifo"].measured.endswith("all: 0.00571, all: 0.00667")  # 1.2/210, 1.4/210
    assert got["ecn-marks-instead-of-drops"].measured == (f'marked_share {AQM}=fq_codel {{"ecn": true}}: 0.992, '
                                                          f'{AQM}=pie {{"ecn": true}}: 0.935')  # 380/383, 290/310
    # RRUL's flows go both ways: the link's share is the busier direction's goodput (94 Mbit/s of the
    # 95.7 a 100 Mbit/s link carries at MTU 1500), not the sum of both
    assert f"{AQM}=fifo {{}}: 98 % of 1 member(s)' goodput → link-bound" in got["fifo-fills"].mechanism


def _with(key: tuple[str, str], **changes) -> dict:
    fields = ("queue", "added", "marks", "drops", "bps")
    out = dict(AGREEING)
    values = dict(zip(fields, out[key]))
    values.update(changes)
    out[key] = tuple(values[f] for f in fields)
    return out


# The sparse flow's two findings overlap: its delay near idle (<= 5 ms) beside a FIFO adding >= 70 ms
# is under a tenth of it, so the ratio differs only where one of those differs too.
SPARSE = {"fq-sparse-flow-beats-fifo"}


@pytest.mark.parametrize("finding,behaviour,also", [
    ("fifo-fills", _with(("fifo", "{}"), queue=30.0), set()),                  # a FIFO that never filled
    ("fifo-adds-its-length", _with(("fifo", "{}"), added=12.0), SPARSE),         # its queue not in the ping's path
    ("codel-holds-target", _with(("fq_codel", "ecn"), queue=40.0), set()),      # one fq_codel point with a standing queue
    ("cake-holds-target", _with(("cake", "{}"), queue=60.0), set()),
    ("pie-holds-target", _with(("pie", "{}"), queue=45.0), set()),
    ("fq-sparse-flow-near-idle", _with(("fq_codel", "{}"), added=8.0), set()),  # 8/210 still under a tenth
    ("fq-sparse-flow-near-idle", _with(("fq_codel", "{}"), added=25.0), SPARSE),  # the ping waited behind the bulk
    ("ecn-marks-instead-of-drops", _with(("pie", "ecn"), marks=10, drops=300), set()),  # ECN asked, drops still
    ("cake-marks", _with(("cake", "{}"), marks=0, drops=300), set()),
    ("fq_codel-keeps-goodput", _with(("fq_codel", "{}"), bps=150e6), set()),    # 150/188 = 0.80
    ("cake-keeps-goodput", _with(("cake", "{}"), bps=220e6), set()),            # 1.17: two-sided
    ("pie-keeps-goodput", _with(("pie", "ecn"), bps=160e6), set()),
])
def test_each_finding_differs_where_its_design_does_not(tmp_path, finding, behaviour, also):
    got = verdicts(behaviour, tmp_path)
    assert {k for k, v in got.items() if v.verdict != findings.AGREES} == {finding} | also
    assert got[finding].verdict == findings.DIFFERS


def test_marked_share_is_marks_over_every_congestion_signal():
    share = metrics.BY_KEY["marked_share"].get
    assert share({"queue_marks": 380, "queue_drops": 20}) == pytest.approx(0.95)
    assert share({"queue_marks": 0, "queue_drops": 400}) == 0.0
    assert share({"queue_marks": None, "queue_drops": 400}) is None  # a FIFO cannot mark: no share
    assert share({"queue_marks": 0, "queue_drops": 0}) is None        # no signal at all: no share


def test_a_quick_run_without_cake_or_pie_leaves_their_findings_not_measured(tmp_path):
    quick = {k: v for k, v in AGREEING.items() if k in (("fifo", "{}"), ("fq_codel", "{}"))}
    got = verdicts(quick, tmp_path)
    assert {k for k, v in got.items() if v.verdict == findings.NOT_MEASURED} == {
        "cake-holds-target", "pie-holds-target", "ecn-marks-instead-of-drops", "cake-marks", "cake-keeps-goodput",
        "pie-keeps-goodput"}
    assert {k for k, v in got.items() if v.verdict == findings.AGREES} == {
        "fifo-fills", "fifo-adds-its-length", "codel-holds-target", "fq-sparse-flow-near-idle",
        "fq-sparse-flow-beats-fifo", "fq_codel-keeps-goodput"}
