"""Disturbance flags: a saturated core or unasked queue drops mark the row, with evidence."""

from pathlib import Path

import pytest

from linklab.measure import disturbance as d
from linklab.measure.flags import row_flags

DATA = Path(__file__).resolve().parents[1] / "data" / "tools"


def test_core_saturated_names_the_core():
    f = d.flags({"cpu0_busy_pct": 91.2, "cpu1_busy_pct": 40.0, "cpu_all_busy_pct": 65.6})
    assert f["flags"] == "core_saturated" and "cpu0 91% busy" in f["flag_evidence"]


def test_quiet_row_has_no_flags():
    assert d.flags({"cpu0_busy_pct": 50.0, "cpu1_busy_pct": 84.9}, {}) == {"flags": "", "flag_evidence": ""}


def test_drops_where_loss_was_asked_do_not_count():
    drops = {"h1/eth1 netem 10:": 12, "s1/eth2 bfifo 10:": 3}
    f = d.flags({}, drops, lossy_ifaces={"h1/eth1"})
    assert f["flags"] == "queue_dropped" and "s1/eth2 bfifo 10:: 3" in f["flag_evidence"] and "h1" not in f["flag_evidence"]


def test_a_few_slow_start_drops_do_not_flag_a_row_but_a_binding_queue_does():
    drops = {"h1/bond0-m0 bfifo 10:": 5, "h1/bond0-m0 htb 1:": 5}
    sent = {"h1/bond0-m0 bfifo 10:": 41_000, "h1/bond0-m0 htb 1:": 41_000}
    assert d.flags({}, drops, sent=sent)["flags"] == ""  # 0.012 % < QUEUE_DROP_PCT
    drops = {"h1/bond0-m0 bfifo 10:": 105}
    f = d.flags({}, drops, sent={"h1/bond0-m0 bfifo 10:": 6_700})  # 1.5 %
    assert f["flags"] == "queue_dropped" and "105 (1.5%)" in f["flag_evidence"]
    # at the threshold exactly: counts (two-sided around QUEUE_DROP_PCT = 0.1 %)
    assert d.flags({}, {"q": 1}, sent={"q": 999})["flags"] == "queue_dropped"
    assert d.flags({}, {"q": 1}, sent={"q": 1001})["flags"] == ""


def test_drops_delta_handles_rebuilt_qdisc():
    before = {"a": {"dropped": 5}, "b": {"dropped": 9}}
    after = {"a": {"dropped": 7}, "b": {"dropped": 2}, "c": {"dropped": 0}}
    assert d.drops_delta(before, after) == {"a": 2, "b": 2}


def test_host_window_from_recorded_samples_and_flag():
    from linklab.vm import hostcpu
    s = [{"t": 100.0, "total": 1000, "idle": 400, "qemu": 300, "ncpu": 2},
         {"t": 101.0, "total": 1200, "idle": 440, "qemu": 390, "ncpu": 2},
         {"t": 106.0, "total": 2200, "idle": 640, "qemu": 840, "ncpu": 2}]
    w = hostcpu.window(s, 101.0, 106.0)
    assert w == {"host_busy_pct": 80.0, "host_qemu_pct": 45.0, "host_steal_pct": 0.0, "host_other_pct": 35.0,
                 "host_cpus": 2}
    assert hostcpu.window(s, 90.0, 99.0) is None  # nothing recorded before the window
    f = d.flags(w)
    assert f["flags"] == "host_disturbed" and "other work 35.0%" in f["flag_evidence"]


def test_host_sample_reads_real_proc(tmp_path):
    import os
    from linklab.vm import hostcpu
    s = hostcpu.sample(os.getpid())
    assert s is not None and s["total"] > s["idle"] >= 0 and s["qemu"] >= 0 and s["ncpu"] >= 1


def test_parse_qdisc_stats_on_captured_tc_output():
    # tc -s -d qdisc show in a lab namespace (rate 200mbit at scale 0.1, queue 5ms): htb + bfifo.
    got = d.parse_qdisc_stats((DATA / "tc_qdisc_s_before.txt").read_text())
    assert set(got) == {"lo noqueue 0:", "eth1 htb 1:", "eth1 bfifo 10:"}
    assert got["eth1 bfifo 10:"] == {"sent_bytes": 2184, "sent_pkts": 24, "dropped": 0, "overlimits": 0,
                                      "requeues": 0}


def test_leaf_drops_count_each_packet_once():
    # As the goodput sweep reported it: htb's root counts the drops of its bfifo child too.
    assert d.leaf_drops({"h1/eth1 bfifo 10:": 11, "h1/eth1 htb 1:": 11, "s1/eth2 netem 1:": 2}) == 13


