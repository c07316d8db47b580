"""Sweeps end to end on real labs: complete, physically plausible, and crash-safe."""

import csv
import hashlib
import json
import platform
import statistics
import subprocess
from pathlib import Path

import pytest

from linklab import lab, state
from linklab.measure.disturbance import FLAGS
from linklab.measure.flags import row_flags
from linklab.model import load_topology
from linklab.model.resolve import resolve
from linklab.verdict import metrics
from linklab.model.paths import goodput_fraction
from tests.integration import steal
from linklab.sweep import preflight
from linklab.sweep.engine import Options, run
from linklab.sweep.plan import load_experiment
from linklab.units import parse_rate

DATA = Path(__file__).resolve().parents[1] / "data"
MEMBER_BPS = 100e6  # 1 Gbit/s members at scale 0.1
KNOWN_FLAGS = set(FLAGS)
GSO_MAX_BYTES = 65536  # veth's gso_max_size: the largest packet a qdisc sees


def swept_rate_bps(experiment: Path, axis: str = "links[wire].impair.rate") -> float:
    """The one link rate the experiment sweeps (its matrix axis), in bit/s."""
    (rate,) = load_experiment(experiment).matrix[axis]
    return parse_rate(rate)


def event_rate_bps(experiment: Path) -> float:
    """The rate the experiment's one event sets (`set: "links[...].impair.rate=RATE"`), in bit/s."""
    (ev,) = load_experiment(experiment).events
    path, _, value = ev.set.partition("=")
    assert path.endswith(".impair.rate"), ev
    return parse_rate(value)


def netem_queue_max_ms(topology: Path) -> float:
    """The longest wait netem's queue allows on the topology's members: its limit counts
    packets (the host port's 10 ms of frames plus the delay line, as resolved), each at most a
    GSO packet, drained at the member's rate."""
    resolved = resolve(load_topology(topology))
    return max(q.limit * GSO_MAX_BYTES * 8 / q.rate_bps * 1e3
               for link in resolved.links for v in link.veths for q in (v.egress_a, v.egress_b) if q and q.queue_holder == "netem")


def rows_of(store):
    with open(store.path / "results.csv") as f:
        return list(csv.DictReader(f))


@pytest.fixture
def results(tmp_path):
    return tmp_path / "results"


@pytest.fixture
def cleanup_labs():
    names = []
    yield names
    for n in names:
        if state.load(n):
            lab.down(n, say=lambda *_: None)


