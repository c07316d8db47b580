"""Node kinds behind a registry, plugged into the build by the phase each names (code above the
backend reaching it only through the registry: tests/unit/test_layers.py)."""

from pathlib import Path

import pytest

from linklab.backends.linux import build, kinds
from linklab.backends.linux.kinds.base import Kind
from linklab.errors import UsageError
from linklab.model import Context, load_topology, resolve

ROOT = Path(__file__).resolve().parents[2]


def test_every_kind_offers_the_same_verbs_and_names_a_build_phase():
    assert list(kinds.REGISTRY) == ["host", "container", "router", "frr", "bridge", "ovs", "controller"]
    for name, kind in kinds.REGISTRY.items():
        assert isinstance(kind, Kind) and kind.name == name
        for verb in ("check", "create", "configure", "inspect", "remove", "claim", "create_all", "remove_all",
                     "where", "exec_env", "marked", "remove_marked", "release_idle"):
            assert callable(getattr(kind, verb, None)), f"kind {name} lacks {verb}"
        assert kind.phase in build.PHASES, f"kind {name} configures in an unknown phase {kind.phase!r}"
    # A kind writes only what differs: host and bridge inherit the empty verbs.
    for name in ("host", "bridge"):
        kind = kinds.REGISTRY[name]
        assert type(kind).inspect is Kind.inspect and type(kind).remove is Kind.remove and type(kind).check is Kind.check


def test_unknown_kind_lists_the_valid_ones():
    with pytest.raises(UsageError) as e:
        kinds.get("p4switch")
    assert "valid: host, container, router, frr, bridge, ovs, controller" in str(e.value)


def test_a_router_is_a_host_that_forwards_and_says_so_in_status():
    lab = resolve(load_topology(ROOT / "topologies/routed_chain.yaml"), Context())
    router = lab.node("r1")
    assert kinds.kind_of(router) == "router" and [k.name for k in kinds.of(router)] == ["router"]
    kind = kinds.REGISTRY["router"]
    assert isinstance(kind, kinds.REGISTRY["host"].__class__) and kind.phase == "addresses"  # addresses, hosts file
    assert type(kind).inspect is not Kind.inspect  # forwarding read back for status
    assert build.PHASES.index("routes") == build.PHASES.index("addresses") + 1  # gateways need the addresses


def test_a_router_of_an_ospf_lab_runs_frr_beside_after_its_addresses_then_the_build_waits_for_ospf():
    lab = resolve(load_topology(ROOT / "topologies/ospf3.yaml"), Context())
    assert [k.name for k in kinds.of(lab.node("r1"))] == ["router", "frr"]
    assert [k.name for k in kinds.of(lab.node("h1"))] == ["host"]
    frr = kinds.REGISTRY["frr"]
    assert build.PHASES.index(frr.phase) > build.PHASES.index("addresses")  # ospfd needs addressed interfaces
    assert build.PHASES.index("converge") == build.PHASES.index(frr.phase) + 1 and build.learned in build.STEPS["converge"]
    assert type(frr).inspect is not Kind.inspect and type(frr).remove is not Kind.remove  # neighbours; down stops it


def test_build_runs_phases_in_order_and_each_kind_in_the_phase_it_names(monkeypatch):
    """The build loops over phases and kinds: a new kind plugs in by naming a phase, and the
    steps every lab needs run first in theirs (faked here: nothing touches the kernel)."""
    lab = resolve(load_topology(ROOT / "tests/golden/topologies/good/ovs_bonds.yaml"), Context())
    seen = []

    class Probe(Kind):
        def __init__(self, name, phase):
            self.name, self.phase = name, phase  # instance attributes stand in for the class ones

        def create(self, b, node):
            seen.append(("create", self.name, node.name))

        def begin(self, b, node):
            seen.append(("begin", self.name, node.name))

        def configure(self, b, node):
            seen.append((self.phase, self.name, node.name))

    fakes = {n.name: [Probe(f"first-{kinds.kind_of(n)}", "switches" if n.kind == "switch" else "addresses")]
             + ([Probe("beside", "daemons")] if n.controller else []) for n in lab.nodes}
    common = {phase: (lambda b, phase=phase: seen.append((phase, "common", "*")),)
              for phase in ("links", "mtu", "queues", "leftovers")}
    monkeypatch.setattr(build, "STEPS", {"namespaces": build.STEPS["namespaces"], **common})
    monkeypatch.setattr(build.sysctl, "set_in_netns", lambda ns, values: seen.append(("dad", ns, "*")))
    b = build.Build(lab, {}, {n.name: f"ns-{n.name}" for n in lab.nodes}, "mark", fakes, {}, {}, [])
    build.run(b)
    # Every namespace first, made by the node's first kind (a controller beside its switch makes
    # none; a kind makes all of its nodes at once), then DAD off in each
    assert seen[:2 * len(lab.nodes)] == ([("create", fakes[n.name][0].name, n.name) for n in lab.nodes]
                                         + [("dad", f"ns-{n.name}", "*") for n in lab.nodes])
    # Then every kind of every node begins what is slow to become ready, before any link is made
    begun = seen[2 * len(lab.nodes):2 * len(lab.nodes) + sum(len(v) for v in fakes.values())]
    assert begun == [("begin", k.name, n.name) for n in lab.nodes for k in fakes[n.name]]
    assert seen[2 * len(lab.nodes) + len(begun)][0] == "links"
    phases = [p for p, _, _ in seen[2 * len(lab.nodes) + len(begun):]]
    assert [p for i, p in enumerate(phases) if i == 0 or phases[i - 1] != p] == [
        p for p in build.PHASES if p in phases]
    switches = [n.name for n in lab.nodes if n.kind == "switch"]
    assert [x for x in seen if x[0] == "switches"] == [("switches", f"first-{kinds.kind_of(lab.node(s))}", s)
                                                       for s in switches]
    assert [x[2] for x in seen if x[1] == "beside" and x[0] == "daemons"] == [n.name for n in lab.nodes if n.controller]
