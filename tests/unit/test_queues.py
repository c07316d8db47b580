"""Queues bounded in time: the same milliseconds at every scale, in the tc plan as bytes."""

import pytest

from linklab import units
from linklab.linux import tc
from linklab.model import Context, load_topology, paths, queues, resolve


def lab_from(tmp_path, text, scale):
    p = tmp_path / "t.yaml"
    p.write_text(text)
    return resolve(load_topology(p), Context(scale_override=scale))


@pytest.mark.parametrize("text,want", [("5ms", ("time", 0.005)), ("256kb", ("bytes", 262144.0)),
                                       (100, ("packets", 100.0)), ("100p", ("packets", 100.0)),
                                       ("250us", ("time", 0.00025))])
def test_parse_queue_kinds(text, want):
    assert units.parse_queue(text) == want


@pytest.mark.parametrize("text", ["5 parsecs", "0ms", "1.5p", "-3ms"])
def test_parse_queue_rejects(text):
    with pytest.raises(ValueError):
        units.parse_queue(text)


@pytest.mark.parametrize("spec", [("time", 0.005), ("bytes", 256 * 1024.0), ("packets", 50.0)])
def test_queue_delay_does_not_depend_on_scale(spec):
    full = queues.size(spec, 1e9, 1.0, 1500, "host")
    tenth = queues.size(spec, 1e9, 0.1, 1500, "host")
    assert tenth.seconds == pytest.approx(full.seconds, rel=1e-3)
    assert tenth.bytes == pytest.approx(full.bytes / 10, rel=1e-3)  # bytes scale with the rate


def test_defaults_model_host_nic_and_switch_port():
    host = queues.size(None, 1e9, 0.1, 1500, "host")
    assert host.seconds == pytest.approx(0.010) and host.bytes == 125000  # 1000 frames = 12.1 ms, capped at 10
    slow = queues.size(None, 100e6, 1.0, 1500, "host")
    assert slow.seconds == pytest.approx(0.010)
    fast = queues.size(None, 10e9, 1.0, 1500, "host")
    assert fast.seconds == pytest.approx(1000 * 1514 * 8 / 10e9)  # 1000 frames binds first
    # A switch port: 256 KiB at the original rate (2.1 ms) where that holds a burst of the
    # shaper before it natively...
    sw = queues.size(None, 1e9, 1.0, 1500, "switch")
    assert sw.seconds == pytest.approx(256 * 1024 * 8 / 1e9) and "switch" in sw.source and "raised" not in sw.source


def test_a_switch_port_holds_a_burst_of_the_shaper_before_it():
    # ...but at scale 0.1 those 2.1 ms are 26 KB: fewer than three 9000-byte frames, less than the
    # 64 kB an htb shaper upstream releases when the emulator's timer fires late. Measured through
    # three bridges at MTU 9000: 0.36-0.46 of theory with 26 KB, 0.996 with bucket + 2 frames.
    for mtu in (1500, 9000):
        sw = queues.size(None, 1e9, 0.1, mtu, "switch")
        assert sw.bytes == queues.HTB_BUCKET_FLOOR + 2 * (mtu + paths.ETHERNET_HEADER)
        assert sw.seconds == pytest.approx(sw.bytes * 8 / 1e8) and "a burst of the shaper before it" in sw.source
    # The same floor holds against a queue asked in time; a host port keeps its own (2 frames).
    asked = queues.size(("time", 0.002), 1e9, 0.1, 9000, "switch", bucket=64000)
    assert asked.bytes == 64000 + 2 * 9014
    assert queues.size(("time", 0.002), 1e9, 0.1, 9000, "host").bytes == 25000
    # A bigger bucket (faster links: 1.6 ms of the rate) raises the floor with it.
    assert queues.size(None, 10e9, 1.0, 1500, "switch").bytes == queues.bucket_bytes("htb", 10e9, 1500) + 2 * 1514


