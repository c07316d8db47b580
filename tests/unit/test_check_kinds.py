"""Each kind of check: its judgement on real output (tests/data/tools: captured tool output;
tests/data/checks: what `linklab check --json --raw` kept from real labs in the lab VM, see its
README), for a lab that is right and one that is not."""

import json
from pathlib import Path

import pytest

from linklab.check.kinds import REGISTRY
from linklab.check.kinds.base import FAIL, INCONCLUSIVE, PASS
from linklab.lab import build_lab
from tests.captured_tools import out as ping_out, params, tool

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tests" / "data" / "tools"





@pytest.fixture(scope="module")
def bond2():
    return build_lab(ROOT / "topologies" / "bond2.yaml", [])


# ---- goodput's theory: the sweeps' own, per protocol and family -----------------------------

@pytest.mark.parametrize("protocol, family, over", [("tcp", 4, 20 + 20 + 12), ("tcp", 6, 40 + 20 + 12),
                                                     ("udp", 4, 20 + 8), ("udp", 6, 40 + 8)])
def test_goodput_theory_counts_the_headers_of_the_checks_protocol_and_family(bond2, protocol, family, over):
    # The check's theory once counted IPv4's headers whatever the family (an IPv6 flow's 20 more
    # bytes left out: its theory 1.4 % too high at MTU 1500): it is model/paths.py's goodput
    # theory on the slowest hop's rate (bond2: two 1 Gbit/s members, MTU 1500, lab scale applied).
    from linklab.model import paths
    rate, mtu = paths.bottleneck_bps(bond2, "h1", "h2"), paths.path_mtu(bond2, "h1", "h2")
    assert (rate, mtu) == (2 * 1e9 * bond2.scale, 1500)
    p = params("goodput", **{"from": "h1", "to": "h2", "protocol": protocol, "family": family, "min_fraction": 1})
    assert REGISTRY["goodput"].bounds(p, bond2)[0] == pytest.approx(rate * (1500 - over) / (1500 + 14))


# ---- reach: k of n replies, retried; must-not-reach: no reply at all --------------------------

def test_reach_passes_a_lossy_path_once_a_burst_gets_enough_replies(bond2):
    kind, p = REGISTRY["reach"], params("reach", **{"from": "h1", "to": "h2", "count": 30, "need": 3})
    lossy = ping_out("ping_loss")  # 10 of 30 answered (66 % loss)
    assert kind.judge(p, {"h1->h2": [lossy]}, bond2).verdict == PASS
    strict = params("reach", **{"from": "h1", "to": "h2", "count": 30, "need": 11})
    j = kind.judge(strict, {"h1->h2": [lossy, lossy]}, bond2)
    assert j.verdict == FAIL and "10/10 of 30" in j.observed


def test_reach_fails_a_path_that_answers_with_unreachable(bond2):
    kind, p = REGISTRY["reach"], params("reach", **{"from": "h1", "to": "h2"})
    j = kind.judge(p, {"h1->h2": [ping_out("ping_host_unreachable")]}, bond2)
    assert j.verdict == FAIL and "h1->h2 fail: unreachable" in j.detail


def test_must_not_reach_fails_on_a_single_reply_and_passes_on_silence(bond2):
    kind = REGISTRY["reach"]
    p = params("reach", **{"from": "h1", "to": "h2", "expect": "unreachable"})
    assert kind.judge(p, {"h1->h2": [ping_out("ping_host_unreachable")] * 2}, bond2).verdict == PASS
    assert kind.judge(p, {"h1->h2": [ping_out("ping_host_unreachable"), ping_out("ping_loss")]}, bond2).verdict == FAIL