def test_quick_sweep_is_complete_and_physically_plausible(results, cleanup_labs):
    cleanup_labs.append("rrskew")
    store = run(DATA / "plausible.yaml", Options(results=results), say=lambda *_: None)
    every = rows_of(store)
    rows = {r["bond_mode"]: r for r in every if r["sysctl_profile"] == "default"}
    variant = [r for r in every if r["sysctl_profile"] == "fixed_dupthresh"]
    assert set(rows) == {"balance-rr", "802.3ad"} and [r["bond_mode"] for r in variant] == ["balance-rr"]
    for r in every:
        assert r["preflight_ok"] == "true" and not r.get("error"), r.get("error")
    rr, ad = rows["balance-rr"], rows["802.3ad"]
    manifest = json.loads((store.path / "manifest.json").read_text())
    if manifest["placement"]["kind"] == "vm":
        # The host records its CPU and the hypervisor's steal for every command it forwards into
        # the lab VM: every row says how much was stolen during its window (a kernel tier that
        # never saw the samples could not allow for steal below).
        assert all(metrics.num(r.get("host_steal_pct")) is not None for r in rows.values()), \
            [(m, r.get("host_steal_pct")) for m, r in rows.items()]
    # Round robin's ~190 Mbit/s costs the emulated CPU most of a core, and under 8-31 % steal it
    # measured 107 Mbit/s: "one stream beats one member" says nothing of a stolen repetition, so
    # one is inconclusive (tests/integration/steal.py); 802.3ad's one member may lose the steal's
    # share, at most 10 %.
    steal.not_stolen(rr)
    ad_room = steal.room(ad)
    stolen = f"{steal.words(rr)} / {steal.words(ad)}"
    # Round robin over two members with different delays: one stream beats one member (by 10 %
    # at least), never the two members' sum (2 % tolerance for iperf3's interval edges).
    assert 1.1 * MEMBER_BPS < float(rr["throughput_bps"]) <= 2 * 1.02 * MEMBER_BPS, (rr["throughput_bps"], stolen)
    # The 300 us skew puts ~5 segments out of order at this rate: the sender's reordering count
    # (SACKs that showed a segment out of order) is in the hundreds, and an order of magnitude
    # above 802.3ad's, whose one member does not reorder (measured 1120-2669 vs 0-8). Whether the
    # reordering also costs retransmits is TCP's choice, not the path's: RACK calls a segment lost
    # only after a wait (a quarter of the smallest RTT, widened with each spurious retransmit the
    # receiver reports, up to the smoothed RTT), and where that wait covers the skew from the
    # start nothing is retransmitted (a CI run: 0 retransmits in 98234 segments, at the members'
    # sum; quiet reruns 634-779). So retransmits are bounded above only here (at most 5 % of the
    # segments sent: more would have cut the rate below the bound above); that reordering reads
    # as loss is checked below, where E2's variant turns RACK off.
    rr_rtx, rr_segs = int(rr["retransmits"]), int(rr["client_nstat_TcpOutSegs"])
    rr_reorder, ad_reorder = (int(r.get("client_nstat_TcpExtTCPSACKReorder") or 0) for r in (rr, ad))
    why = (f"reordering seen {rr_reorder} vs 802.3ad {ad_reorder}; retransmits {rr_rtx} of {rr_segs} segments "
           f"(802.3ad {ad['retransmits']}); smallest RTT {rr.get('rtt_min_us')} us; {stolen}")
    assert rr_reorder >= 100 and rr_reorder >= 10 * ad_reorder, why
    assert rr_rtx <= 0.05 * rr_segs, why
    # E2's variant (experiments/e2_rr_tuning.yaml), at E2's 500 us skew: with RACK off and the
    # reordering threshold held at 3 duplicate ACKs, reordering reads as loss, and round robin's
    # one stream, which beat one member, carries less than one (the paper's "no gain over one
    # link"; measured 0.45-0.62 of a member's goodput; at this lab's 300 us skew 0.85), with more
    # retransmits than the adaptive threshold's (1641 and 1804 against 609 and 740; 1709-2233
    # against 634-779). Bounded by the finding, not by a run: above a twentieth of a member (a
    # real stream), below one member's goodput (TCP's payload share at MTU 1500, 1448 / 1514);
    # at least 100 retransmits in 5 s (nothing adapts: every reordering past the third segment
    # is a loss), more than the default's.
    (fixed,) = variant
    steal.not_stolen(fixed)
    assert 0.05 * MEMBER_BPS < float(fixed["throughput_bps"]) < MEMBER_BPS * 1448 / 1514, \
        (fixed["throughput_bps"], rr["throughput_bps"], fixed["retransmits"], steal.words(fixed))
    assert int(fixed["retransmits"]) >= max(100, rr_rtx + 1), (fixed["retransmits"], why)
    # 802.3ad hashes a flow onto one member: that member's rate, never more (2 % tolerance) and
    # not far less (at least 80 %; TCP goodput over a 100 Mbit/s member is 95.6 % in theory).
    assert (0.80 - ad_room) * MEMBER_BPS <= float(ad["throughput_bps"]) <= 1.02 * MEMBER_BPS, (ad["throughput_bps"], stolen)
    # Every run says how traffic spread over the members.
    assert float(ad["client_member_tx_max_share"]) > 0.95
    assert 0.4 < float(rr["client_member_tx_max_share"]) < 0.6
    # The manifest records what was run, checked against the files and this kernel.
    assert manifest["kernel"] == platform.release() and manifest["scale"] == 0.1  # rr_skew.yaml: scale 0.1
    assert manifest["experiment_sha256"] == hashlib.sha256((DATA / "plausible.yaml").read_bytes()).hexdigest()
    assert manifest["topology_sha256"] == hashlib.sha256((DATA / "rr_skew.yaml").read_bytes()).hexdigest()
    assert manifest["tool_versions"]["iperf3"].split(".")[0] == "3", manifest["tool_versions"]
    assert manifest["sysctls_at_start"]["h1"]["net.ipv4.tcp_congestion_control"] in ("cubic", "bbr", "reno")
    assert manifest["qdiscs_at_start"].count("netem") >= 2  # one per member: 100 and 400 us
    assert manifest["placement"]["kind"] in ("vm", "native") and manifest["complete"] is True
    for point in (store.path / "points").iterdir():
        rep = point / "rep1"
        assert (rep / "iperf3.json").stat().st_size > 1000 and (rep / "qdisc.txt").read_text().count("netem")
    # CPU per side, named by role, in % of a core: each iperf3 (3.12: one thread does the work)
    # moved ~190 Mbit/s, which costs at least 1 % of a core (E1 in the lab VM: 13-25 % at
    # 85 Mbit/s; natively ~5 % per Gbit/s), and one thread cannot use more than one core
    # (+3 for the sampling's edges): a figure outside counts another process or misses this one.
    for side in ("client", "server"):
        value = rr[f"cpu_{side}_iperf3_pct"]
        procs_ = int(rr[f"cpu_{side}_iperf3_processes"] or 1)
        assert value not in ("", None) and 1.0 <= float(value) <= 100.0 * procs_ + 3, (side, value)
        assert float(rr[f"cpu_{side}_iperf3_max_thread_pct"]) <= 103.0, (side, rr[f"cpu_{side}_iperf3_max_thread_pct"])
    # Its report: one line per point with the measured rate. (Inside the lab VM the sweep
    # leaves the report to the host that forwarded it; here the test writes it itself, without
    # figures: matplotlib's import and 18 figures cost ~100 s under emulation, and the unit tier
    # draws them from stored runs of this lab VM.)
    from linklab.report.build import write_report
    report = (write_report(store.path, figures=False)[0]).read_text()
    lines = report.splitlines()
    for r in every:
        mbps = f"| {float(r['throughput_bps']) / 1e6:.1f} |"
        assert any(r["bond_mode"] in line and r["sysctl_profile"] in line and mbps in line for line in lines), (r, report)


