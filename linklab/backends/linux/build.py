"""One reconcile pass of the Linux backend over a lab: the build's phases, and the steps every lab
needs. The build context every node kind is handed (`Build`) is in kinds/base.py, beside the verbs
it is handed to.

The build runs phase by phase (PHASES). Each phase first runs the steps every lab needs, whatever
its kinds (namespaces, veth pairs and bonds, MTUs, queues), then the `configure` of each kind that
names the phase (linklab/backends/linux/kinds/base.py). The backend loops over phases and kinds;
it never asks which kind a node is.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor, wait
from collections.abc import Callable

from pyroute2.netlink.exceptions import NetlinkError

from linklab import runner
from linklab.backends.linux import bond as bondopt
from linklab.backends.linux import daemons, frrd, services, sysctl
from linklab.errors import LinklabError
from linklab.linux import netlink, routes, tc
from linklab.model import frr, queues
from linklab.backends.linux.kinds.base import Build

# In order. A kind's `phase` is one of these; "namespaces", "links", "mtu", "routes", "queues",
# "converge" and "leftovers" also run steps of their own (STEPS) before the kinds of the phase.
PHASES = ("namespaces", "links", "switches", "mtu", "addresses", "routes", "queues", "daemons", "converge",
          "leftovers")


def run(b: Build) -> None:
    """The build, phase by phase: the phase's own steps, then each kind that names it. Once the
    namespaces exist, every kind begins what is slow to become ready (`Kind.begin`)."""
    try:
        for phase in PHASES:
            for step in STEPS.get(phase, ()):
                # A refusal the step does not name more closely names the lab, phase and step.
                with netlink.refused(f"lab {b.lab.name}, building its {phase} ({step.__name__})"):
                    step(b)
            for node in b.lab.nodes:
                for kind in b.kinds[node.name]:
                    if kind.phase == phase:
                        with netlink.refused(f"{node.name}: its {kind.name} {phase}"):
                            kind.configure(b, node)
            if phase == "namespaces":
                for node in b.lab.nodes:
                    for kind in b.kinds[node.name]:
                        with netlink.refused(f"{node.name}: its {kind.name} start"):
                            kind.begin(b, node)
    finally:
        wait(b._background)


# ---- the steps every lab needs -----------------------------------------------------------------

def namespaces(b: Build) -> None:
    """Every node's namespace, made by the first of its kinds (most make a plain named one; each
    kind its nodes at once), then no IPv6 duplicate address detection in it: it would delay
    every lab address by ~1-2 s."""
    for kind in b.registry:
        kind.create_all(b, [n for n in b.lab.nodes if b.kinds[n.name][0] is kind])
    for node in b.lab.nodes:
        sysctl.set_in_netns(b.ns[node.name], {"net.ipv6.conf.all.accept_dad": "0",
                                              "net.ipv6.conf.default.accept_dad": "0"})


def veth_pairs(b: Build) -> None:
    """Every link's veth pairs, made where missing (half a pair from an interrupted build is
    removed first), each end marked as the lab's."""
    marks: list[tuple[str, str]] = []
    for link in b.lab.links:
        for pair in link.veths:
            ia, ib = b.idx(pair.a.node, pair.a.ifname), b.idx(pair.b.node, pair.b.ifname)
            if not (ia is not None and ib is not None and _peers(b, pair, ia)):
                for node, ifname, i in ((pair.a.node, pair.a.ifname, ia), (pair.b.node, pair.b.ifname, ib)):
                    if i is not None:  # half of a pair from an interrupted build
                        b.ipr[node].link("del", index=i)
                # The first end made up at once (a bond member is downed before it is enslaved).
                b.batch(pair.a.node).veth(pair.a.ifname, pair.b.ifname, b.ns[pair.b.node],
                                             index=b.new_index(pair.a.node, pair.a.ifname),
                                             peer_index=b.new_index(pair.b.node, pair.b.ifname))
            marks += [(end.node, end.ifname) for end in (pair.a, pair.b)]
    b.send_batches()  # every pair exists before its ends are marked
    for node, ifname in marks:
        b.batch(node).set(ifname, alias=b.mark)
        b.own(node, ifname)
    b.send_batches()


def _peers(b: Build, pair, ia: int) -> bool:
    return b.link_kind(pair.a.node, pair.a.ifname) == "veth"


def remove_stale(b: Build) -> None:
    """Interfaces an earlier apply made that the lab no longer has (fewer bond members...)."""
    keep = set(b.owned["interfaces"])
    keep |= {f"{bond.node}/{bond.ifname}" for link in b.lab.links for bond in link.bonds}
    # What kinds make beside the link ends (a Linux bridge's br0) is theirs to keep.
    keep |= {f"{n.name}/{ifname}" for n in b.lab.nodes for kind in b.kinds[n.name] for ifname in kind.interfaces}
    for item in b.previous.get("interfaces", []):
        node, _, ifname = item.partition("/")
        if item not in keep and node in b.ipr:
            i = b.idx(node, ifname)
            if i is not None:
                b.ipr[node].link("del", index=i)


