"""Queue disciplines on real packets (impair.aqm): bufferbloat in a 100 ms FIFO, FQ-CoDel holding
the same link's queue near its 5 ms target at the same goodput, and ECN marks instead of drops.

The bottleneck is a switch port, h1 -> s1 -> h2 with the s1 -> h2 direction shaped: packets a
switch forwards have no socket, so four TCP flows fill its queue as they would a router's
(a host's own port holds its sender back through TCP small queues: ping under a bulk flow
waited ~8 ms there, test_queues.py). One lab, changed in place with `linklab set` between the
phases (fifo -> fq_codel rebuilt; ecn off -> on changed in place). About 2 min in the lab VM
(two labs, three loaded windows of LOAD_S).

Under software emulation the VM is descheduled for milliseconds at a time, so every bound is
on medians of many pings, with its tolerance stated where it is made.
"""

import subprocess
import time
from statistics import median

import pytest

from linklab import lab, state
from linklab.handle import LabHandle
from linklab.linux import qdisc_report
from linklab.measure import queue_evidence
from linklab.measure.iperf3 import Iperf3Client
from linklab.measure.ping import Ping
from linklab.measure.probes.base import Repetition
from linklab.measure.probes.queues import QueueSampler

RATE_BPS = 30e6  # as run: far below the lab VM's veth (~700 Mbit/s under emulation), so the shaper is the bottleneck
FLOWS = 4
LOAD_S = 14  # iperf3's time; pings run from SETTLE_S into it
SETTLE_S = 4.0  # slow start over, the queue in its steady state (iperf3 may take seconds to connect)
PINGS = 80  # 8 s at 0.1 s
TOPOLOGY = """\
name: {name}
scale: auto
defaults:
  sysctls: {{net.ipv4.tcp_ecn: 1}}
hosts: {{h1: {{}}, h2: {{}}}}
switches: {{s1: {{}}}}
links:
  - {{name: access, endpoints: [h1, s1]}}
  - name: bottleneck
    endpoints: [s1, h2]
    impair:
      from:
        s1: {{rate: 300mbit, queue: 100ms}}
"""


@pytest.fixture
def dumbbell(tmp_path, make_lab):
    name = "itaqm"
    path = tmp_path / f"{name}.yaml"
    path.write_text(TOPOLOGY.format(name=name))
    lb = make_lab(path, name)  # taken down after the test
    # 300mbit written is 30 Mbit/s at the software-emulated VM's scale (0.1); elsewhere the
    # written rate follows the scale so that the link runs at RATE_BPS all the same.
    scale = resolved(lb).scale
    if abs(300e6 * scale - RATE_BPS) > 1:
        lb.set(("links[bottleneck].impair.from.s1.rate", f"{RATE_BPS / scale:.0f}"))
    return lb


def resolved(lb):
    return lab.preview(state.load(lb.name), [])


def port(lb) -> str:
    """s1's port toward h2: where the bottleneck's queue is."""
    pair = resolved(lb).link("bottleneck").veths[0]
    return next(end.ifname for end in (pair.a, pair.b) if end.node == "s1")


def discipline(lb) -> dict:
    """The queue holder on s1's port, as the kernel reports it (tc -s -j)."""
    dev = port(lb)
    return next(r for r in qdisc_report.read(lb.ns("s1")) if r["dev"] == dev and r["parent"] != "root")


def pings(lb, count: int, interval: float) -> list[float]:
    target = resolved(lb).address("h2", 4)
    res = lb.run("h1", Ping(target=target, count=count, interval=interval).argv(), check=False,
                 timeout=count * interval + 30)
    got = [r.rtt_ms for r in Ping.parse(res.stdout, res.stderr).replies]
    assert len(got) >= 0.8 * count, res.stdout  # a late reply counts as lost: 20 % for descheduling
    return got


