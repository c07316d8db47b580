"""Queue evidence over the window: the xstats decoders (ECN marks, delay), each direction's
summary (backlog in ms of its rate, drops, marks), the row's choice of the bottleneck, and the
sampler probe on faked netlink dumps (no kernel read here)."""

import struct
import time

import pytest

from linklab.handle import LabHandle
from linklab.linux import xstats
from linklab.measure import queue_evidence as qe
from linklab.measure.probes import queues as probe_mod
from linklab.measure.probes.base import Repetition
from linklab.model import Context, load_topology, resolve


def nla(kind, payload):
    return struct.pack("HH", 4 + len(payload), kind) + payload + b"\0" * (-len(payload) % 4)


@pytest.mark.parametrize("kind,raw,want", [
    # tc_fq_codel_xstats: type 0 (the qdisc), maxpacket, drop_overlimit, ecn_mark, ...
    ("fq_codel", struct.pack("10I", 0, 1514, 0, 412, 9, 0, 4, 0, 0, 0), (412, None)),
    ("fq_codel", struct.pack("8I", 1, 0, 0, 0, 0, 0, 0, 0), (None, None)),  # a class's statistics
    # tc_codel_xstats: maxpacket, count, lastcount, ldelay (us), drop_next, drop_overlimit, ecn_mark, ...
    ("codel", struct.pack("4Ii4I", 1514, 14, 11, 6123, -2411, 0, 7, 1, 0), (7, 0.006123)),
    # tc_pie_xstats: u64 prob, u32 delay (us), avg_dq_rate, dq_rate_estimating, packets_in,
    # dropped, overlimit, maxq, ecn_mark
    ("pie", struct.pack("Q8I", 123, 11042, 0, 0, 31781, 21, 0, 41, 305), (305, 0.011042)),
    ("fq_pie", struct.pack("9I", 31152, 2, 0, 0, 96, 5, 0, 4, 92160), (96, None)),
    ("red", struct.pack("4I", 0, 4, 0, 118), (118, None)),
    ("fq", struct.pack("8q4IQ", 0, 0, 0, 0, 57, 0, 0, 0, 6, 2, 0, 0, 33), (33, None)),
    ("bfifo", b"", (None, None)),
    ("netem", struct.pack("4I", 1, 2, 3, 4), (None, None)),
    ("codel", struct.pack("2I", 1, 2), (None, None)),  # cut short: nothing made up
])
def test_xstats_give_marks_and_delay_where_the_discipline_reports_them(kind, raw, want):
    assert xstats.decode(kind, raw) == want


def test_cakes_marks_are_its_tins_and_its_delay_the_largest_tin_average():
    def tin(marks, avg_us):
        return nla(xstats.TIN_ECN_MARKED_PACKETS, struct.pack("I", marks)) + \
            nla(xstats.TIN_AVG_DELAY_US, struct.pack("I", avg_us)) + nla(2, struct.pack("I", 99))
    raw = nla(3, struct.pack("I", 1 << 20)) + nla(xstats.CAKE_TIN_STATS | 0x8000,
                                                   nla(1 | 0x8000, tin(200, 3870)) + nla(2 | 0x8000, tin(33, 9100)))
    assert xstats.decode("cake", raw) == (233, 0.0091)
    assert xstats.decode("cake", nla(3, struct.pack("I", 5))) == (None, None)