def test_reach_sends_three_bursts_however_slowly_each_one_runs(bond2, monkeypatch):
    # The odds in reach's docstring rest on the number of bursts: a timeout spent by one slow burst
    # (a busy machine, a controller's first packets) does not end a pair's probing before the third.
    from types import SimpleNamespace
    from linklab.check.kinds import reach
    kind, bursts = REGISTRY["reach"], []
    clock = iter(range(0, 10_000, 100))  # every call 100 s later: each burst outlasts any timeout
    monkeypatch.setattr(reach.time, "monotonic", lambda: next(clock))
    silent, lossy = ping_out("ping_host_unreachable"), ping_out("ping_loss")
    answers = [silent, silent, lossy]

    def run(node, argv, timeout):
        bursts.append(argv)
        return SimpleNamespace(**answers[min(len(bursts), 3) - 1])
    ctx = SimpleNamespace(lab=bond2, run=run)
    p = params("reach", **{"from": "h1", "to": "h2", "timeout": "1s", "count": 30})
    raw = kind.observe(p, ctx)
    assert len(bursts) == 3 and kind.judge(p, raw, bond2).verdict == PASS  # the third answered
    answers[2] = silent
    bursts.clear()
    raw = kind.observe(p, ctx)
    assert len(bursts) == 3 and kind.judge(p, raw, bond2).verdict == FAIL  # no more than three
    answers[0] = lossy
    bursts.clear()
    assert len(kind.observe(p, ctx)["h1->h2"]) == 1 == len(bursts)  # one that answers ends it at once


def test_reach_names_what_ping_could_not_do(bond2):
    kind, p = REGISTRY["reach"], params("reach", **{"from": "h1", "to": "h2"})
    j = kind.judge(p, {"h1->h2": [{"stdout": "", "stderr": "ping: h2: Name or service not known\n"}]}, bond2)
    assert j.verdict == FAIL and "Name or service not known" in j.observed


# ---- path_mtu: N passes, N + 1 refused, both with DF -------------------------------------------

def test_path_mtu_passes_when_n_fits_and_n_plus_1_is_refused(bond2):
    kind, p = REGISTRY["path_mtu"], params("path_mtu", **{"from": "h1", "to": "h2", "mtu": 1400})
    j = kind.judge(p, {"fits": [ping_out("ping_df_fits")], "over": [ping_out("ping_df_frag_needed")] * 2}, bond2)
    assert j.verdict == PASS, j
    # The router's ICMP, then the sender's own route once it learned the path MTU from it.
    assert "1401 B: 0/0 of 5, refused: frag needed, local too big (mtu 1400)" in j.observed
    assert j.values["icmp_mtu"] == 1400


def test_path_mtu_fails_when_n_is_refused_and_says_by_whom(bond2):
    kind, p = REGISTRY["path_mtu"], params("path_mtu", **{"from": "h1", "to": "h2", "mtu": 1500})
    j = kind.judge(p, {"fits": [ping_out("ping_df_local_too_long")], "over": [ping_out("ping_df_local_too_long")] * 2}, bond2)
    assert j.verdict == FAIL and "1500-byte packets do not pass" in j.detail
    assert "local too big" in j.observed


def test_path_mtu_fails_when_n_plus_1_passes_too(bond2):
    kind, p = REGISTRY["path_mtu"], params("path_mtu", **{"from": "h1", "to": "h2", "mtu": 1300})
    j = kind.judge(p, {"fits": [ping_out("ping_df_fits")], "over": [ping_out("ping_df_fits")] * 2}, bond2)
    assert j.verdict == FAIL and "path MTU is larger" in j.detail


def test_path_mtu_probes_ip_packet_sizes():
    from linklab.check.kinds.path_mtu import probe
    lab = build_lab(ROOT / "topologies" / "jumbo_pair.yaml", [])
    p4 = params("path_mtu", **{"from": "h1", "to": "h2", "mtu": 9000})
    p6 = params("path_mtu", **{"from": "h1", "to": "h2", "mtu": 9000, "family": 6})
    a4, a6 = probe(p4, lab, 9001).argv(), probe(p6, lab, 9000).argv()
    assert a4[a4.index("-s") + 1] == "8973" and "do" in a4 and a4[-1] == "h2"
    assert a6[a6.index("-s") + 1] == "8952" and a6[-1] == "h2-v6"


# ---- ovs_flow / ovs_controller on OVS's own output ---------------------------------------------

def test_ovs_flow_counts_a_learning_controllers_flows_and_none_of_a_hubs(bond2):
    kind = REGISTRY["ovs_flow"]
    p = params("ovs_flow", switch="s1", match="dl_dst=", cookie="0x1", min=2)
    learned = kind.judge(p, {"stdout": tool("ovs_ofctl_dump_flows_l2_learning.txt"), "returncode": 0}, bond2)
    hub = kind.judge(p, {"stdout": tool("ovs_ofctl_dump_flows_hub.txt"), "returncode": 0}, bond2)
    assert (learned.verdict, learned.observed) == (PASS, "2 of 3 flows match")
    assert hub.verdict == FAIL and hub.observed.startswith("0 of")
    none = params("ovs_flow", switch="s1", match="actions=CONTROLLER", max=0)
    assert kind.judge(none, {"stdout": tool("ovs_ofctl_dump_flows_hub.txt"), "returncode": 0}, bond2).verdict == FAIL