def bonds(b: Build) -> None:
    """Each bond made or changed to its mode and options, its members enslaved."""
    for link in b.lab.links:
        for bond in link.bonds:
            with netlink.refused(f"{bond.node}: bond {bond.ifname} of link {link.name} ({bond.mode})"):
                _bond(b, bond)


def _bond(b: Build, bond) -> None:
    """One bond made or changed to its mode and options, its members enslaved."""
    ipr = b.ipr[bond.node]
    bi = b.idx(bond.node, bond.ifname)
    if bi is None:
        ipr.link("add", ifname=bond.ifname, kind="bond", bond_mode=bondopt.mode_number(bond.mode))
        bi = b.idx(bond.node, bond.ifname)
    b.own(bond.node, bond.ifname)
    members = {m: b.idx(bond.node, m) for m in bond.members}
    actual = bondopt.from_netlink(_info_data(ipr.get_links(bi)[0]))
    wanted = bondopt.desired_options(bond.mode, bond.options)
    names = {i: n for n, i in members.items()}
    diff = bondopt.differs(actual, bond.mode, wanted, names)
    enslaved = {x["index"] for x in netlink.links(b.ns[bond.node]) if x["master"] == bi}
    if diff:
        # Mode and many options can change only on a downed bond without members.
        for m in enslaved:
            ipr.link("set", index=m, master=0)
        enslaved = set()
        ipr.link("set", index=bi, state="down")
        nl = bondopt.to_netlink({k: v for k, v in wanted.items() if k != "primary"}, members)
        ipr.link("set", index=bi, kind="bond", bond_mode=bondopt.mode_number(bond.mode), **nl)
    for m, mi in members.items():
        if mi not in enslaved:
            ipr.link("set", index=mi, state="down")
            ipr.link("set", index=mi, master=bi)
    if "primary" in wanted and ("primary" in diff or not enslaved):
        ipr.link("set", index=bi, kind="bond", **bondopt.to_netlink({"primary": wanted["primary"]}, members))
    ipr.link("set", index=bi, ifalias=b.mark)


def mtus_and_up(b: Build) -> None:
    """Every interface's MTU, then every interface up: one dump per namespace (not one request
    per interface; setting an MTU changes no interface's state, so the same dump says which to
    bring up)."""
    dump = {node: netlink.links(b.ns[node]) for node in b.ipr}
    b._mtus = {(node, x["index"]): x["mtu"] for node, links in dump.items() for x in links}
    for link in b.lab.links:
        for pair in link.veths:
            for end in (pair.a, pair.b):
                if end.ifname not in link.bond_members(end.node):
                    # A switch's port_mtu (Mininet leaves switch ports at 1500) beats the link's.
                    _set_mtu(b, end.node, end.ifname, b.lab.node(end.node).port_mtu or link.mtu)
        for bond in link.bonds:
            _set_mtu(b, bond.node, bond.ifname, link.mtu)  # a bond's MTU is pushed to its members
    for node in b.lab.nodes:
        for ifname in (ifname for kind in b.kinds[node.name] for ifname in kind.interfaces):
            if node.mtu:
                # A kind's own interface (a Linux bridge) takes the switch's MTU. Set, not
                # compared: a bridge's MTU follows its ports' until set, so the dump may be
                # stale, and setting the MTU it has changes nothing.
                b.batch(node.name).set(ifname, mtu=node.port_mtu or node.mtu)
    for node, links in dump.items():
        for x in links:
            if x["ifname"] != "lo" and not x["up"]:
                b.batch(node).set(x["ifname"], up=True)
    b.send_batches()


def _set_mtu(b: Build, node: str, ifname: str, mtu: int) -> None:
    i = b.idx(node, ifname)
    have = b._mtus.get((node, i))
    if have != mtu:
        try:
            b.ipr[node].link("set", index=i, mtu=mtu)
        except NetlinkError as e:
            raise netlink.refusal(e, f"{node}:{ifname}: MTU {mtu}") from None


