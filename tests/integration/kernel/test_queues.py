"""Queues bounded in time, on real packets: a ping behind a full queue waits its bound.

Under software emulation on a shared host the VM is descheduled for milliseconds at a time:
idle pings then spike (to 100+ ms in captures) and a UDP sender pauses long enough for a 5 ms
queue to drain. So the bounds use quantiles of many probes: the median under load stays
within bound + tolerance above the idle median (the queue never holds more than its bound:
with netem's old 1000-packet queue this was 80-100 ms), and the upper quartile shows the queue
did fill to at least half its bound.
"""

import re
import subprocess
import time
from contextlib import contextmanager
from statistics import median, quantiles

import pytest

from linklab import lab, runner
from linklab.backends.linux.names import netns_name
from linklab.measure.ping import Ping


class Lab:
    def __init__(self, path: str, name: str):
        self.name = name
        lab.up(path, name=name, say=lambda *_: None)

    def ns(self, node):
        return netns_name(self.name, node)

    def run(self, node, argv, check=True, timeout=60):
        return runner.run(argv, netns=self.ns(node), check=check, timeout=timeout)

    def down(self):
        if lab.state.load(self.name):
            lab.down(self.name, say=lambda *_: None)


def topology(tmp_path, impair: str, name: str):
    p = tmp_path / f"{name}.yaml"
    p.write_text(f"name: {name}\nscale: 0.1\nhosts: {{h1: {{}}, h2: {{}}}}\n"
                 f"links:\n  - name: wire\n    endpoints: [h1, h2]\n    impair: {{{impair}}}\n")
    return str(p)


def rtts(lb, count=25, need=0.8):
    res = lb.run("h1", Ping(target="10.77.0.2", count=count, interval=0.05).argv(), check=False, timeout=60)
    got = [r.rtt_ms for r in Ping.parse(res.stdout, res.stderr).replies]
    assert len(got) >= count * need, res.stdout
    return got


def backlog_bytes(lb) -> int:
    out = lb.run("h1", ["tc", "-s", "qdisc", "show", "dev", "eth1"], check=False).stdout
    return max((int(n) for n in re.findall(r"backlog (\d+)b", out)), default=0)