def test_goodput_at_every_mtu_matches_theory_then_a_rerun_resumes_and_force_starts_anew(results, cleanup_labs):
    cleanup_labs.append("onelink")
    store = run(DATA / "goodput.yaml", Options(results=results), say=lambda *_: None)
    rows = rows_of(store)
    by_mtu: dict[int, list[dict]] = {}
    for r in rows:
        by_mtu.setdefault(int(r["mtu"]), []).append(r)
    assert sorted(by_mtu) == [450, 1500, 9200] and all(len(v) == 3 for v in by_mtu.values())
    for mtu, reps in by_mtu.items():
        # TCP payload per frame over the bytes the shaper counts (goodput_fraction): 17.2 / 19.1 /
        # 19.9 Mbit/s at 20 Mbit/s.
        # The median within 2 % of it (issue 18's bound: 0.99-1.00 on a quiet machine; a slower
        # one measured 0.987 at MTU 9200 once, its emulated CPU stalling one window), every
        # repetition within 5 %: a wrong shaper or header count would move all three. Below, a
        # repetition flagged host_stolen may fall short by the steal's share (at most 10 %:
        # tests/integration/steal.py; under 20-36 % steal MTU 450's median was -2.3 %, CI
        # 2026-11-26): the median's lower bound holds when two of the three reach their own.
        theory = swept_rate_bps(DATA / "goodput.yaml") * goodput_fraction(mtu)
        rates = [float(r["throughput_bps"]) for r in reps]
        rooms = [steal.room(r) for r in reps]
        shown = ", ".join(f"{x / 1e6:.2f} ({steal.words(r)})" for x, r in zip(rates, reps))
        why = f"MTU {mtu}: {shown} Mbit/s vs theory {theory / 1e6:.2f}"
        assert statistics.median(rates) < 1.02 * theory, f"median above: {why}"
        assert sum(x > (0.98 - room) * theory for x, room in zip(rates, rooms)) >= 2, f"median below: {why}"
        assert all((0.95 - room) * theory < x < 1.05 * theory for x, room in zip(rates, rooms)), why
    # The same sweep again: complete, so nothing is measured again and nothing overwritten.
    again = run(DATA / "goodput.yaml", Options(results=results), say=lambda *_: None)
    assert again.path == store.path and len(rows_of(again)) == 9
    # --force: a new run directory (one point of it here, one repetition: what --force does shows
    # in one, and each costs ~6 s of CI), the first untouched.
    first_point = rows[0]["point_id"]
    forced = run(DATA / "goodput.yaml", Options(results=results, force=True, points=(first_point,), repetitions=1),
                 say=lambda *_: None)
    assert forced.path != store.path and len(rows_of(forced)) == 1 and len(rows_of(store)) == 9
    # A sweep killed mid-way and resumed (every point x repetition exactly once, no partial file):
    # tests/integration/kernel/test_crash_safety.py, at seeded random moments.


