"""Disturbance flags: a saturated core or unasked queue drops mark the row, with evidence."""

from pathlib import Path

from linklab.measure import disturbance as d

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
    burst = f["flag_evidence"].split("; ")[1]
    assert "s1/eth2 bfifo 10:: 152 (2.5%)" in burst and "beyond the path's bottleneck (h1/eth1)" in burst
    assert "h1/eth1 bfifo 10:: 9" in f["flag_evidence"].split("; ")[0]
    # the same drops without the path's knowledge are only a queue that dropped
    assert d.flags({}, drops, sent=sent)["flags"] == "queue_dropped"
    # a port beyond the bottleneck that dropped a handful (below QUEUE_DROP_PCT) is not flagged
    assert d.flags({}, {"s1/eth2 bfifo 10:": 2}, sent={"s1/eth2 bfifo 10:": 5_900}, beyond=beyond)["flags"] == ""
