"""What experiments/ecmp_vs_bond.yaml needed of the sweep: an axis of the experiment's own whose
values are named sets of overrides, events only at the points their `when` matches, a link's
cable pulled as an event, named links' byte counters as paths, and each flow's stall after a
fault. Pure: no lab."""

import copy
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from linklab.errors import ValidationFailed
from linklab.handle import LabHandle
from linklab.measure import counters, timeline
from linklab.measure.probes.base import Repetition
from linklab.measure.probes.counters import QueueCounters
from linklab.measure.probes.faults import FaultTimeline
from linklab.model import Context, load_topology, resolve
from linklab.model.loader import read_yaml
from linklab.sweep import measure_rep
from linklab.sweep.experiment import Event, Experiment, apply_quick
from linklab.sweep.matrix import expand
from linklab.sweep.plan import load_experiment, plan_point

ROOT = Path(__file__).resolve().parents[2]
EXP = ROOT / "experiments/ecmp_vs_bond.yaml"


def raw_exp() -> dict:
    return read_yaml(EXP)[0]


def test_the_bundled_experiment_plans_each_design_by_its_costs_and_its_own_events():
    exp = load_experiment(EXP)
    topo = read_yaml(ROOT / "topologies/ecmp_bond.yaml")[0]
    points = expand(exp.matrix)
    assert len(points) == 12 and len(expand(apply_quick(exp).matrix)) == 8
    plans = {(p.axes["design"], p.axes["fault"], p.axes["streams"]): plan_point(exp, topo, p.axes) for p in points}
    assert plans["bond", "none", 1].overrides == (("links[lag].cost", 1),)
    assert plans["ecmp", "one_path", 16].overrides == (("links[lag].cost", 3),)
    assert plans["ecmp", "none", 4].events == () and plans["bond", "none", 16].events == ()
    assert [e.set for e in plans["bond", "one_path", 4].events] == [
        "links[lag].bond.member[0].state=down", "links[lag].bond.member[0].state=up"]
    assert [e.set for e in plans["ecmp", "one_path", 1].events] == ["links[path0].state=down", "links[path0].state=up"]
    assert plans["ecmp", "none", 16].tool.streams == 16


def test_the_designs_route_over_the_bond_or_over_both_equal_cost_links():
    # The lab each design's overrides give: r1's routes toward h2's subnet (IPv4 and IPv6) through
    # lag's bond, or each one multipath route over path0's and path1's interfaces.
    def r1_routes(cost):
        lab = resolve(load_topology(ROOT / "topologies/ecmp_bond.yaml", [("links[lag].cost", cost)]), Context())
        return [sorted(h.dev for h in r.nexthops) for r in lab.node("r1").routes]
    assert r1_routes(1) == [["bond0"], ["bond0"]]
    assert r1_routes(3) == [["eth2", "eth3"], ["eth2", "eth3"]]


@pytest.mark.parametrize("edit,fragment", [
    (lambda d: d["matrix"].update(design=["bond", "lacp"]), "matrix.design[1]: unknown design 'lacp' (valid: bond, ecmp"),
    (lambda d: d["matrix"].update(flavour=["x"]), "unknown axis 'flavour' (valid: mtu,"),
    (lambda d: d["overrides"].update(mtu={"a": {"links[0].mtu": 9000}}), "overrides.mtu: a built-in axis"),
    (lambda d: d["events"][0].update(when={"colour": "red"}), "events[0].when.colour: not an axis of the matrix"),
    (lambda d: d["events"][0].update(when={"design": "lacp"}), "events[0].when.design: lacp is not one of its values"),
    (lambda d: d.update(measure=["throughput"]), "counted_links: names the links link_counters reads"),
])
def test_bad_named_axes_and_whens_are_named(edit, fragment):
    data = copy.deepcopy(raw_exp())
    edit(data)
    with pytest.raises(ValidationError) as e:
        Experiment.model_validate(data)
    assert fragment in str(e.value)


def test_an_unknown_counted_link_is_named_with_the_valid_ones(tmp_path):
    text = EXP.read_text().replace("counted_links: [lag, path0, path1]", "counted_links: [lag, path2]")
    (tmp_path / "e.yaml").write_text(text.replace("../topologies/", f"{ROOT}/topologies/"))
    with pytest.raises(ValidationFailed) as e:
        load_experiment(tmp_path / "e.yaml")
    assert "unknown link 'path2' (valid: h1-r1, lag, path0, path1, r2-h2)" in str(e.value.problems)