def test_ovs_flow_matches_without_the_counters_that_change():
    from linklab.check.kinds.ovs_flow import matching
    p = params("ovs_flow", switch="s1", match=r"n_packets=")
    assert matching(tool("ovs_ofctl_dump_flows_l2_learning.txt"), p) == []


# ---- rtt: a percentile of real ping output, the emulator's own RTT inconclusive ---------------

def test_rtt_judges_a_percentile_and_the_emulators_rtt_is_inconclusive(bond2):
    from linklab.check.kinds.rtt import rtt_row
    kind = REGISTRY["rtt"]
    lossy = ping_out("ping_loss")  # replies 42.2-45.1 ms
    ok = params("rtt", **{"from": "h1", "to": "h2", "min": "40ms", "max": "46ms"})
    row = {**lossy, "asked_rtt_ms": 44.0}
    assert rtt_row(ok, row)["rtt_s"] == pytest.approx(0.0444, abs=0.0005)
    assert kind.judge(ok, {"rows": [row] * 3}, bond2).verdict == PASS
    tight = params("rtt", **{"from": "h1", "to": "h2", "max": "10ms"})
    assert kind.judge(tight, {"rows": [row] * 3}, bond2).verdict == FAIL
    # Asked for 1 ms, measured 44: the emulator's round trip, not the lab's: inconclusive.
    slow = {**lossy, "asked_rtt_ms": 1.0}
    j = kind.judge(tight, {"rows": [slow] * 3}, bond2)
    assert j.verdict == INCONCLUSIVE and "emulator_rtt" in j.detail
    # A slow emulator stretches a round trip, never shortens it: below a lower bound is sure.
    far = params("rtt", **{"from": "h1", "to": "h2", "min": "100ms"})
    assert kind.judge(far, {"rows": [slow] * 3}, bond2).verdict == FAIL


def test_rtt_under_load_judges_the_ping_beside_the_flow_past_its_warmup(bond2):
    """load: {streams: N}: the measured kinds' flow (N iperf3 streams, not shared with a goodput
    check's: a ping of its own rides beside it) and a percentile of the load ping's replies from
    1 s past the warm-up, on captured ping output (20 replies 0.1 s apart, one of 186 ms)."""
    from types import SimpleNamespace

    from linklab.check.kinds.rtt import load_rtt_row
    from linklab.measure.ping import parse_ping
    from linklab.measure.stats import percentile
    kind = REGISTRY["rtt"]
    p = params("rtt", **{"from": "h1", "to": "h2", "load": {"streams": 4}, "percentile": 90, "max": "50ms",
                         "duration": 3, "warmup": 1})
    assert "-P" in kind.client(p, bond2).argv() and "4" in kind.client(p, bond2).argv()
    assert kind.what(p) == "RTT p90 h1 -> h2 beside 4 TCP streams"
    assert kind.flow(p, SimpleNamespace(lab=bond2)) is None  # its own flow: the ping is its probe
    assert [type(x).__name__ for x in kind.extra_probes(p, SimpleNamespace(lab=bond2))] == ["LoadRtt"]
    assert params("rtt", **{"from": "h1", "to": "h2", "max": "50ms"}).load is None  # idle, as before
    text = tool("ping_idle_q5ms.txt")
    row = load_rtt_row(text, "", 0.1, 1.0, 90)
    kept = [r.rtt_ms for r in parse_ping(text).replies if r.seq >= 11]  # seq 11..20: sent 1 s on
    assert (row["load_ping_sent"], row["load_ping_received"]) == (10, 10)
    assert row["load_rtt_s"] == pytest.approx(percentile(kept, 90) / 1e3) and row["load_rtt_s"] > 0.03
    assert load_rtt_row(text, "", 0.1, 1.0, 50)["load_rtt_s"] < 0.001  # the median: an idle path's
    assert load_rtt_row(text, "", 0.1, 2.5, 50)["load_ping_sent"] == 0 and "error" in load_rtt_row(text, "", 0.1, 2.5, 50)
    cut = load_rtt_row(tool("ping_host_unreachable.txt"), "", 0.1, 0.0, 50)
    assert "error" in cut and "load_rtt_s" not in cut
    # Judged on the rows the repetitions made: a full FIFO's 121 ms beside the flow fails a 50 ms
    # bound, the same flagged by a saturated core is inconclusive (a busy emulator delays more),
    # fq_codel's 25 ms passes.
    fifo, fair = {"load_rtt_s": 0.141}, {"load_rtt_s": 0.025}
    assert kind.judge(p, {"rows": [fifo] * 3}, bond2).verdict == FAIL
    assert kind.judge(p, {"rows": [{**fifo, "flags": "core_saturated"}] * 3}, bond2).verdict == INCONCLUSIVE
    assert kind.judge(p, {"rows": [fair] * 2}, bond2).verdict == PASS
    assert kind.decided(p, [fifo, fifo], bond2) == FAIL and kind.decided(p, [fair, fair], bond2) == PASS
    # The idle ping's settings mean nothing beside a flow: refused, saying what sets its length.
    from pydantic import ValidationError
    with pytest.raises(ValidationError, match="count set the ping of an idle path"):
        params("rtt", **{"from": "h1", "to": "h2", "load": {"streams": 2}, "max": "50ms", "count": 50})
    with pytest.raises(ValidationError):
        params("rtt", **{"from": "h1", "to": "h2", "load": {"streams": 0}, "max": "50ms"})