def loaded(lb, sampler: QueueSampler | None = None, at_settle=lambda: None) -> tuple[list[float], float, object]:
    """Pings beside FLOWS TCP flows h1 -> h2, the flows' goodput (the receiver's, bit/s), and what
    `at_settle` returned when the flows had settled (SETTLE_S in), just before the pings began."""
    target = resolved(lb).address("h2", 4)
    server = subprocess.Popen(["ip", "netns", "exec", lb.ns("h2"), "iperf3", "-s", "-1"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)
        client = subprocess.Popen(["ip", "netns", "exec", lb.ns("h1"), "iperf3", "-c", target, "-P", str(FLOWS),
                                   "-t", str(LOAD_S), "-J"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        rep = None
        if sampler is not None:
            rep = Repetition(LabHandle(resolved(lb), backend=object(), netns={n: lb.ns(n) for n in ("h1", "s1", "h2")}),
                             "h1", "h2", 4, omit=0.0)
            sampler.before(rep)
            rep.opened = time.monotonic()
            sampler.start(rep)
        time.sleep(SETTLE_S)
        settled = at_settle()
        rtts = pings(lb, PINGS, 0.1)
        out, err = client.communicate(timeout=LOAD_S + 60)
        if sampler is not None:
            sampler.finish(rep)
        assert client.returncode == 0, err.decode(errors="replace")
        return rtts, Iperf3Client.parse(out.decode()).received_bps, settled
    finally:
        server.kill()
        server.wait()


def test_fq_codel_holds_the_queue_a_fifo_lets_four_flows_fill(dumbbell):
    lb = dumbbell
    rate = RATE_BPS
    idle = median(pings(lb, 40, 0.05))

    sampler = QueueSampler()
    fifo_rtts, fifo_bps, _ = loaded(lb, sampler)
    assert discipline(lb)["kind"] == "bfifo"
    lb.set(("links[bottleneck].impair.from.s1.aqm", "fq_codel"))
    codel = discipline(lb)
    # The kernel keeps CoDel's times in units of 1024 ns: 5 ms reads back as 4.999 ms.
    assert codel["kind"] == "fq_codel" and codel["options"]["target"] == pytest.approx(0.005, abs=2e-6)
    # The 100 ms bound as fq_codel's packet limit: 100 ms of 1514-byte frames at the rate as run.
    assert codel["options"]["limit"] == -(-int(round(0.1 * rate / 8)) // 1514)
    codel_rtts, codel_bps, _ = loaded(lb)

    fifo_added, codel_added = median(fifo_rtts) - idle, median(codel_rtts) - idle
    backlog = queue_evidence.direction(sampler.samples[f"s1/{port(lb)}"], rate, SETTLE_S)
    figures = (f"idle {idle:.1f} ms; added p50 fifo {fifo_added:.1f} ms, fq_codel {codel_added:.1f} ms; "
               f"goodput fifo {fifo_bps / 1e6:.2f}, fq_codel {codel_bps / 1e6:.2f} Mbit/s at {rate / 1e6:g}; "
               f"fifo backlog p50 {backlog['backlog_p50_ms']} ms, p95 {backlog['backlog_p95_ms']} ms (sampler)")
    print("\n" + figures)
    # A full 100 ms FIFO: CUBIC's sawtooth keeps it between about half and all of its bound, so the
    # median ping waits at least 50 ms (and never more than the bound + 20 ms for descheduling).
    assert 50.0 <= fifo_added <= 120.0, figures
    # FQ-CoDel: the ping is a sparse flow, served before the bulk flows' queues, which CoDel holds
    # near 5 ms: at most 10 ms added (the bound), never below idle by more than noise.
    assert -2.0 <= codel_added <= 10.0, figures
    # The same goodput (+-10 %): the discipline moves delay, not throughput.
    assert abs(codel_bps - fifo_bps) <= 0.10 * fifo_bps, figures
    assert 0.8 * rate <= fifo_bps <= 1.02 * rate, figures
    # The sampler's backlog, read in ms of the rate, is the wait the pings measured: the same
    # median within 25 % or 10 ms (the pings and the samples see the sawtooth at other moments).
    assert abs(backlog["backlog_p50_ms"] - fifo_added) <= max(10.0, 0.25 * fifo_added), figures


def test_ecn_marks_instead_of_dropping_and_set_changes_it_in_place(dumbbell):
    lb = dumbbell
    lb.set(("links[bottleneck].impair.from.s1.aqm", "fq_codel"))
    pings(lb, 20, 0.05)  # some traffic through the discipline, so that its counters are not zero
    before = discipline(lb)
    assert before["options"].get("ecn") is not True and before["bytes"] > 0
    lb.set(("links[bottleneck].impair.from.s1.aqm_params.ecn", True))
    mid = discipline(lb)
    # Changed in place (tc qdisc change): the same qdisc, its counters kept; a rebuilt one starts at 0.
    assert mid["options"]["ecn"] is True and mid["handle"] == before["handle"] and mid["bytes"] >= before["bytes"]

    sampler = QueueSampler()
    _, _, settled = loaded(lb, sampler, at_settle=lambda: discipline(lb))
    after = discipline(lb)
    marks, drops = after["marks"] - mid["marks"], after["drops"] - mid["drops"]
    steady_marks, steady_drops = after["marks"] - settled["marks"], after["drops"] - settled["drops"]
    figures = (f"fq_codel with ECN over {LOAD_S} s of {FLOWS} flows: {marks} marks, {drops} drops; "
               f"from {SETTLE_S:g} s on {steady_marks} marks, {steady_drops} drops")
    print("\n" + figures)
    # Every flow negotiated ECN (tcp_ecn=1 on both hosts), so CoDel marks where it would drop:
    # marks counted over the window, and once the flows have settled (slow start may overflow
    # the 100 ms limit once, and fq_codel then drops up to drop_batch, 64 packets) at most a
    # tenth as many drops as marks.
    assert marks >= 50 and steady_marks >= 20, figures
    assert steady_drops <= 0.1 * steady_marks, figures
    # The window's sampler read the same counter over netlink (its struct decoding checked against
    # tc's JSON here): its last sample within the marks of the flows' final second.
    series = sampler.samples[f"s1/{port(lb)}"]
    # 10 Hz through the flows' LOAD_S seconds; 20 % fewer allowed: a sample the descheduled VM
    # made late is not made up for.
    assert len(series) >= 0.8 * 10 * LOAD_S, len(series)
    assert 0 <= after["marks"] - series[-1].marks <= max(20, 0.2 * marks), (after["marks"], series[-1])
    summary = queue_evidence.direction(series, RATE_BPS, SETTLE_S)
    assert summary["marks"] >= 0.8 * marks and summary["backlog_p95_ms"] is not None, summary
    assert max(s.backlog_bytes for s in series) > 0