@contextmanager
def iperf3_server(lb):
    """A one-shot iperf3 server on h2 for the `with` block, given a second to listen; killed after."""
    server = subprocess.Popen(["ip", "netns", "exec", lb.ns("h2"), "iperf3", "-s", "-1"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)
        yield
    finally:
        server.kill()
        server.wait()


def under_load(lb, client_argv, count=60, need=0.8):
    """Ping h2 while h1 runs `client_argv` against an iperf3 server on h2, once the load has
    built a queue (iperf3 can take seconds to connect under software emulation)."""
    with iperf3_server(lb):
        client = subprocess.Popen(["ip", "netns", "exec", lb.ns("h1"), *client_argv],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while backlog_bytes(lb) == 0 and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(1.0)  # past slow start: the queue is in its steady state
            return rtts(lb, count, need)
        finally:
            client.kill()
            client.wait()


@pytest.mark.parametrize("queue,bound_ms", [("queue: 5ms", 5.0), (None, 10.0)])
def test_udp_overload_waits_the_queue_bound(tmp_path, queue, bound_ms):
    # 200 Mbit/s written = 20 Mbit/s at scale 0.1; UDP at 1.5 times that does not back off, so
    # the byte FIFO fills and a ping waits up to its drain time: the bound, in ms at any scale.
    # Pings share the FIFO with the flood, whose excess it drops.
    # Without a setting the default host port model applies (1000 frames, at most 10 ms).
    # Ping loss: the flood's excess is a third of what it offers, and a 84-byte echo request
    # fits a nearly full byte FIFO at least as often as a 1470-byte datagram does, so at most a
    # third of the pings are dropped; +0.17 for the VM's descheduling (a late reply counts as lost).
    impair = "rate: 200mbit" + (f", {queue}" if queue else "")
    lb = Lab(topology(tmp_path, impair, "itqueue"), "itqueue")
    try:
        idle = rtts(lb, 40)
        load = under_load(lb, ["iperf3", "-c", "10.77.0.2", "-u", "-b", "30M", "-t", "40"], count=80, need=0.5)
        base = median(idle)
        added_p50 = median(load) - base
        added_p75 = quantiles(load, n=4)[2] - base
        # Tolerance: +3 ms on the median (descheduling); the upper quartile at least half the bound.
        assert added_p50 <= bound_ms + 3.0, (idle, load)
        assert added_p75 >= 0.5 * bound_ms, (idle, load)
    finally:
        lb.down()


def test_tcp_bulk_rtt_under_load_stays_within_host_port_model(tmp_path):
    # One 1 Gbit/s-written link at scale 0.1 (100 Mbit/s), default queue: TCP small queues hold
    # the sender back, so ping under a bulk flow waits at most the 10 ms host-port bound (it was
    # 81-104 ms with netem's 1000-packet queue). Two-sided: never below idle by more than noise,
    # never above idle + 10 ms + 5 ms tolerance (median).
    lb = Lab(topology(tmp_path, "rate: 1gbit", "ittcpq"), "ittcpq")
    try:
        idle = rtts(lb, 40)
        load = under_load(lb, ["iperf3", "-c", "10.77.0.2", "-t", "40"])
        added_med = median(load) - median(idle)
        assert -2.0 <= added_med <= 15.0, (idle, load)
        qdisc = runner.run(["tc", "-s", "qdisc", "show", "dev", "eth1"], netns=lb.ns("h1")).stdout
        assert "bfifo" in qdisc and "limit 125000b" in qdisc, qdisc
    finally:
        lb.down()


def _udp(lb, asked: str, seconds: int = 5):
    """One UDP flow h1 -> h2 at `asked` (iperf3 -u -b): its report (sent and received rates, loss)."""
    from linklab.measure.iperf3 import Iperf3Client
    with iperf3_server(lb):
        res = lb.run("h1", ["iperf3", "-c", "10.77.0.2", "-u", "-b", asked, "-t", str(seconds), "-J"], timeout=60)
    return Iperf3Client.parse(res.stdout)


def test_a_udp_generator_is_held_to_its_own_link_unless_the_shaper_detaches_its_packets(tmp_path):
    """E4's variant (experiments/e4_jumbo_ipv6.yaml): UDP asked for 1.5 times a 100 Mbit/s link
    (1 Gbit/s written, scale 0.1). With linklab's shaper (htb over a byte FIFO) a queued packet
    stays charged to its socket, so the sender cannot send faster than the link drains: it sends
    at most the link's rate (+10 % for the rate's burst and the report's edges) and loses little
    (under 10 %: what a receiver's socket buffer drops). With netem as the shaper (it detaches
    packets) the sender sends what it is asked, at least 1.3 times the link, and the link drops at
    least the excess over what it carries (1 - 1.05 x link / sent), at most 60 %."""
    link_bps = 100e6
    lb = Lab(topology(tmp_path, "rate: 1gbit", "itudp"), "itudp")
    try:
        held = _udp(lb, "150M")
        lab.set_params("itudp", [("links[wire].impair.shaper", "netem")], say=lambda *_: None)
        free = _udp(lb, "150M")
    finally:
        lb.down()
    figures = [(r.sent_bps / 1e6, r.received_bps / 1e6, r.lost_percent) for r in (held, free)]
    print(f"\nUDP asked 150 Mbit/s on 100: (sent, received Mbit/s, lost %) htb {figures[0]}, netem {figures[1]}")
    assert held.sent_bps <= 1.1 * link_bps and held.lost_percent < 10, figures
    # netem detached its packets on Debian's kernel 6.1.0-56 and held the sender on 6.1.0-57
    # (bench/README.md#queues-and-shapers, not yet explained): either is asserted with its own bounds, and named.
    if free.sent_bps >= 1.3 * link_bps:
        assert 100 * (1 - 1.05 * link_bps / free.sent_bps) <= free.lost_percent <= 60, figures
    else:
        print("netem held the sender on this kernel (no detached packets)")
        assert free.sent_bps <= 1.1 * link_bps and free.lost_percent < 10, figures