def test_reordering_measured_directly_and_latency_under_load(results, cleanup_labs):
    # Members 100 us and 400 us: round robin delivers a burst's packets out of order; one active
    # member hardly ever does. The probe's datagrams leave back to back, closer than the 300 us skew.
    cleanup_labs.append("rrskew")
    store = run(DATA / "reorder.yaml", Options(results=results), say=lambda *_: None)
    rows = {r["bond_mode"]: r for r in rows_of(store)}
    rr, ab = rows["balance-rr"], rows["active-backup"]
    queue_max_ms = netem_queue_max_ms(DATA / "rr_skew.yaml")
    for r in (rr, ab):
        assert not r.get("error"), r.get("error")
        assert int(r["reorder_received"]) >= 0.9 * int(r["reorder_sent"]) > 0
        # Latency under load sits beside the idle RTT, from a ping that ran in the window. Idle:
        # no faster than the shorter member's round trip (2 x 100 us), no slower than the longer
        # one's (2 x 400 us) plus the emulator's own (up to 2 ms) and descheduling (3 ms). Under
        # load a queue cannot make a ping faster than idle (-1 ms for jitter). Above: the host
        # port's byte FIFO allows 10 ms, but on these members netem is the leaf queue and its
        # limit counts packets, which GSO makes up to 64 KiB each (docs/topologies.md, "Queues"): what that
        # queue can hold at the member's rate is the bound (measured 31, 108 and 159 ms added, p50).
        why = {k: r.get(k) for k in ("bond_mode", "flags", "flag_evidence", "host_other_pct", "cpu0_busy_pct",
                                     "cpu1_busy_pct", "ping_rtt_p50_ms", "load_ping_added_p50_ms",
                                     "load_ping_added_p95_ms", "qdisc_dropped_pkts")}
        assert int(r["load_ping_received"]) >= 10, r["load_ping_received"]
        assert 0.2 <= float(r["ping_rtt_p50_ms"]) <= 0.8 + 5.0, why
        assert -1.0 <= float(r["load_ping_added_p50_ms"]) <= queue_max_ms, why
        print(f"\n{r['bond_mode']}: ping under load {float(r['load_ping_added_p50_ms']):.1f} ms added (p50), "
              f"bound {queue_max_ms:.1f} ms")
        # Flags are the ones linklab knows, and a queue_dropped flag has drops behind it.
        flags = set(row_flags(r))
        assert flags <= KNOWN_FLAGS, flags
        assert int(r["qdisc_dropped_pkts"]) >= (1 if "queue_dropped" in flags else 0), (flags, r["qdisc_dropped_pkts"])
    # One active member reorders next to nothing, but not strictly nothing: netem releases packets
    # from a timer on whichever CPU it fires, and veth hands each packet to that CPU's backlog, so
    # the emulator itself swaps a few packets in a thousand (CI saw 0.15 %). Bound: at most 1 %,
    # and round robin at least 5x that and above 1 %.
    ab_ratio, rr_ratio = float(ab["reorder_ratio"]), float(rr["reorder_ratio"])
    assert 0 <= ab_ratio <= 0.01 and float(ab["reorder_density_d0"]) >= 0.99, ab["reorder_density"]
    assert rr_ratio > max(0.01, 5 * ab_ratio) and int(rr["reorder_extent_max"]) >= 1, rr["reorder_density"]
    rep = next((store.path / "points").iterdir()) / "rep1"
    assert (rep / "reorder-probe.txt").read_text().count("seq ") > 100 and (rep / "ping-load.txt").exists()