def test_emulator_rtt_flags_a_path_whose_idle_rtt_the_emulator_dominates():
    # E5 receiver A in the lab VM: 0.28 ms asked, 1.1 ms measured.
    f = d.flags({"ping_rtt_p50_ms": 1.1}, asked_rtt_ms=0.28)
    assert f["flags"] == "emulator_rtt" and "idle RTT 1.1 ms, the path asks 0.28 ms" in f["flag_evidence"]
    # Receiver C: 28.2 ms asked, 29.3 measured: the emulator's 1.1 ms is under half of it.
    assert d.flags({"ping_rtt_p50_ms": 29.3}, asked_rtt_ms=28.2)["flags"] == ""
    # A native path adds ~0.05 ms: below EMULATOR_RTT_MS, even with nothing asked.
    assert d.flags({"ping_rtt_p50_ms": 0.05}, asked_rtt_ms=0.0)["flags"] == ""
    assert d.flags({"ping_rtt_p50_ms": 0.05 + d.EMULATOR_RTT_MS}, asked_rtt_ms=0.0)["flags"] == "emulator_rtt"
    # No idle ping measured, or no path known: nothing to judge.
    assert d.flags({}, asked_rtt_ms=0.28)["flags"] == ""
    assert d.flags({"ping_rtt_p50_ms": 1.1}, asked_rtt_ms=None)["flags"] == ""


def test_drops_beyond_the_paths_bottleneck_are_the_emulators_burst():
    # Three bridges at MTU 9000 (measured in the lab VM before the switch-port floor): the first
    # switch port after h1's equal-rate port dropped 152 of ~5 900 packets; h1's own queue 2.
    drops = {"s1/eth2 bfifo 10:": 152, "s1/eth2 htb 1:": 152, "h1/eth1 bfifo 10:": 9}
    sent = {"s1/eth2 bfifo 10:": 5_900, "s1/eth2 htb 1:": 5_900, "h1/eth1 bfifo 10:": 6_000}
    beyond = {"s1/eth2": "h1/eth1", "s2/eth2": "h1/eth1"}
    f = d.flags({}, drops, sent=sent, beyond=beyond)
    assert f["flags"] == "queue_dropped;emulator_burst", f
    burst = named(f)["emulator_burst"]
    assert "s1/eth2 bfifo 10:: 152 (2.5%)" in burst and "beyond the path's bottleneck (h1/eth1)" in burst
    assert "h1/eth1 bfifo 10:: 9" in named(f)["queue_dropped"]
    # the same drops without the path's knowledge are only a queue that dropped
    assert d.flags({}, drops, sent=sent)["flags"] == "queue_dropped"
    # a port beyond the bottleneck that dropped a handful (below QUEUE_DROP_PCT) is not flagged
    assert d.flags({}, {"s1/eth2 bfifo 10:": 2}, sent={"s1/eth2 bfifo 10:": 5_900}, beyond=beyond)["flags"] == ""


# --- what held a TCP flow below its path: captured in the lab VM (tests/data/tools/README.md) ----

# The lab the captures ran on: 1 Gbit/s at scale 0.1 (100 Mbit/s), 5 ms each way, MTU 9000.
JUMBO_5MS = "name: win\nhosts: {h1: {}, h2: {}}\nlinks: [{name: wire, endpoints: [h1, h2], mtu: 9000, " \
            "impair: {rate: 1gbit, delay: 5ms}}]\n"


@pytest.fixture(scope="module")
def theory(tmp_path_factory):
    from linklab.model import Context, load_topology, resolve
    from linklab.model.paths import tcp_goodput_bps
    p = tmp_path_factory.mktemp("lab") / "win.yaml"
    p.write_text(JUMBO_5MS)
    return tcp_goodput_bps(resolve(load_topology(p), Context(auto_scale=0.1)), "h1", "h2")


def captured(iperf3: str, ss: str | None = None, **extra) -> dict:
    """A row as the sweep builds it: iperf3's, then the sender's tcp_info, then other probes'."""
    from linklab.measure.iperf3 import parse_result
    from linklab.measure.ss import limits_row, parse_tcp_info
    row = parse_result((DATA / iperf3).read_text()).row("")
    if ss:
        row.update(limits_row(parse_tcp_info((DATA / ss).read_text())))
    return {**row, **extra}


def named(f: dict) -> dict:
    return row_flags(f)


def test_the_path_theory_of_the_captures(theory):
    assert theory == pytest.approx(100e6 * 8948 / 9014)  # 99.27 Mbit/s