def test_buckets_follow_the_shaper_and_the_rate():
    assert queues.bucket_bytes("htb", 1e8, 1500) == 64000  # the floor: room for a GSO packet
    assert queues.bucket_bytes("htb", 1e10, 1500) == int(1e10 / 8 * 0.0016)  # 1.6 ms of the rate
    assert queues.bucket_bytes("tbf", 1e8, 1500) == 20000
    assert queues.bucket_bytes("htb", 1e6, 65000) == 4 * 65014  # a jumbo frame needs room too
    assert queues.bucket_bytes("htb", 1e8, 1500, asked=30000) == 30000


def test_queue_never_below_a_segment_pair():
    q = queues.size(("time", 0.0001), 10e6, 0.1, 1500, "host")
    assert q.bytes == 2 * 1514 and "raised" in q.source


def test_netem_limit_covers_queue_and_delay_line():
    q = queues.size(("time", 0.005), 1e9, 0.1, 1500, "host")  # 62500 bytes at 100 Mbit/s
    assert queues.packets(q, 1500) == 42
    assert queues.packets(q, 1500, 1e8, 0.010) == 42 + 83  # 10 ms of 100 Mbit/s in flight


def test_resolved_queue_per_direction_and_member(tmp_path):
    text = ("name: q\nscale: 0.1\nhosts: {a: {}, b: {}}\n"
            "links:\n  - endpoints: [a, b]\n    bond: {members: 2, mode: balance-rr,"
            " member: [{impair: {queue: 1ms}}]}\n"
            "    impair: {rate: 1gbit, queue: 5ms, from: {b: {queue: 64kb}}}\n")
    lab = lab_from(tmp_path, text, 0.1)
    m0, m1 = lab.links[0].veths
    assert m0.egress_a.queue_s == pytest.approx(0.001) and m0.egress_a.queue_bytes == 12500
    assert m1.egress_a.queue_s == pytest.approx(0.005) and m1.egress_a.queue_bytes == 62500
    assert m1.egress_b.queue_bytes == int(round(64 * 1024 * 0.1)) and m1.egress_b.queue_source == "queue: 65536b"
    assert m1.egress_a.shaper == "htb" and m1.egress_a.queue_holder == "bfifo"


def test_htb_plan_bounds_queue_with_bfifo_and_under_netem_where_the_port_forwards(tmp_path):
    text = ("name: q\nrouting: none\nhosts: {a: {}, b: {}}\nrouters: {r: {}}\n"
            "links: [{endpoints: [a, b], impair: {rate: 1gbit, queue: 5ms}},"
            "        {endpoints: [a, r], impair: {rate: 1gbit, queue: 5ms, delay: 10ms}}, {endpoints: [r, b]}]\n")
    lab = lab_from(tmp_path, text, 0.1)
    plain = tc.plan(lab.links[0].veths[0].egress_a, 1500, "e")
    assert plain[-1][-5:] == ["handle", "10:", "bfifo", "limit", "62500"]
    # A host's own port with a delay: netem under htb holds the queue, its limit in frames (the
    # queue's 42 and the delay line's 83): netem detaches packets from their socket, and a byte
    # bound there drops the bursts a real host's small queues would have held back.
    host = lab.links[1].veths[0].egress_a
    assert not host.forwards and host.queue_holder == "netem" and host.limit == 42 + 83
    assert tc.plan(host, 1500, "e")[-1][5:10] == ["parent", "1:1", "handle", "10:", "netem"]
    # A router's port (it forwards: no socket to hold back): the same byte FIFO under netem holds
    # the queue, and netem's limit, counted in 64-byte frames, never binds first: the FIFO's bytes
    # (a forwarding port's floor: the shaper's 64000-byte bucket and 2 frames) and the delay line
    # (10 ms at 100 Mbit/s).
    router = lab.links[1].veths[0].egress_b
    assert router.forwards and router.queue_holder == "bfifo" and router.queue_bytes == 64000 + 2 * 1514
    assert router.limit == 1048 + 1954
    netem, fifo = tc.plan(router, 1500, "e")[-2:]
    assert netem[5:10] == ["parent", "1:1", "handle", "10:", "netem"] and netem[-2:] == ["limit", "3002"]
    assert fifo[5:] == ["parent", "10:1", "handle", "20:", "bfifo", "limit", "67028"]
    # A change of the queue alone is made in place, FIFO and netem both.
    wider = router.model_copy(update={"queue_bytes": 125000, "limit": 2000})
    assert [c[1:3] for c in tc.change_plan(router, wider, 1500, "e")] == [["class", "change"], ["qdisc", "change"],
                                                                         ["qdisc", "change"]]
    assert "forwards" not in host.model_dump() and router.model_dump()["forwards"] is True