def test_member_down_event_gives_outage_per_mode(results, cleanup_labs):
    # h1 =bond= s1 =bond= h2 at 100 Mbit/s per member; h1's member 0 fails at 2 s, returns at 4 s.
    # active-backup: the backup takes over within miimon (100 ms) + ARP/switch learning, the rate
    # (one member) is the same after. 802.3ad with 4 streams: the failed member's flows move over;
    # ~2 members' rate falls toward one for the outage, never to zero for seconds.
    cleanup_labs.append("bondsw")
    store = run(DATA / "failover.yaml", Options(results=results), say=lambda *_: None)
    rows = {r["bond_mode"]: r for r in rows_of(store)}
    for mode, r in rows.items():
        assert not r.get("error"), r.get("error")
        assert r["fault1_action"].endswith("state=down") and r["fault1_applied_s"], r
        # Before the fault: one member's goodput (the layer2 hash puts h1 -> h2 on one member),
        # at least 50 % of it under emulation, never more than the member (2 %).
        # A repetition flagged host_stolen: every lower bound here less the steal's share (at most 10 %).
        room = steal.room(r)
        assert (0.5 - room) * MEMBER_BPS <= float(r["fault1_pre_bps"]) <= 1.02 * MEMBER_BPS, \
            (r["fault1_pre_bps"], steal.words(r))
        # Outage (below half the pre-fault rate): measured, between 0 and 1.5 s (the manual
        # measurements: no visible gap for active-backup, 802.3ad down to one member within 1 s;
        # 0 is physical: a failover faster than one 0.1 s interval shows no gap).
        assert 0.0 <= float(r["fault1_outage_s"]) <= 1.5, (mode, r["fault1_outage_s"])
        assert (0.5 - room) * MEMBER_BPS <= float(r["throughput_bps"]) <= 1.02 * MEMBER_BPS, \
            (mode, r["throughput_bps"], steal.words(r))
    ab = rows["active-backup"]
    # active-backup: the backup carries one member's rate again within 3 s of the failure.
    assert ab["fault1_recover_s"] not in ("", None) and float(ab["fault1_recover_s"]) <= 3.0, ab
    # The fault acted: member 1 carried the traffic from the failure at 2 s until member 0 (the
    # primary) came back at 4 s, ~2 s of the ~8 s window (warm-up included), so the busiest
    # member's share lies between 0.55 and 0.9; a fault that did nothing leaves it at 1.0.
    assert 0.55 <= float(ab["client_member_tx_max_share"]) <= 0.9, ab["client_member_tx_max_share"]
    rep = next((store.path / "points").iterdir()) / "rep1"
    assert json.loads((rep / "events.json").read_text())[0]["did"].endswith("down")
    assert len(json.loads((rep / "iperf3.json").read_text())["intervals"]) >= 50  # 0.1 s intervals


def test_a_bond_that_loses_its_last_member_ends_its_flow_on_time(results, cleanup_labs):
    # bond2's h1 loses member 0 at 1.5 s and member 1 (its last) at 3 s of a 5 s flow. The
    # timeline brings both back 1 s after the flow's time, so iperf3 ends its test over the path:
    # the repetition is measured, not killed at iperf3's timeout (~30 s after the flow).
    cleanup_labs.append("bond2")
    r, evs, rep = _one_rep_with_events("last_member_down.yaml", results)
    assert [e.get("error") for e in evs] == [None, None] and all(e["did"].endswith("down") for e in evs), evs
    # The window: 1 s warm-up + 5 s + the control connection's retransmission after the members
    # come back at 6 s (one RTO, 0.2-1.6 s) + iperf3's own start and end (~0.5 s). Killed at its
    # timeout it would be ~36 s.
    assert 6.0 <= float(r["phase_window_s"]) <= 10.0, r["phase_window_s"]
    # Nothing crossed from the last member's fall (3 s on iperf3's clock) until the members came
    # back: at least the 2 s the flow had left (less one 0.1 s interval), at most until the window
    # ended (the receiver's series runs until the client's end of test gets through; measured
    # 3.1 s), plus one interval.
    window = float(r["phase_window_s"])
    assert 1.9 <= float(r["fault2_outage_s"]) <= window - 1.0 - 3.0 + 0.1, (r["fault2_outage_s"], window)
    # Both members up again once the repetition ended (the bond's MII says so).
    h = lab.handle("bond2")
    ifaces = h.backend.interfaces(h.lab, {"h1"})["h1"]
    up = sorted(i["ifname"] for i in ifaces if (i.get("bond_member") or {}).get("mii") == "up")
    assert len(up) == 2, ifaces