def node_routes(b: Build) -> None:
    """Every node's routes (the resolved lab's: computed by routing: static, or written), after
    the addresses (a gateway must be on a subnet the node is on), reconciled: only the routes that
    differ change (`linklab set 'links[core].cost=5'` replaces those the new cost moves). A node
    that had routes in the previous build and has none now loses linklab's; a lab that never had
    any asks the kernel nothing. They live in the namespaces: `down` removes them with them."""
    before = set(b.previous.get("routed", []))
    routed = [n.name for n in b.lab.nodes if n.routes]
    for node in b.lab.nodes:
        if node.name not in before and not node.routes:
            continue
        want = [routes.KernelRoute(r.to, tuple((h.via, b.idx(node.name, h.dev)) for h in r.nexthops))
                for r in node.routes]
        try:
            routes.reconcile(b.ipr[node.name], want)
        except NetlinkError as e:
            raise netlink.refusal(e, f"{node.name}: its routes", hint="`linklab show` lists each node's routes") from None
    if routed or before:
        b.owned["routed"] = routed


def qdiscs(b: Build) -> None:
    """Every egress queue the lab asks for, rebuilt where it differs from what the previous
    build made (linklab/linux/tc.py)."""
    changes: dict[str, list] = {}  # node -> its interfaces' changes, one tc process per namespace
    retune: dict[str, list[str]] = {}  # node -> queue disciplines changed in place (tc lines)
    roots: dict[str, dict[int, list]] = {}  # node -> index -> its root qdiscs: one dump per namespace
    for link, end, _, q in b.lab.egress_queues():
        key = f"{end.node}/{end.ifname}"
        # What tc is told to build, as the signature: an MTU change that leaves every queue's
        # commands alike (the bucket holds several frames at either MTU) rebuilds nothing.
        plan = tc.plan(q, link.mtu, end.ifname)
        sig = json.dumps(plan)
        before = b.previous.get("qdiscs", {}).get(key)
        created = (end.node, end.ifname) in b.created
        if created:
            mine = []  # the kernel's default: nothing to dump
        else:
            if end.node not in roots:
                roots[end.node] = _root_qdiscs(b.ns[end.node])
            mine = roots[end.node].get(b.idx(end.node, end.ifname), [])
        if created or before != sig or not _root_kind_matches(mine, q):
            fifo = tc.fifo_limit_change(json.loads(before), plan) if before and not created else None
            if fifo is not None and _root_kind_matches(mine, q):
                # Only the FIFO's limit differs: changed in place over netlink (a tc process
                # costs ~0.1-0.2 s under software emulation; nothing queued is dropped).
                b.batch(end.node).fifo_limit(b.idx(end.node, end.ifname), *fifo)
                b.owned["qdiscs"][key] = sig
                continue
            in_place = tc.aqm_change(json.loads(before), plan) if before and not created else None
            if in_place is not None and _root_kind_matches(mine, q):
                # Only the queue discipline's parameters differ: `tc qdisc change`, nothing rebuilt.
                retune.setdefault(end.node, []).append(" ".join(in_place))
                b.owned["qdiscs"][key] = sig
                continue
            has_root = any(x["handle"] != 0 for x in mine)  # the kernel's default has handle 0
            if q is not None or has_root:  # None on the kernel's default: nothing to do
                changes.setdefault(end.node, []).append((end.ifname, q, link.mtu, has_root))
        b.owned["qdiscs"][key] = sig
    b.send_batches()  # the FIFO limits changed in place
    # One tc process per namespace, side by side: each is mostly its own start (~0.1 s under
    # software emulation), and a sweep point that changes a bucket rebuilds that queue.
    with ThreadPoolExecutor(max_workers=max(1, len(changes) + len(retune))) as pool:
        list(pool.map(lambda item: tc.apply_many(b.ns[item[0]], item[1]), changes.items()))
        list(pool.map(lambda item: tc.run_lines(b.ns[item[0]], item[1]), retune.items()))


def interface_settings(b: Build) -> None:
    """Transmit queue lengths and offload features the links ask for, and the biggest GSO packet
    each host's or router's own port takes (queues.gso_cap: what its byte FIFO holds twice; set
    on every such port, so a queue that grew gets Linux's default back)."""
    caps: dict[tuple[str, str], int] = {}
    for link, end, _peer, q in b.lab.egress_queues():
        if b.lab.node(end.node).kind == "switch":
            continue  # a switch's ports forward others' packets, sized by their senders' ports
        cap = queues.gso_cap(q.queue_bytes if q else None, link.mtu)
        caps[(end.node, end.ifname)] = cap
        # A bond hands each member the packets its own sockets made: the bond takes its smallest.
        for bond in link.bonds:
            if bond.node == end.node and end.ifname in link.bond_members(end.node):
                caps[(bond.node, bond.ifname)] = min(caps.get((bond.node, bond.ifname), cap), cap)
    for (node, ifname), cap in caps.items():
        b.batch(node).set(ifname, gso_max_size=cap)
    b.send_batches()
    for link in b.lab.links:
        for end in link.ends:
            ipr, i = b.ipr[end.node], b.idx(end.node, end.ifname)
            if end.txqueuelen is not None:
                ipr.link("set", index=i, txqlen=end.txqueuelen)
                for m in link.bond_members(end.node):
                    ipr.link("set", index=b.idx(end.node, m), txqlen=end.txqueuelen)
            if end.offloads:
                # Offload features: pyroute2's ethtool module cannot reach a namespace, so this
                # is one of the few shell-outs (argv list, in the node's namespace).
                args = [x for k, v in sorted(end.offloads.items()) for x in (k, "on" if v else "off")]
                for ifname in [end.ifname, *link.bond_members(end.node)]:
                    runner.run(["ethtool", "-K", ifname, *args], netns=b.ns[end.node], timeout=10)