def test_rtt_under_load_probe_pings_through_the_window_and_judges_past_the_skip(monkeypatch):
    """The probe a loaded rtt check adds: a sweep's load ping (one every 0.1 s for the warm-up
    and the window), its output (captured, 20 replies) kept as ping-load.txt and judged from 1 s
    past the warm-up at the check's percentile."""
    import subprocess
    from types import SimpleNamespace

    from linklab.check.kinds.rtt import LoadRtt
    from linklab.measure.probes import ping as probes_ping
    started = []

    def start(argv, netns=None, **kw):
        started.append((argv, netns))
        return subprocess.Popen(["cat", str(TOOLS / "ping_idle_q5ms.txt")], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    monkeypatch.setattr(probes_ping.runner, "start", start)
    rep = SimpleNamespace(omit=0.0, family=4, target="h2", client_ns="ll-x-h1", raw={})
    probe = LoadRtt(duration=2, percentile=50)
    probe.before(rep)
    probe.start(rep)
    probe.finish(rep)
    argv, netns = started[0]
    assert netns == "ll-x-h1" and argv[argv.index("-c") + 1] == "19" and argv[argv.index("-i") + 1] == "0.1"
    assert rep.raw["ping-load.txt"].startswith("PING 10.77.0.2")
    row = probe.row(rep)
    assert (row["load_ping_sent"], row["load_ping_received"], row["load_ping_skip_s"]) == (10, 10, 1.0)
    # seq 11-20 of the capture (sent 1 s on): 0.474-0.564 ms but three (13.3, 33.9, 186): median 0.548 ms
    assert row["load_rtt_s"] == pytest.approx((0.532 + 0.564) / 2 / 1e3)


def test_repetitions_stop_once_the_median_is_decided_either_way(bond2):
    """More than half of `repeat` inside the bounds decides a pass, more than half surely beyond
    one bound (a limited repetition on the side its limit moves a figure to is not sure) a fail:
    the median of all would be there whatever the rest measured. Split, an error, too few sure
    misses, or too few: measured on."""
    from types import SimpleNamespace

    from linklab.check.kinds.rtt import rtt_row
    gp = REGISTRY["goodput"]
    p = params("goodput", **{"from": "h1", "to": "h2", "min": "500mbit", "repeat": 3})  # >= 475 Mbit/s with 5 %
    fast, slow = {"throughput_bps": 600e6 * bond2.scale}, {"throughput_bps": 300e6 * bond2.scale}
    assert gp.decided(p, [fast], bond2) is None and gp.decided(p, [slow], bond2) is None
    assert gp.decided(p, [fast, fast], bond2) == PASS and gp.decided(p, [slow, slow], bond2) == FAIL
    assert gp.decided(p, [fast, slow], bond2) is None and gp.decided(p, [slow, fast], bond2) is None
    assert gp.decided(p, [fast, {"error": "iperf3: no answer"}, fast], bond2) is None
    assert gp.decided(p, [slow, {"error": "iperf3: no answer"}, slow], bond2) is None
    assert gp.decided(p, [{"throughput_bps": 476e6 * bond2.scale}] * 2, bond2) == PASS  # inside by the 5 % tolerance
    assert gp.decided(p, [{"throughput_bps": 474e6 * bond2.scale}] * 2, bond2) == FAIL  # beyond it
    # A miss the emulator may have caused could have been inside: it counts toward no fail.
    limited = {**slow, "flags": "core_saturated"}
    assert gp.decided(p, [slow, limited], bond2) is None and gp.decided(p, [limited, fast, fast], bond2) == PASS
    assert gp.decided(p, [slow, limited, slow], bond2) == FAIL  # two sure misses of three
    assert gp.judge(p, {"rows": [slow, limited, slow]}, bond2).verdict == FAIL
    assert gp.judge(p, {"rows": [slow, limited, limited]}, bond2).verdict == INCONCLUSIVE
    # A limit holds a throughput down, never up: a limited figure above the upper bound is sure.
    ceiling = params("goodput", **{"from": "h1", "to": "h2", "max": "400mbit", "repeat": 3})
    high = {**fast, "flags": "core_saturated"}
    assert gp.decided(ceiling, [high, high], bond2) == FAIL
    assert gp.judge(ceiling, {"rows": [high] * 3}, bond2).verdict == FAIL
    five = params("goodput", **{"from": "h1", "to": "h2", "min": "500mbit", "repeat": 5})
    assert gp.decided(five, [fast, fast], bond2) is None and gp.decided(five, [fast, slow, fast, fast], bond2) == PASS
    assert gp.decided(five, [slow, fast, slow, slow], bond2) == FAIL
    four = params("goodput", **{"from": "h1", "to": "h2", "min": "500mbit", "repeat": 4})
    assert gp.decided(four, [fast, fast], bond2) is None and gp.decided(four, [fast, fast, fast], bond2) == PASS
    assert gp.decided(four, [slow, slow], bond2) is None and gp.decided(four, [slow, slow, slow], bond2) == FAIL
    # Both sides: more than half beyond the lower bound and the upper one together is no majority.
    band = params("goodput", **{"from": "h1", "to": "h2", "min": "400mbit", "max": "500mbit", "repeat": 3})
    assert gp.decided(band, [fast, slow], bond2) is None and gp.decided(band, [fast, slow, fast], bond2) == FAIL
    # A stopped check is judged on the repetitions it ran as it was decided.
    assert gp.judge(p, {"rows": [fast, fast]}, bond2).verdict == PASS
    assert gp.judge(p, {"rows": [slow, slow]}, bond2).verdict == FAIL

    # rtt's own loop: two bursts inside 40-46 ms end it; bursts outside, flagged emulator_rtt (the
    # lab asks for no delay), run all `repeat`: the emulator's round trip may explain them.
    kind, bursts = REGISTRY["rtt"], []
    lossy = ping_out("ping_loss")  # replies 42.2-45.1 ms

    def run(node, argv, timeout):
        bursts.append(argv)
        return SimpleNamespace(**lossy)
    ctx = SimpleNamespace(lab=bond2, run=run)
    ok = params("rtt", **{"from": "h1", "to": "h2", "min": "40ms", "max": "46ms", "repeat": 3})
    assert len(kind.observe(ok, ctx)["rows"]) == 2 == len(bursts)
    bursts.clear()
    tight = params("rtt", **{"from": "h1", "to": "h2", "max": "10ms", "repeat": 3})
    assert len(kind.observe(tight, ctx)["rows"]) == 3 == len(bursts)
    assert rtt_row(ok, {**lossy, "asked_rtt_ms": None})["rtt_s"] > 0.01


# ---- every check captured from a real lab, judged again -----------------------------------------

CAPTURED = ROOT / "tests" / "data" / "checks"


def _reports():
    """(capture, stage, report) of every report kept in tests/data/checks: `linklab check --json
    --raw` results and `--selftest --json --raw` stages."""
    out = []
    for path in sorted(CAPTURED.glob("*.json")):
        doc = json.loads(path.read_text())
        if doc["schema"].startswith("linklab-check/"):
            out.append((path.stem, "-", doc))
        else:
            out += [(path.stem, st["name"], st["report"]) for st in doc["stages"] if st["report"]]
    return out


def _lab_of(report):
    """The lab as it was when checked: its topology, seed and `set` overrides, at its scale."""
    from linklab.model import Context, load_topology, resolve
    topo = load_topology(ROOT / report["topology"], [tuple(o) for o in report["overrides"]], seed=report["seed"])
    return resolve(topo, Context(auto_scale=report["scale"], auto_scale_reason="as captured"))


CASES = [(cap, stage, c["id"]) for cap, stage, rep in _reports() for c in rep["checks"] if c["verdict"] != "skip"]


@pytest.mark.parametrize("capture,stage,check_id", CASES, ids=[f"{a}:{b}:{c}" for a, b, c in CASES])
def test_a_check_captured_from_a_real_lab_is_judged_again_as_it_was(capture, stage, check_id):
    from linklab.check.spec import load_checks
    report = next(rep for cap, st, rep in _reports() if (cap, st) == (capture, stage))
    lab = _lab_of(report)
    spec = load_checks(ROOT / report["checks_file"], lab, report["seed"])
    got = next(c for c in report["checks"] if c["id"] == check_id)
    p = spec.by_id(check_id)
    j = REGISTRY[p.kind].judge(p, got["raw"], lab)
    assert (j.verdict, j.observed) == (got["verdict"], got["observed"])


def _captured(capture: str, check_id: str, stage: str = "-"):
    report = next(rep for cap, st, rep in _reports() if (cap, st) == (capture, stage))
    return next(c for c in report["checks"] if c["id"] == check_id), _lab_of(report)


def test_state_kinds_fail_on_captured_output_that_is_not_what_they_ask():
    """The rr_reorder lab as captured (balance-rr, MTU 1500, tcp_reordering 3), asked otherwise."""
    mtu, lab = _captured("rr_reorder", "mtu")
    assert REGISTRY["mtu"].judge(params("mtu", link="bond", mtu=9000), mtu["raw"], lab).verdict == FAIL
    assert REGISTRY["mtu"].judge(params("mtu", link="bond"), mtu["raw"], lab).verdict == PASS  # one MTU everywhere
    bond, _ = _captured("rr_reorder", "bond-rr")
    j = REGISTRY["bond"].judge(params("bond", node="h1", link="bond", mode="802.3ad", lacp_aggregated=True), bond["raw"], lab)
    assert j.verdict == FAIL and "mode is balance-rr" in j.detail and "LACP not aggregated" in j.detail
    j = REGISTRY["bond"].judge(params("bond", node="h1", link="bond", members_up=3, options={"miimon": 100}), bond["raw"], lab)
    assert j.verdict == FAIL and "2 members up" in j.detail and "miimon 100" in j.observed
    sysctl, _ = _captured("rr_reorder", "sysctl-default")
    assert REGISTRY["sysctl"].judge(params("sysctl", node="h1", key="net.ipv4.tcp_reordering", value=127),
                                    sysctl["raw"], lab).verdict == FAIL
    rmem, _ = _captured("rr_reorder", "sysctl-rmem")
    assert REGISTRY["sysctl"].judge(params("sysctl", node="h1", key="net.ipv4.tcp_rmem", value="4096  131072\t6291456"),
                                    rmem["raw"], lab).verdict == PASS  # the kernel's whitespace is not a value
    q, _ = _captured("rr_reorder", "qdisc-m1")
    j = REGISTRY["qdisc"].judge(params("qdisc", node="h1", link="bond", member=1, rate="2gbit", loss="1%"), q["raw"], lab)
    assert j.verdict == FAIL and "rate 100mbit" in j.detail and "loss 0%" in j.detail


def test_measured_kinds_on_captured_rows_flags_make_a_miss_inconclusive_and_without_them_a_failure():
    gp, lab = _captured("rr_reorder", "goodput-rr")  # 112 and 85.5 Mbit/s; one row flagged host_disturbed
    high = params("goodput", **{"from": "h1", "to": "h2", "min_fraction": 0.9})
    j = REGISTRY["goodput"].judge(high, gp["raw"], lab)
    assert j.verdict == INCONCLUSIVE and "host_disturbed" in j.detail
    quiet = {"rows": [{**r, "flags": "", "flag_evidence": ""} for r in gp["raw"]["rows"]]}
    assert REGISTRY["goodput"].judge(high, quiet, lab).verdict == FAIL
    low = params("goodput", **{"from": "h1", "to": "h2", "min": "500mbit"})  # x0.1: 50 Mbit/s
    assert REGISTRY["goodput"].judge(low, gp["raw"], lab).verdict == PASS
    loss, _ = _captured("rr_reorder", "loss-udp")
    strict = params("loss", **{"from": "h1", "to": "h2", "rate": "500mbit", "max": "1%"})
    assert REGISTRY["loss"].judge(strict, loss["raw"], lab).verdict == INCONCLUSIVE
    quiet = {"rows": [{**r, "flags": "", "flag_evidence": ""} for r in loss["raw"]["rows"]]}
    assert REGISTRY["loss"].judge(strict, quiet, lab).verdict == FAIL
    lax = params("loss", **{"from": "h1", "to": "h2", "rate": "500mbit", "max": "10%"})
    assert REGISTRY["loss"].judge(lax, loss["raw"], lab).verdict == PASS
    ro, _ = _captured("rr_reorder", "reorder")  # balance-rr over members 0.1 and 0.6 ms apart
    assert REGISTRY["reorder"].judge(params("reorder", **{"from": "h1", "to": "h2", "max": 0.5}), ro["raw"], lab).verdict == PASS


# ---- member_share and failover on rows a sweep measured (the same probes, the same row keys) ----

RUNS = ROOT / "tests" / "data" / "runs"


def _rows(run: str, match: str) -> list[dict]:
    return [r for r in json.loads((RUNS / run / "rows.json").read_text()) if match in r.get("point_id", "")]


def test_member_share_on_real_bond_counters_a_hashed_bond_fails_round_robin_passes(bond2):
    kind = REGISTRY["member_share"]
    p = params("member_share", **{"from": "h1", "to": "h2", "node": "h1", "link": "bond", "min_share": 0.2})
    lacp = _rows("e1-quick-1rep", "802.3ad_mtu-1500_streams-20")  # E1: every flow on one member
    rr = _rows("e1-quick-1rep", "balance-rr_mtu-1500_streams-20")
    j = kind.judge(p, {"rows": lacp}, bond2)
    assert j.verdict == FAIL and j.values["median"] < 1e-4
    assert kind.judge(p, {"rows": rr}, bond2).verdict == PASS
    # a flag of the emulator does not make a hash's choice inconclusive
    flagged = [{**r, "flags": "core_saturated;host_disturbed", "flag_evidence": "cpu0 99% busy; host busy"} for r in lacp]
    assert kind.judge(p, {"rows": flagged}, bond2).verdict == FAIL
    most = params("member_share", **{"from": "h1", "to": "h2", "node": "h1", "link": "bond", "max_share": 0.6})
    assert kind.judge(most, {"rows": rr}, bond2).verdict == PASS and kind.judge(most, {"rows": lacp}, bond2).verdict == FAIL


def test_failover_on_real_outages():
    from linklab.sweep.experiment import topology_path
    from linklab.sweep.plan import load_experiment
    exp_path = ROOT / "experiments" / "failover.yaml"
    lab = build_lab(topology_path(exp_path, load_experiment(exp_path)), [])
    kind = REGISTRY["failover"]
    rows = _rows("failover-quick-first-format", "active-backup")  # outage 0.2 s
    ok = params("failover", **{"from": "h1", "to": "h2", "link": "up1", "max_outage": "1s"})
    assert kind.judge(ok, {"rows": rows}, lab).verdict == PASS
    strict = params("failover", **{"from": "h1", "to": "h2", "link": "up1", "max_outage": "100ms"})
    j = kind.judge(strict, {"rows": rows}, lab)
    assert j.verdict == FAIL and j.observed.startswith("200ms")
    never = [{**r, "fault1_outage_s": None} for r in rows]  # never back: the rest of the window
    assert kind.judge(ok, {"rows": never}, lab).values["median"] == pytest.approx(6 - 2)
    not_applied = [{**r, "fault1_applied_s": None} for r in rows]
    assert kind.judge(ok, {"rows": not_applied}, lab).verdict == FAIL


def test_checks_of_one_flow_are_judged_on_the_same_repetitions(bond2, monkeypatch):
    """A bond's member shares and the goodput of the same 16-stream flow: the flow is sent for
    the first check only; the second is judged on its repetitions and measures only what it still
    lacks. Another command (another stream count), or a check whose measurement brings a fault,
    sends its own flow."""
    from types import SimpleNamespace

    from linklab.check.kinds.base import Context
    from linklab.measure import traffic
    from linklab.sweep import measure_rep

    sent = []
    members = bond2.links[0].bond_members("h1")

    def fake_measure(rep, traf, probes, clock=None):
        sent.append(traf.client.argv())
        shares = {f"client_member_tx_share_{m}": 1 / len(members) for m in members}
        return {}, {"throughput_bps": 900e6 * bond2.scale, **shares}

    monkeypatch.setattr(measure_rep, "measure", fake_measure)
    monkeypatch.setattr(traffic, "start_servers", lambda *a, **k: SimpleNamespace(stop=lambda: None))
    handle = SimpleNamespace(lab=bond2, ns=lambda n: f"ns-{n}", backend=None, record={})
    ctx = Context(handle)
    link = bond2.links[0].name
    spread = params("member_share", **{"id": "spread", "from": "h1", "to": "h2", "node": "h1", "link": link,
                                       "streams": 16, "min_share": 0.2})
    goodput = params("goodput", **{"id": "goodput", "from": "h1", "to": "h2", "streams": 16, "min": "500mbit"})
    first = REGISTRY["member_share"].observe(spread, ctx)
    assert len(sent) == 2 == len(first["rows"])  # decided after two of three
    second = REGISTRY["goodput"].observe(goodput, ctx)
    assert len(sent) == 2 and second["flow_of"] == "spread" and len(second["rows"]) == 2
    j = REGISTRY["goodput"].judge(goodput, second, bond2)
    assert j.verdict == PASS and "spread's flow" in j.detail
    # Another stream count is another flow.
    eight = params("goodput", **{"id": "g8", "from": "h1", "to": "h2", "streams": 8, "min": "500mbit"})
    assert "flow_of" not in REGISTRY["goodput"].observe(eight, ctx) and len(sent) == 4
    # A check the shared rows do not decide (two of five) measures what it lacks itself: one more.
    five = params("goodput", **{"id": "five", "from": "h1", "to": "h2", "streams": 16, "min": "500mbit", "repeat": 5})
    more = REGISTRY["goodput"].observe(five, ctx)
    assert more["flow_of"] == "spread" and len(more["rows"]) == 3 and len(sent) == 5
    # Member shares read from rows that counted other members are not this check's.
    h2 = params("member_share", **{"id": "spread-h2", "from": "h1", "to": "h2", "node": "h2", "link": link,
                                   "streams": 16, "min_share": 0.2})
    assert "flow_of" not in REGISTRY["member_share"].observe(h2, ctx)


def test_a_measured_check_pings_the_idle_path_only_where_a_flag_it_reads_needs_it(bond2, monkeypatch):
    """The idle RTT (5 pings before each flow) feeds one flag, emulator_rtt, which no flow kind's
    verdict reads (their limits): goodput, member shares, failover, loss and reordering measure
    without it; a kind whose limits name emulator_rtt gets it first."""
    from types import SimpleNamespace

    from linklab.check.kinds.base import Context
    from linklab.check.kinds.measured import DELAY_LIMITS
    from linklab.measure.probes.ping import IdlePing
    monkeypatch.delenv("LINKLAB_IN_VM", raising=False)
    ctx = Context(SimpleNamespace(lab=bond2, ns=lambda n: f"ns-{n}", backend=None, record={}))
    gp = params("goodput", **{"from": "h1", "to": "h2", "min": "500mbit"})
    kinds = [type(p).__name__ for p in REGISTRY["goodput"].probes(gp, ctx, {})]
    assert kinds == ["QueueCounters", "ControllerCpu", "CpuLoad", "Disturbance"], kinds
    for name in ("member_share", "failover", "loss", "reorder"):
        assert "emulator_rtt" not in REGISTRY[name].limits, name
    delay = type("DelayKind", (type(REGISTRY["goodput"]),), {"limits": DELAY_LIMITS})()
    assert isinstance(delay.probes(gp, ctx, {})[0], IdlePing)
