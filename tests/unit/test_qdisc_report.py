"""`tc -s -j qdisc show` parsed: what `linklab status`, `show` and the manifest record of a queue
discipline. The htb/bfifo file is a real capture; the disciplines' file is hand-made from
iproute2's JSON printers (the host kernel has none of them: tests/data/tools/README.md)."""

from pathlib import Path

import pytest

from linklab.linux import qdisc_report
from linklab.status_view import _qdisc_text

DATA = Path(__file__).resolve().parents[1] / "data" / "tools"


def reports(name):
    return {(r["dev"], r["kind"]): r for r in qdisc_report.parse((DATA / name).read_text())}


def test_the_real_capture_gives_the_envelope_every_report_has():
    got = reports("tc_s_j_qdisc_htb_bfifo.json")
    htb, fifo = got[("v0", "htb")], got[("v0", "bfifo")]
    assert htb["parent"] == "root" and htb["handle"] == "1:" and htb["packets"] == 5 and htb["bytes"] == 426
    assert fifo["parent"] == "1:1" and fifo["options"] == {"limit": 100} and fifo["packets"] == 4
    assert fifo["backlog_bytes"] == 0 and fifo["backlog_pkts"] == 0 and fifo["drops"] == 0
    assert fifo["marks"] is None and fifo["delay_s"] is None  # a FIFO neither marks nor reports a delay


@pytest.mark.parametrize("dev,kind,marks,delay_s,backlog,drops", [
    ("eth1", "fq_codel", 412, None, 30280, 3),  # fq_codel reports sojourn per flow only
    ("eth2", "codel", 0, 0.006123, 13626, 188),
    ("eth3", "pie", 305, 0.011042, 22710, 21),
    ("eth4", "fq_pie", 96, None, 15140, 2),
    ("eth5", "fq", 0, None, 60560, 57),
    ("eth6", "cake", 233, 0.00387, 7570, 11),  # its tins' ecn_mark and avg_delay_us
    ("eth7", "red", 118, None, 33308, 4),
])
def test_each_disciplines_marks_delay_backlog_and_drops(dev, kind, marks, delay_s, backlog, drops):
    r = reports("tc_s_j_qdisc_aqms.handmade.json")[(dev, kind)]
    assert (r["marks"], r["delay_s"], r["backlog_bytes"], r["drops"]) == (marks, delay_s, backlog, drops)
    assert r["parent"] == "1:1" and r["handle"] == "10:"


def test_options_keep_the_kernels_names_with_times_in_seconds():
    got = reports("tc_s_j_qdisc_aqms.handmade.json")
    fq_codel = got[("eth1", "fq_codel")]["options"]
    assert fq_codel["target"] == 0.005 and fq_codel["interval"] == 0.1 and fq_codel["limit"] == 166
    assert fq_codel["ecn"] is True
    assert got[("eth6", "cake")]["options"]["rtt"] == 0.1 and got[("eth1", "htb")]["options"]["r2q"] == 10
    assert qdisc_report.summary(got[("eth2", "codel")]) == "codel limit 166 target 5ms interval 100ms"
    assert qdisc_report.summary(got[("eth7", "red")]).startswith("red limit 250000 min 25000 max 75000 ecn ")


def test_status_shows_what_the_kernel_built_and_hides_only_its_own_defaults():
    r = reports("tc_s_j_qdisc_aqms.handmade.json")[("eth3", "pie")]
    text = _qdisc_text([{"kind": "htb", "handle": "1:", "rate_bps": 2e7},
                        {"kind": "pie", "handle": "10:", "report": r}])
    assert text == "htb rate 20mbit / pie limit 166 target 15ms tupdate 15ms alpha 2 beta 20 ecn"
    assert _qdisc_text([{"kind": "fq_codel", "handle": "0:"}]) == ""  # a kernel's default root
    assert _qdisc_text([{"kind": "fq_codel", "handle": "1:"}]) == "fq_codel"


def test_not_a_list_is_refused():
    with pytest.raises(ValueError):
        qdisc_report.parse('{"kind": "htb"}')
    assert qdisc_report.parse("") == []


def test_the_manifest_records_the_disciplines_of_the_nodes_that_have_one(tmp_path, monkeypatch):
    from linklab.handle import LabHandle
    from linklab.model import Context, load_topology, resolve
    from linklab.sweep import engine

    def lab(impair):
        p = tmp_path / "t.yaml"
        p.write_text(f"name: q\nhosts: {{a: {{}}, b: {{}}}}\nlinks: [{{endpoints: [a, b], impair: {impair}}}]\n")
        lb = resolve(load_topology(p), Context(scale_override=1.0))
        return LabHandle(lb, backend=object(), netns={"a": "ns-a", "b": "ns-b"})

    text = (DATA / "tc_s_j_qdisc_aqms.handmade.json").read_text()
    read = []
    monkeypatch.setattr(engine.qdisc_report, "read", lambda ns: read.append(ns) or qdisc_report.parse(text))
    assert engine._disciplines_at_start(lab("{rate: 20mbit}")) == {} and read == []  # FIFOs: no key, no tc
    got = engine._disciplines_at_start(lab("{rate: 20mbit, from: {a: {aqm: fq_codel}}}"))
    assert read == ["ns-a"] and list(got["queue_disciplines_at_start"]) == ["a"]
    assert {r["kind"] for r in got["queue_disciplines_at_start"]["a"]} == set(qdisc_report.AQM_KINDS)