# How long `up` waits for a routing: ospf lab's routers to learn every subnet. Natively they do
# in a few seconds (hello 1 s, adjacencies, SPF); the lab VM under software emulation is slower.
CONVERGE_DEADLINE_S = 120.0


def learned(b: Build) -> None:
    """Wait until every router whose routes a routing daemon learns (routing: ospf) has a route
    to every subnet of the lab, read from its kernel (connected, or proto ospf), along a cheapest
    path (linklab/model/frr.py: converged); else fail naming what each router is still missing."""
    learners = [n.name for n in b.lab.nodes if n.frr]
    if not learners:
        return
    want = frr.subnets(b.lab)
    t0 = time.monotonic()
    while True:
        missing = {node: frr.converged(b.lab, node, _routes_by_prefix(b, node)) for node in learners}
        missing = {node: what for node, what in missing.items() if what}
        if not missing:
            b.say(f"  OSPF converged: {len(learners)} routers, {len(want)} subnets, {time.monotonic() - t0:.1f} s")
            return
        if time.monotonic() - t0 > CONVERGE_DEADLINE_S:
            raise LinklabError(
                f"routing: ospf did not converge within {CONVERGE_DEADLINE_S:.0f} s: "
                + "; ".join(f"{node}: {', '.join(what)}" for node, what in missing.items()),
                hint="`linklab status` shows each router's OSPF neighbours and routes; FRR's logs are in "
                     f"{frr_logs(b)}")
        time.sleep(0.2)


def _routes_by_prefix(b: Build, node: str) -> dict[str, set[str]]:
    """The node's routes: prefix -> the interfaces they leave through."""
    names = {x["index"]: x["ifname"] for x in netlink.links(b.ns[node])}
    return {r.to: {names.get(oif, str(oif)) for _, oif in r.nexthops if oif} for r in routes.read(b.ipr[node])}


def frr_logs(b: Build) -> str:
    """The directory of the lab's logs (a router's FRR logs are in its node's directory there)."""
    return str(frrd.FrrDirs(ns="", lab=b.lab.name, node="").logs)


def stop_leftover_processes(b: Build) -> None:
    """Processes an earlier build started that this one did not keep (a switch that lost its
    controller). Services are not the build's: the nodes' `exec:` lists keep or stop them, after
    the build (linklab/backends/linux/node_exec.py)."""
    kept = {(r["node"], r["pid"]) for r in b.owned["processes"]}
    daemons.stop([r for r in b.previous.get("processes", []) if (r["node"], r["pid"]) not in kept
                  and r.get("role") != services.ROLE])


STEPS: dict[str, tuple[Callable[[Build], None], ...]] = {
    "namespaces": (namespaces,),
    "links": (veth_pairs, remove_stale, bonds),
    "mtu": (mtus_and_up,),
    "routes": (node_routes,),
    "queues": (qdiscs, interface_settings),
    "converge": (learned,),
    "leftovers": (stop_leftover_processes,),
}


def _info_data(link_msg):
    info = link_msg.get_attr("IFLA_LINKINFO")
    return info.get_attr("IFLA_INFO_DATA") if info is not None else None


def _root_qdiscs(ns: str) -> dict[int, list]:
    """Every interface's root qdisc(s) in a namespace, by interface index (one raw dump)."""
    out: dict[int, list] = {}
    for x in netlink.qdiscs(ns):
        if x["parent"] == 0xFFFFFFFF:
            out.setdefault(x["ifindex"], []).append(x)
    return out


def _root_kind_matches(root_qdiscs: list, q) -> bool:
    want = None if q is None else (q.shaper if q.shaper in ("tbf", "htb") else "netem" if q.needs_netem else q.aqm)
    roots = [x["kind"] for x in root_qdiscs]
    have = roots[0] if roots and roots[0] in ("netem", "tbf", "htb") else None
    if have is None and q is not None and q.aqm:  # a discipline alone is the root, made by linklab (handle 1:)
        have = next((x["kind"] for x in root_qdiscs if x["handle"] != 0), None)
    return have == want