def test_a_link_state_event_and_when():
    ev = Event(at=1, set="links[ path0 ].state = down", when={"design": ["ecmp", "x"]})
    assert ev.kind == "link_state" and ev.link_state() == ("path0", False) and ev.is_failure
    assert ev.applies({"design": "ecmp", "streams": 1}) and not ev.applies({"design": "bond"})
    assert Event(at=1, set="links[0].state=up").applies({})


def test_a_link_taken_down_comes_back_when_the_window_ends():
    calls = []

    class Backend:
        def set_link_state(self, lab, link, up):
            calls.append((link, up))
            return f"{link} {up}"

    lab = resolve(load_topology(ROOT / "topologies/ecmp_bond.yaml"), Context())
    r = Repetition(LabHandle(lab, backend=Backend(), netns={}), "h1", "h2", 4, omit=0.0)
    probe = FaultTimeline([Event(at=0.05, set="links[path0].state=down")], {})
    probe.start(r)
    probe.thread.join(timeout=5)
    probe.finish(r)
    assert calls == [("path0", False), ("path0", True)]
    assert json.loads(r.raw["events.json"])[0]["did"] == "path0 False"


def test_paths_are_each_veth_of_the_counted_links_and_their_shares_fill_the_row(monkeypatch):
    lab = resolve(load_topology(ROOT / "topologies/ecmp_bond.yaml"), Context())
    paths = measure_rep.path_ends(lab, ["lag", "path0", "path1"])
    assert list(paths) == ["lag_0", "lag_1", "path0", "path1"]
    assert {node for node, _ in paths.values()} == {"r1"}
    assert len(measure_rep.path_ends(lab)) == 6  # none named: every link's every veth
    zero = dict.fromkeys(counters.FIELDS, 0)
    names = [ifname for _, ifname in paths.values()]
    moved = dict(zip(names, (0, 0, 600, 400)))
    snaps = iter([{n: zero for n in names}, {n: {**zero, "tx_bytes": moved[n]} for n in names}])
    monkeypatch.setattr(counters, "snapshot", lambda ns, ifnames: (next(snaps), {}) if ns == "ns-r1" else ({}, {}))
    r = Repetition(LabHandle(lab, backend=object(), netns={n.name: f"ns-{n.name}" for n in lab.nodes}), "h1", "h2", 4, omit=0.0)
    probe = QueueCounters({}, paths)
    probe.before(r)
    row = probe.row(r)
    assert row["path_tx_share_path0"] == 0.6 and row["path_tx_share_lag_0"] == 0.0
    assert row["path_tx_max_share"] == 0.6 and row["path_tx_active"] == 2 and row["path_tx_bytes_path1"] == 400
    assert set(json.loads(r.raw["link_counters.json"])) == set(paths)


def _doc(per_stream: list[list[float]]) -> dict:
    """An iperf3 JSON of 0.1 s intervals, each stream's rates given (Mbit/s)."""
    intervals = []
    for k in range(len(per_stream[0])):
        streams = [{"start": k / 10, "end": (k + 1) / 10, "bits_per_second": s[k] * 1e6, "omitted": False}
                   for s in per_stream]
        intervals.append({"streams": streams, "sum": {"start": k / 10, "end": (k + 1) / 10,
                                                      "bits_per_second": sum(s[k] for s in per_stream) * 1e6}})
    return {"intervals": intervals}


def test_a_fault_on_one_path_stalls_only_its_flows_which_the_sums_outage_does_not_see():
    # Two flows at 50 Mbit/s; at 1.0 s the first stops for 0.4 s while the other takes up the room.
    hit = [50.0] * 10 + [0.0] * 4 + [50.0] * 6
    other = [50.0] * 10 + [90.0] * 4 + [50.0] * 6
    doc = _doc([hit, other])
    assert len(timeline.stream_series(doc)) == 2
    fault = timeline.effect(timeline.series(doc), 1.0, True, streams=timeline.stream_series(doc))
    assert fault.outage_s == 0.0  # the sum never fell below half
    assert fault.flow_stall_s == pytest.approx(0.4, abs=1e-6) and fault.flows_stalled == 1
    assert fault.row("fault1_")["fault1_flow_stall_s"] == fault.flow_stall_s
    # Without per-stream intervals: no stall measured (None), not 0.
    assert timeline.effect(timeline.series(doc), 1.0, True).flow_stall_s is None
