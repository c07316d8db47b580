"""Several flows at once (an experiment's `flows:`, `flows: rrul`): the flows a point runs, the
iperf3 clients and servers built for them, their start offsets, the row (per-flow goodput,
Jain's fairness index) on captured iperf3 output, and the verdict's metric. Fakes only: nothing
here starts a process or reads a kernel."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from linklab.handle import LabHandle
from linklab.measure.iperf3 import parse_result
from linklab.measure.probes.tcpinfo import SenderTcpInfo
from linklab.measure.stats import jain_index
from linklab.model import Context, load_topology, resolve
from linklab.sweep import measure_rep
from linklab.sweep.experiment import Experiment, expand_flows
from linklab.sweep.kinds import KINDS, kind_of
from linklab.sweep.kinds.flows import FlowsKind, FlowsTraffic, flow_row
from linklab.sweep.plan import flow_problems, plan_point
from linklab.verdict import metrics

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tests" / "data" / "tools"


def exp(**kw) -> Experiment:
    base = dict(name="x", topology="topologies/e5_three_receivers.yaml", client="snd", server="rxa",
                matrix={"cc": ["cubic"]})
    return Experiment.model_validate({**base, **kw})


def handle():
    lab = resolve(load_topology(ROOT / "topologies/e5_three_receivers.yaml"), Context())
    return LabHandle(lab, backend=object(), netns={n.name: f"ns-{n.name}" for n in lab.nodes})


@pytest.mark.parametrize("shares,want", [
    ([5.0, 5.0, 5.0, 5.0], 1.0),          # equal shares
    ([8.0, 0.0, 0.0, 0.0], 0.25),         # one took everything: 1/n
    ([1.0, 2.0, 3.0], 36 / 42),           # (1+2+3)^2 / (3 * (1+4+9))
    ([0.0, 0.0], 1.0),                    # nothing arrived anywhere: equal
])
def test_jains_index(shares, want):
    assert jain_index(shares) == pytest.approx(want, rel=1e-12)


def test_jains_index_refuses_no_shares_and_negative_ones():
    with pytest.raises(ValueError, match="no values"):
        jain_index([])
    with pytest.raises(ValueError, match="negative"):
        jain_index([1.0, -1.0])


def test_rrul_is_four_tcp_flows_each_way_between_the_points_hosts_with_ping_under_load():
    e = exp(flows="rrul")
    flows = expand_flows(e.flows, "snd", "rxb")
    assert [(f.name, f.direction, f.protocol, f.client, f.server) for f in flows] == [
        *[(f"up{i}", "up", "tcp", "snd", "rxb") for i in range(1, 5)],
        *[(f"down{i}", "down", "tcp", "snd", "rxb") for i in range(1, 5)]]
    assert "ping_load" in e.measure and e.measure[:4] == ["throughput", "cpu", "bond_counters", "nstat"]
    assert exp(flows="rrul", measure=["ping_load", "queue"]).measure == ["ping_load", "queue"]


def test_a_flow_both_ways_is_two_flows_and_unnamed_flows_are_numbered():
    e = exp(flows=[{"client": "snd", "server": "rxa", "direction": "both", "cc": "bbr"},
                   {"name": "late", "client": "snd", "server": "rxc", "start": 2, "duration": 5}])
    names = [(f.name, f.direction, f.cc) for f in expand_flows(e.flows, e.client, e.server)]
    assert names == [("flow1_up", "up", "bbr"), ("flow1_down", "down", "bbr"), ("late", "up", None)]


def test_flows_refuse_axes_that_set_the_one_flows_traffic_and_names_given_twice_all_at_once():
    e = exp(matrix={"streams": [1, 2], "protocol": ["tcp"]},
            flows=[{"name": "a", "client": "snd", "server": "rxa"}, {"name": "a", "client": "snd", "server": "rxq"}])
    problems = flow_problems(e, ["snd", "rxa", "rxb"])
    assert [where for where, _ in problems] == [("matrix", "streams"), ("matrix", "protocol"), ("flows",),
                                                ("flows", 1, "server")]
    assert "unknown host 'rxq' (valid: snd, rxa, rxb)" in problems[-1][1]
    # rrul's flows run between the point's client and server: those axes stay
    assert flow_problems(exp(flows="rrul", matrix={"client": ["snd", "rxc"]}), ["snd", "rxa", "rxc"]) == []


def test_a_flows_axis_gives_each_point_its_flows_and_the_flows_kind():
    one_each_way = [{"name": "up1", "client": "snd", "server": "rxa"},
                    {"name": "down1", "client": "snd", "server": "rxa", "direction": "down"}]
    e = exp(matrix={"flows": ["rrul", one_each_way]}, measure=["throughput"])
    assert kind_of(e) == "flows" and "ping_load" in e.measure  # rrul in any value brings its probes
    rrul = plan_point(e, {}, {"flows": "rrul"}).flows
    assert [f.name for f in rrul] == ["up1", "up2", "up3", "up4", "down1", "down2", "down3", "down4"]
    mine = plan_point(e, {}, {"flows": one_each_way}).flows
    assert [(f.name, f.direction, f.server) for f in mine] == [("up1", "up", "rxa"), ("down1", "down", "rxa")]


def test_a_flows_axis_value_is_checked_as_flows_is_with_its_path():
    with pytest.raises(ValueError) as e:
        exp(matrix={"flows": [[], [{"client": "snd"}], "rrull"]})
    text = str(e.value)
    assert "matrix.flows[0]: a point needs flows" in text
    assert "matrix.flows[1]: 0.server: Field required" in text
    assert "matrix.flows[2]:" in text and "rrul" in text
    bad = exp(matrix={"flows": [[{"client": "snd", "server": "nope"}, {"client": "snd", "server": "snd"}]],
                      "streams": [1]})
    assert [(where, msg.split(" (")[0]) for where, msg in flow_problems(bad, ["snd", "rxa"])] == [
        (("matrix", "streams"), "each flow sets its own streams"),
        (("matrix", "flows", 0, 0, "server"), "unknown host 'nope'"),
        (("matrix", "flows", 0, 1), "a flow from snd to itself")]


def test_a_flow_runs_whole_seconds():
    with pytest.raises(ValueError, match="whole seconds"):
        exp(flows=[{"client": "snd", "server": "rxa", "duration": 2.5}])


def test_flows_choose_the_flows_kind_and_it_reads_no_single_senders_tcp_info(monkeypatch):
    monkeypatch.delenv("LINKLAB_IN_VM", raising=False)
    e = exp(flows="rrul")
    assert kind_of(e) == "flows" and kind_of(exp()) == "iperf3" and KINDS["flows"] is FlowsKind
    plan = plan_point(e, {}, {"cc": "cubic"})
    probes = measure_rep.probes_for(plan, e.measure, handle(), kind=FlowsKind(ROOT))
    assert not any(isinstance(p, SenderTcpInfo) for p in probes)


def test_each_flow_has_its_own_server_port_direction_cc_and_series():
    e = exp(flows=[{"name": "a", "client": "snd", "server": "rxa", "cc": "bbr"},
                   {"name": "b", "client": "snd", "server": "rxb", "direction": "down", "streams": 2}])
    h = handle()
    plan = plan_point(e, {}, {"cc": "cubic"})
    t = FlowsKind(ROOT).traffic(h, plan, 1, [])
    (fa, na, ca), (fb, nb, cb) = t.clients
    a, b = ca.argv(), cb.argv()
    assert a[a.index("-c") + 1] == h.lab.node("snd").address_of("rxa")
    assert b[b.index("-c") + 1] == h.lab.node("snd").address_of("rxb")
    assert (a[a.index("-p") + 1], b[b.index("-p") + 1]) == ("5201", "5202")
    assert a[a.index("-C") + 1] == "bbr" and b[b.index("-C") + 1] == "cubic"  # a flow's own cc, else the point's
    assert "-R" in b and "-R" not in a and b[b.index("-P") + 1] == "2"
    for argv in (a, b):  # the receiver's series every 0.2 s
        assert argv[argv.index("-i") + 1] == "0.2" and "--get-server-output" in argv and argv[argv.index("-O") + 1] == "1"


def test_a_flow_starts_at_its_offset_into_the_window(monkeypatch):
    from linklab import runner
    started: dict[str, float] = {}

    class Proc:
        def __init__(self, argv):
            self.argv = argv

    def start(argv, **kw):
        started[argv[argv.index("-p") + 1]] = time.monotonic()
        return Proc(argv)

    monkeypatch.setattr(runner, "start", start)
    e = exp(flows=[{"name": "a", "client": "snd", "server": "rxa"},
                   {"name": "b", "client": "snd", "server": "rxb", "start": 0.3}])
    t = FlowsKind(ROOT).traffic(handle(), plan_point(e, {}, {"cc": "cubic"}), 0, [])
    t0 = time.monotonic()
    t.start(type("Rep", (), {"handle": handle()})())
    assert "5201" in started and "5202" not in started  # the late flow waits on its timer
    for timer in t.timers:
        timer.join()
    # at its offset, within 0.2 s of it (a timer thread on a busy 2-core machine)
    assert 0.3 <= started["5202"] - t0 <= 0.5
    assert started["5201"] - t0 < 0.1


def test_the_row_has_each_flows_goodput_and_their_fairness_on_captured_output():
    up = (TOOLS / "iperf3_tcp_p1.json").read_text()
    down = (TOOLS / "iperf3_tcp_reverse_json_server.json").read_text()
    e = exp(flows=[{"name": "a", "client": "snd", "server": "rxa"},
                   {"name": "b", "client": "snd", "server": "rxb", "direction": "down"}])
    flows = expand_flows(e.flows, e.client, e.server)
    ra, rb = parse_result(up), parse_result(down)
    row = flow_row(flows, {"a": ra, "b": rb})
    assert row["flow_a_goodput_bps"] == ra.received_bps and row["flow_b_goodput_bps"] == rb.received_bps
    assert row["goodput_up_bps"] == ra.received_bps and row["goodput_down_bps"] == rb.received_bps
    assert row["throughput_bps"] == pytest.approx(ra.received_bps + rb.received_bps)
    x, y = ra.received_bps, rb.received_bps
    assert row["jain_index"] == pytest.approx((x + y) ** 2 / (2 * (x * x + y * y)), abs=1e-4)
    assert 0.5 <= row["jain_index"] <= 1.0
    assert row["flow_a_retransmits"] == ra.retransmits and row["flow_b_direction"] == "down"
    assert row["flow_b_rtt_ms"] == pytest.approx(rb.rtt_mean_us / 1e3, abs=1e-3)  # the sender's view, from the server
    assert row["flow_count"] == 2
    assert metrics.get("jain_index", row) == row["jain_index"]


def test_a_flow_that_could_not_start_fails_the_repetition_naming_it():
    t = FlowsTraffic([], timeout=1)
    t.failed.append("flow up2: no such namespace")
    with pytest.raises(Exception, match="flow up2"):
        t.row(None)


def test_the_verdict_judges_fairness_in_its_unit():
    m = metrics.BY_KEY["jain_index"]
    assert m.scale == "abs" and m.judged and m.min_effect == 0.05 and m.better == "higher"