def _mbps(intervals, t0: float, t1: float) -> float:
    got = [iv["sum"]["bits_per_second"] for iv in intervals
           if t0 <= iv["sum"]["start"] < t1 and not iv["sum"].get("omitted")]
    assert got, (t0, t1)
    return sum(got) / len(got) / 1e6


def _one_rep_with_events(experiment: str, results):
    """Run a 1-point, 1-repetition experiment: (its row, its event log, its rep directory)."""
    store = run(DATA / experiment, Options(results=results), say=lambda *_: None)
    (r,) = rows_of(store)
    assert not r.get("error"), r.get("error")
    rep = next((store.path / "points").iterdir()) / "rep1"
    return r, json.loads((rep / "events.json").read_text()), rep


def test_impairment_changed_mid_window_in_place_and_restored_after(results, cleanup_labs):
    # One 50 Mbit/s link; at 2 s into the 7 s window its rate drops to 10 Mbit/s, changed in
    # place (tc change: the flow keeps going); the sweep's end restores the topology's 100.
    cleanup_labs.append("onelink")
    r, (ev,), rep = _one_rep_with_events("rate_change.yaml", results)
    # A repetition flagged host_stolen: the steal's share of room, at most 10 % (tests/integration/steal.py).
    room, stolen = steal.room(r), steal.words(r)
    # Begun at 2 s: the timeline wakes on time (2-8 ms late in 10 repetitions; 0.2 s allowed). In
    # by 1.5 s later: the change is one tc process per direction, run concurrently, on an emulated
    # CPU that iperf3 keeps busy (0.60-1.17 s in 21 repetitions on a quiet host, 2026-11-27, the
    # longest the first after the VM's boot; 0.19-0.23 s after the window). Flagged host_stolen,
    # the emulated CPU ran that share of the time less: each bound stretches to 1 / (1 - share)
    # (tests/integration/steal.py: at most 10 %; 1.15 s late under 20-36 % steal, CI).
    stretch = 1.0 / (1 - room)
    assert 2.0 <= ev["started_s"] <= 2.0 + 0.2 * stretch, (ev, stolen)
    assert ev["applied_s"] and 0.0 < ev["applied_s"] - ev["started_s"] <= 1.5 * stretch, (ev, stolen)
    assert "changed in place" in ev["did"], ev
    doc = json.loads((rep / "iperf3.json").read_text())
    ivs = doc["intervals"]
    # The fault is judged on the receiver's series: the server reported every 0.1 s too, and the
    # client brought its report back (a server without -i reports once a second: 6 intervals).
    theirs = doc["server_output_json"]["intervals"]
    assert 0.8 * len(ivs) <= len(theirs) <= 1.2 * len(ivs), (len(theirs), len(ivs))
    # Goodput of a shaped 50 / 10 Mbit/s link at MTU 1500 is 47.8 / 9.56 Mbit/s (the experiment's
    # swept rate and its event's, read from the file; MTU from the row). Before the
    # change: at most 10 % above (the shaper caps it) and at most 20 % below — the emulated CPU,
    # not the link, sets the first seconds' floor (a CI machine measured 85.1 of 95.6, -11 %, at
    # 100 Mbit/s, and a slower one 70.7, -26 %, before the link ran at 50); 50 vs 10
    # is what this checks. From 1 s after the change within 15 % (TCP settles onto the new rate).
    # Flagged host_stolen, each lower bound is less the steal's share (at most 10 %): under 36.2 %
    # steal the first seconds gave 74.3 of 95.6 Mbit/s (-22 %, fresh-clone CI 2026-11-26).
    fraction = goodput_fraction(int(r["mtu"]))
    want_before = swept_rate_bps(DATA / "rate_change.yaml") * fraction / 1e6
    want_after = event_rate_bps(DATA / "rate_change.yaml") * fraction / 1e6
    assert 4.5 <= want_before / want_after <= 5.5, (want_before, want_after)  # what this test is about: 5:1
    before, after = _mbps(ivs, 0.3, 1.9), _mbps(ivs, ev["applied_s"] + 1.0, 7.0)
    assert (0.8 - room) * want_before <= before <= 1.1 * want_before, (before, want_before, stolen)
    assert (0.85 - room) * want_after <= after <= 1.15 * want_after, (after, want_after, stolen)
    # A rate change is not a failure: the row says how long the flow took to settle at its new
    # level and where it settled, and names no outage. Settling runs from the event's 2 s to the
    # first 0.5 s steady within 10 %: the tc change is up to 1 s late, then the queue sized for 50
    # Mbit/s overflows at 10 and the receiver often sees nothing until TCP's retransmission timeout
    # fires (0.6-0.7 s of zero intervals in the lab VM; measured settle 0.2-0.8 s). A 5 s window
    # once ended before the flow was steady (fresh-clone CI, settle_s empty).
    assert r.get("fault1_outage_s") in (None, "") and r.get("fault1_recover_s") in (None, ""), r
    assert r["fault1_settle_s"] not in (None, ""), ("never steady at its new level", r["fault1_post_bps"])
    assert 0.0 <= float(r["fault1_settle_s"]) <= 2.5, r["fault1_settle_s"]
    assert (0.85 - room) * want_after * 1e6 <= float(r["fault1_post_bps"]) <= 1.15 * want_after * 1e6, (
        r["fault1_post_bps"], want_after, stolen)
    # Restored after the sweep: the link's htb class is at the topology's 100 Mbit/s again (the
    # point's 50 and the event's 10 undone).
    h1 = [x for x in subprocess.run(["ip", "-n", "ll-onelink-h1", "-o", "link"], capture_output=True, text=True)
          .stdout.splitlines() if "lo:" not in x]
    dev = h1[0].split(":")[1].strip().split("@")[0]
    classes = subprocess.run(["tc", "-n", "ll-onelink-h1", "class", "show", "dev", dev], capture_output=True,
                             text=True).stdout
    (wire,) = load_topology(DATA / "one_link.yaml").links
    assert f"rate {wire.impair.rate / 1e6:g}Mbit" in classes, (wire.impair.rate, classes)