def test_tbf_with_netem_bounds_its_queue_with_the_same_fifo():
    from linklab.model.resolved import Qdisc
    plan = tc.plan(Qdisc(shaper="tbf", rate_bps=1e8, delay_s=0.01, queue_bytes=62500, limit=3000, forwards=True),
                   1500, "e")
    assert [c[-3:] for c in plan[1:]] == [["10000us", "limit", "3000"], ["bfifo", "limit", "62500"]]
    assert Qdisc(shaper="tbf", rate_bps=1e8, queue_bytes=62500).queue_holder == "tbf"


def test_tbf_takes_the_queue_as_its_byte_limit():
    from linklab.model.resolved import Qdisc
    plan = tc.plan(Qdisc(shaper="tbf", rate_bps=1e8, queue_bytes=62500), 1500, "e")
    assert plan[0][-2:] == ["limit", "62500"]


def test_socket_buffers_scale_with_rates_and_say_so(tmp_path):
    text = ("name: w\nscale: 0.1\nhosts: {a: {sysctls: {net.ipv4.tcp_rmem: '4096 131072 4194304',"
            " net.core.rmem_max: 16777216, net.ipv4.tcp_reordering: 3}}, b: {}}\n"
            "links: [{endpoints: [a, b], impair: {rate: 1gbit}}]\n")
    lab = lab_from(tmp_path, text, 0.1)
    s = lab.node("a").sysctls
    assert s["net.ipv4.tcp_rmem"] == "4096 13107 419430" and s["net.core.rmem_max"] == "1677721"
    assert s["net.ipv4.tcp_reordering"] == "3"  # not a size
    assert any("tcp_rmem scaled x0.1" in n for n in lab.notes)
    assert lab_from(tmp_path, text, 1.0).node("a").sysctls["net.ipv4.tcp_rmem"] == "4096 131072 4194304"


def test_fifo_limit_from_undecoded_options():
    assert tc.fifo_limit("48:30:00:00") == 12360  # raw little-endian u32, as pyroute2 hands it over
    assert tc.fifo_limit({"limit": 62500}) == 62500
    assert tc.fifo_limit("zz") is None and tc.fifo_limit("01") is None


def test_a_ports_gso_packets_fit_its_fifo_twice():
    # 10 ms at 20 Mbit/s (25 kB): 12.5 kB packets, where Linux's 64 KiB ones never fit
    assert queues.gso_cap(25_000, 1500) == 12_500
    # a FIFO that holds two of Linux's biggest, or no FIFO: Linux's default
    assert queues.gso_cap(2 * 65536, 1500) == queues.gso_cap(None, 1500) == queues.GSO_MAX_BYTES == 65536
    assert queues.gso_cap(2 * 65536 - 2, 1500) == 65535
    # never below one frame: a FIFO of two jumbo frames takes one at a time
    frame = int(paths.frame_bytes(9000))
    assert queues.gso_cap(2 * frame, 9000) == frame and queues.gso_cap(frame, 9000) == frame
    assert all(isinstance(queues.gso_cap(q, m), int) for q in (None, 1000, 25_000, 10**6) for m in (1500, 9000))