def samples(backlogs, drops=None, marks=None, delays=None, dt=0.1):
    n = len(backlogs)
    drops, marks, delays = drops or [0] * n, marks or [None] * n, delays or [None] * n
    return [qe.Sample(t=round(k * dt, 3), backlog_bytes=b, backlog_pkts=b // 1514, drops=d, marks=m, delay_s=s)
            for k, (b, d, m, s) in enumerate(zip(backlogs, drops, marks, delays))]


def test_backlog_is_read_in_milliseconds_of_the_directions_rate_past_slow_start():
    # 20 Mbit/s: 250000 bytes wait 100 ms; 25000 bytes 10 ms. The first second (slow start) is skipped.
    s = samples([250000] * 10 + [25000] * 10 + [250000] * 10, drops=list(range(0, 30)))
    got = qe.direction(s, 20e6, skip_s=1.0)
    assert got["backlog_p50_ms"] == pytest.approx(55.0) and got["backlog_p95_ms"] == pytest.approx(100.0)
    assert got["drops"] == 29 and got["marks"] is None and got["samples"] == 30
    assert got["delay_p50_ms"] is None


def test_drops_and_marks_count_the_whole_window_and_delay_is_the_disciplines():
    s = samples([15140] * 20, drops=[3] * 10 + [5] * 10, marks=[100 + k for k in range(20)],
                delays=[0.004] * 10 + [0.006] * 10)
    got = qe.direction(s, 50e6, skip_s=0.5)
    assert got["drops"] == 2 and got["marks"] == 19
    assert got["delay_p50_ms"] == pytest.approx(6.0) and got["delay_p95_ms"] == pytest.approx(6.0)
    assert got["backlog_p50_ms"] == pytest.approx(15140 * 8 / 50e6 * 1e3, abs=1e-3)


def test_the_row_keeps_the_bottlenecks_queue_and_names_it():
    busy = qe.direction(samples([250000] * 20, drops=list(range(20))), 20e6, 0.0)
    idle = qe.direction(samples([0] * 20), 20e6, 0.0)
    row = qe.row({"h1/eth1": idle, "s1/eth2": busy})
    assert row["queue_at"] == "s1/eth2" and row["queue_backlog_p95_ms"] == pytest.approx(100.0)
    assert row["queue_drops"] == 19 and row["queue_samples"] == 20
    assert qe.row({}) == {} and qe.direction([], 1e6, 0) == {"samples": 0}


def test_the_sampler_reads_each_shaped_directions_holder_at_ten_hertz(tmp_path, monkeypatch):
    p = tmp_path / "t.yaml"
    p.write_text("name: q\nhosts: {a: {}, b: {}}\n"
                 "links: [{endpoints: [a, b], impair: {rate: 20mbit, queue: 100ms, aqm: codel, from: {b: {aqm: fifo}}}}]\n")
    lab = resolve(load_topology(p), Context(scale_override=1.0))
    handle = LabHandle(lab, backend=object(), netns={"a": "ns-a", "b": "ns-b"})
    reads = []

    def qdiscs(ns):
        reads.append(ns)
        k = len(reads)
        holder = {"kind": "codel", "xstats": struct.pack("4Ii4I", 1514, 0, 0, 5000, 0, 0, k, 0, 0)} if ns == "ns-a" \
            else {"kind": "bfifo", "xstats": None}
        return [{"ifindex": 7, "handle": 1 << 16, "parent": 0xFFFFFFFF, "kind": "htb", "stats": {"backlog": 0}},
                {"ifindex": 7, "handle": 0x10 << 16, "parent": 0x10001, "kind": holder["kind"],
                 "stats": {"backlog": 125000 if ns == "ns-a" else 25000, "qlen": 83, "drops": k,
                           "xstats": holder["xstats"]}}]
    monkeypatch.setattr(probe_mod.netlink, "links", lambda ns: [{"ifname": "eth1", "index": 7}])
    monkeypatch.setattr(probe_mod.netlink, "qdiscs", qdiscs)
    rep = Repetition(handle, "a", "b", 4, omit=0.0)
    sampler = probe_mod.QueueSampler(interval=0.02)
    sampler.before(rep)
    assert {k: v[2] for k, v in sampler.directions.items()} == {"a/eth1": "codel", "b/eth1": "bfifo"}
    rep.opened = time.monotonic() - 2.0  # past the load ping's skip: every sample is steady
    sampler.start(rep)
    deadline = time.monotonic() + 5
    while len(sampler.samples["a/eth1"]) < 8 and time.monotonic() < deadline:
        time.sleep(0.02)
    sampler.finish(rep)
    row = sampler.row(rep)
    ts = [s.t for s in sampler.samples["a/eth1"]]
    assert len(ts) >= 8 and len(reads) == 2 * len(ts)  # one dump per namespace per sample
    gaps = sorted(b - a for a, b in zip(ts, ts[1:]))
    assert 0.5 * 0.02 <= gaps[len(gaps) // 2] <= 3 * 0.02  # at its interval (a busy machine delays some)
    assert row["queue_at"] == "a/eth1" and row["queue_backlog_p50_ms"] == pytest.approx(50.0)  # 125000 B at 20 Mbit/s
    assert row["queue_delay_p50_ms"] == pytest.approx(5.0)
    a = [s for s in sampler.samples["a/eth1"]]
    assert a[-1].marks > a[0].marks and sampler.samples["b/eth1"][0].marks is None
    assert '"a/eth1"' in rep.raw["queues.json"] and '"series_columns"' in rep.raw["queues.json"]