def test_active_member_changed_on_the_timeline(results, cleanup_labs):
    # active-backup on h1's bond: member 1 made active at 2 s, member 0 again at 4 s of a 6 s
    # window. Without the events one member carries everything (share 1.0); with them member 1
    # carries ~2 s of ~7 s (warm-up included): the busiest member's share between 0.55 and 0.9.
    cleanup_labs.append("bondsw")
    r, evs, _ = _one_rep_with_events("active_switch.yaml", results)
    assert [e.get("error") for e in evs] == [None, None] and all(" active " in e["did"] for e in evs), evs
    assert 0.55 <= float(r["client_member_tx_max_share"]) <= 0.9, r["client_member_tx_max_share"]
    assert float(r["throughput_bps"]) > (0.5 - steal.room(r)) * MEMBER_BPS, (r["throughput_bps"], steal.words(r))


def test_preflight_proves_the_path_where_the_lab_changed_and_only_there(results, cleanup_labs):
    # Four points, MTU outermost: streams change nothing the pings prove, MTU changes the path.
    # Each row's path MTU is its point's, read from pings where the lab changed; where it did not,
    # the previous point's proof stands (and the pre-flight takes well under the pings' time).
    cleanup_labs.append("onelink")
    store = run(DATA / "preflight_reuse.yaml", Options(results=results), say=lambda *_: None)
    rows = sorted(rows_of(store), key=lambda r: int(r["point_index"]))
    assert [(int(r["mtu"]), int(r["streams"])) for r in rows] == [(1500, 1), (1500, 2), (9000, 1), (9000, 2)]
    assert all(not r.get("error") and int(r["path_mtu"]) == int(r["mtu"]) for r in rows), rows
    proofs = []
    for r in rows:
        pf = json.loads((store.rep_dir(r["point_id"], 1) / "preflight.json").read_text())
        proofs.append(pf["df_fits"] == preflight.PROVED)
    assert proofs == [False, True, False, True]