def test_a_receiver_window_that_never_grew_is_named_with_the_kernels_figures(theory):
    # The receiver's buffer held at its initial 128 KiB: a 56 588-byte window for the whole 6 s,
    # 34.2 Mbit/s at a 12.6 ms RTT, 0.34 of the path; tcp_info: 4544 of 4560 ms rwnd-limited.
    f = d.flags(captured("iperf3_tcp_rwnd_limited.json", "ss_tcp_info_rwnd_limited.txt"), theory_bps=theory)
    assert f["flags"] == "rwnd_limited"
    ev = named(f)["rwnd_limited"]
    assert ev.startswith("the receiver's window held the sender: goodput 34.2 Mbit/s, 0.34 of the 99.3 Mbit/s"), ev
    assert "56.59 kB on average" in ev and "35.8 Mbit/s at RTT 12.6 ms" in ev and "rwnd_limited 100%" in ev, ev


def test_without_tcp_info_the_smallest_window_iperf3_saw_names_it(theory):
    # ss read after the flow ended (nothing left): iperf3's snd_wnd alone. A window stuck at its
    # initial 56 704 bytes for the first 2 of 6 s, then 3.1 MB: 0.75 of the path.
    f = d.flags(captured("iperf3_tcp_mtu9000_stuck_2s.json", "ss_tcp_info_after_flow.txt"), theory_bps=theory)
    assert f["flags"] == "rwnd_limited" and "as little as 56.7 kB = 21.2 Mbit/s" in f["flag_evidence"], f
    assert d.flags(captured("iperf3_tcp_rwnd_limited.json"), theory_bps=theory)["flags"] == "rwnd_limited"


def test_flows_the_link_bounded_carry_no_limit(theory):
    # 98.1 and 98.8 Mbit/s (one stream, four): 0.99 of the path, rwnd-limited 0.7 % and 1.5 %.
    assert d.flags(captured("iperf3_tcp_mtu9000_5ms.json", "ss_tcp_info_mtu9000.txt"), theory_bps=theory)["flags"] == ""
    assert d.flags(captured("iperf3_tcp_mtu9000_p4.json", "ss_tcp_info_p4.txt"), theory_bps=theory)["flags"] == ""


def test_a_small_send_buffer_is_named(theory):
    # tcp_wmem 16 kB: 38.0 Mbit/s; the kernel counted 12 ms sndbuf-limited but the sender kept
    # 7 of its 63 cwnd segments in flight with a 1.6 MB window open.
    f = d.flags(captured("iperf3_tcp_wmem16k.json", "ss_tcp_info_wmem16k.txt"), theory_bps=theory)
    assert f["flags"] == "sndbuf_limited" and "11% of cwnd in flight" in f["flag_evidence"], f


def test_loss_is_named_when_no_window_held_the_sender(theory):
    # 68.2 Mbit/s, 10 retransmits, a 3.1 MB window: the congestion window after loss.
    f = d.flags(captured("iperf3_tcp_mtu9000_loss.json"), theory_bps=theory)
    assert f["flags"] == "cwnd_limited" and "after 10 retransmits" in f["flag_evidence"], f
    assert "mean cwnd 298.3 kB" in f["flag_evidence"], f


def test_another_flag_names_the_cause_unless_a_window_held_the_sender(theory):
    busy = {"cpu0_busy_pct": 97.0, "cpu1_busy_pct": 40.0}
    f = d.flags(captured("iperf3_tcp_wmem16k.json", "ss_tcp_info_wmem16k.txt", **busy), theory_bps=theory)
    assert f["flags"] == "core_saturated"  # the core, not a guess at the buffer
    f = d.flags(captured("iperf3_tcp_mtu9000_loss.json", **busy), theory_bps=theory)
    assert f["flags"] == "core_saturated"
    f = d.flags(captured("iperf3_tcp_rwnd_limited.json", "ss_tcp_info_rwnd_limited.txt", **busy), theory_bps=theory)
    assert f["flags"] == "core_saturated;rwnd_limited" and len(named(f)) == 2 and all(named(f).values())


def test_the_share_of_theory_is_two_sided_and_what_is_not_tcp_or_has_no_theory_is_not_judged(theory):
    row = captured("iperf3_tcp_mtu9000_p4.json", "ss_tcp_info_p4.txt")  # 98.8 Mbit/s, no retransmits
    at = row["throughput_bps"] / d.THEORY_SHARE
    assert d.flags(row, theory_bps=at * 0.999)["flags"] == ""
    f = d.flags(row, theory_bps=at * 1.001)  # just below the share: named, and nothing explains it
    assert f["flags"] == "below_theory" and "0.90 of the" in f["flag_evidence"], f
    assert d.flags(row, theory_bps=None)["flags"] == ""
    assert d.flags(captured("iperf3_udp_loss.json"), theory_bps=1e9)["flags"] == ""


def test_every_flag_is_listed():
    assert set(d.LIMIT_FLAGS) <= set(d.FLAGS) and len(set(d.FLAGS)) == len(d.FLAGS)
