"""Topology (as written) -> Lab (fully decided): names, addresses, qdiscs, LAGs, hosts entries.

Pure: the same topology and context give the same Lab, byte for byte (golden tests rely on it).
"""

from __future__ import annotations

import functools
import ipaddress
import re
from dataclasses import dataclass

from linklab.errors import ValidationFailed
from linklab.model import aqm, queues, routes, scaling
from linklab.model import resolved
from linklab.model.topology import MIN_IPV6_MTU, Impairment, ImpairmentFields, Service, Topology

# The rate netem is given, when only jitter was asked for, so that it queues packets in order.
# High enough never to bind on a veth (netem's rate field is 32-bit bytes/s: at most ~34 Gbit/s).
ORDER_KEEPING_RATE_BPS = 30e9

LINKLAB_BOND_DEFAULTS = {"miimon": 100}
LINKLAB_LACP_DEFAULTS = {"lacp_rate": "fast"}


@dataclass(frozen=True)
class Context:
    """What resolution needs to know about where the lab will run."""

    auto_scale: float = 1.0
    auto_scale_reason: str = "native kernel: rates as written"
    scale_override: float | None = None


def resolve(t: Topology, ctx: Context = Context()) -> resolved.Lab:
    scale, scale_source = _scale(t, ctx)
    names = _Names(t)
    segments_of = segments(t)
    notes: list[str] = []
    links: list[resolved.Link] = []
    problems: list[str] = []
    alloc = _Addresses(t, segments_of)
    for i, link in enumerate(t.links):
        links.append(_link(t, i, link, names, segments_of[i], alloc, scale, notes))
    problems += alloc.problems
    if problems:
        raise ValidationFailed(t.name, problems)
    node_routes = routes.resolve_routes(t, links, node_kinds(t), notes, problems)
    if problems:
        raise ValidationFailed(t.name, problems)
    nodes = _nodes(t, links, scale, notes, node_routes)
    return resolved.Lab(name=t.name, scale=scale, scale_source=scale_source, nodes=nodes, links=links, notes=notes)


def _scale(t: Topology, ctx: Context) -> tuple[float, str]:
    if ctx.scale_override is not None:
        return ctx.scale_override, "command line"
    if t.scale == "auto":
        return ctx.auto_scale, f"auto ({ctx.auto_scale_reason})"
    return float(t.scale), "topology file"


class _Names:
    """Per-node interface naming: user names are reserved first, then eth1.., bond0.., lag0.."""

    def __init__(self, t: Topology):
        self.used: dict[str, set[str]] = {}
        for link in t.links:
            for ep in link.endpoints:
                if ep.ifname:
                    self.used.setdefault(ep.node, set()).add(ep.ifname)

    def take(self, node: str, stem: str, start: int) -> str:
        used = self.used.setdefault(node, set())
        n = start
        while f"{stem}{n}" in used:
            n += 1
        used.add(f"{stem}{n}")
        return f"{stem}{n}"


def segments(t: Topology) -> list[int]:
    """L2 segment of each link: links into the same switch (or joined switches) share one."""
    parent = list(range(len(t.links)))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    by_switch: dict[str, int] = {}
    for i, link in enumerate(t.links):
        for ep in link.endpoints:
            if ep.node in t.switches:
                if ep.node in by_switch:
                    parent[find(i)] = find(by_switch[ep.node])
                else:
                    by_switch[ep.node] = i
    roots: dict[int, int] = {}
    return [roots.setdefault(find(i), len(roots)) for i in range(len(t.links))]


class _Addresses:
    def __init__(self, t: Topology, segments: list[int]):
        self.t = t
        self.v4_nets = {}
        self.v6_nets = {}
        self.next_host: dict[int, int] = {}
        self.taken: set = set()
        self.problems: list[str] = []
        self.user_net: dict[int, set[int]] = {4: set(), 6: set()}
        v4 = t.addressing.ipv4.subnets(new_prefix=24)
        v6 = t.addressing.ipv6.subnets(new_prefix=64) if t.addressing.ipv6 else None
        for seg in sorted(set(segments)):
            self.v4_nets[seg] = next(v4, None)
            if v6 is not None:
                self.v6_nets[seg] = next(v6, None)
        # Reserve every user-given address first, so auto-assignment steps around them.
        for i, link in enumerate(t.links):
            for node, a in link.addresses.items():
                for addr in (a.ipv4, a.ipv6):
                    if addr is None:
                        continue
                    if addr.ip in self.taken:
                        self.problems.append(f"links[{i}].addresses.{node}: address {addr.ip} is used twice")
                    self.taken.add(addr.ip)
                    # A user-given address decides its segment's subnet: auto-assigned peers join it.
                    nets = self.v4_nets if addr.version == 4 else self.v6_nets
                    if segments[i] not in self.user_net[addr.version]:
                        self.user_net[addr.version].add(segments[i])
                        nets[segments[i]] = addr.network

    def assign(self, i: int, seg: int, node: str, v6: bool) -> tuple[str | None, str | None]:
        given = self.t.links[i].addresses.get(node)
        ipv4 = str(given.ipv4) if given and given.ipv4 else None
        ipv6 = str(given.ipv6) if given and given.ipv6 else None
        need4, need6 = ipv4 is None, v6 and ipv6 is None
        if not (need4 or need6):
            return ipv4, ipv6 if v6 else None
        net4, net6 = self.v4_nets.get(seg), self.v6_nets.get(seg)
        wanted = [(4, net4, self.t.addressing.ipv4)] * need4 + [(6, net6, self.t.addressing.ipv6)] * need6
        for version, net, pool in wanted:
            if net is None:  # more L2 segments than the pool has subnets
                self.problems.append(f"links[{i}]: address pool {pool} is exhausted (one /{24 if version == 4 else 64} per L2 segment)")
                return ipv4, ipv6 if v6 else None
        # One host index for both families where both are auto-assigned (h1 is .1 and ::1); only
        # the families being assigned here must be free (a user's IPv4 /30 leaves no free IPv4
        # index, yet its peers still get IPv6 addresses).
        last = min(net.num_addresses - 1 for _, net, _ in wanted)  # not IPv4's broadcast
        n = self.next_host.get(seg, 1)
        while True:
            if n >= last:
                net = min((net for _, net, _ in wanted), key=lambda net: net.num_addresses)
                hosts = net.num_addresses - (2 if net.version == 4 else 1)
                self.problems.append(f"links[{i}]: no free address left in {net} for {node} "
                                     f"(its segment's subnet holds {hosts} hosts): give a larger one")
                return ipv4, ipv6 if v6 else None
            cand4 = net4[n] if need4 else None
            cand6 = net6[n] if need6 else None
            n += 1
            if cand4 not in self.taken and cand6 not in self.taken:
                break
        self.next_host[seg] = n
        if need4:
            ipv4 = f"{cand4}/{net4.prefixlen}"
            self.taken.add(cand4)
        if need6:
            ipv6 = f"{cand6}/{net6.prefixlen}"
            self.taken.add(cand6)
        return ipv4, (ipv6 if v6 else None)


def _merge(layers: list[ImpairmentFields | None]) -> dict:
    out: dict = {}
    for layer in layers:
        if layer is None:
            continue
        if layer.aqm is not None and layer.aqm != out.get("aqm"):
            out.pop("aqm_params", None)  # another discipline: the parameters written for the last one go
        for field in ImpairmentFields.model_fields:
            v = getattr(layer, field)
            if field == "aqm_params" and v is not None:
                out[field] = {**out.get(field, {}), **v}  # a parameter at a time, as fields merge
            elif v is not None:
                out[field] = v
    return out


def _layers(imp: Impairment | None, sender: str) -> list[ImpairmentFields | None]:
    if imp is None:
        return []
    return [imp, imp.from_.get(sender)]


def direction_fields(t: Topology, link, sender: str, member: int | None) -> dict:
    """What the file asks of the traffic `sender` sends on `link` (through bond member `member`):
    the defaults, the link's, its `from:` entry, the member's and its `from:` entry, later ones
    winning field by field."""
    layers = [*_layers(t.defaults.impair, sender), *_layers(link.impair, sender)]
    if member is not None and link.bond and member < len(link.bond.member_impair):
        layers += _layers(link.bond.member_impair[member].impair, sender)
    return _merge(layers)


# The shaper when none is written: htb with a byte FIFO keeps TCP's back-pressure and bounds the
# queue in bytes whatever the GSO packet sizes, where netem's packet queue lets delay under load
# grow (bench/README.md#queues-and-shapers).
DEFAULT_SHAPER = "htb"


def qdisc_for(fields: dict, scale: float, mtu: int = 1500, port: str = "host") -> resolved.Qdisc | None:
    if not fields:
        return None
    written_rate = fields.get("rate")
    rate = written_rate * scale if written_rate else None
    shaper = fields.get("shaper") or (DEFAULT_SHAPER if rate else None)
    if shaper and not rate:
        shaper = None  # a shaper without a rate shapes nothing
    jitter = fields.get("jitter") or 0.0
    reorder = fields.get("reorder") or 0.0
    keep_order = jitter > 0 and reorder == 0 and not fields.get("allow_reorder")
    order_rate = ORDER_KEEPING_RATE_BPS if keep_order and shaper != "netem" else None
    q = resolved.Qdisc(
        shaper=shaper, rate_bps=rate,
        delay_s=fields.get("delay") or 0.0, jitter_s=jitter,
        loss_pct=fields.get("loss") or 0.0, duplicate_pct=fields.get("duplicate") or 0.0,
        corrupt_pct=fields.get("corrupt") or 0.0, reorder_pct=reorder,
        limit=fields.get("limit"), overhead=fields.get("overhead") or 0, burst=fields.get("burst"),
        order_rate_bps=order_rate,
    )
    if not (q.shaper or q.needs_netem):
        return _with_aqm(None, fields, scale, mtu)
    if port == "switch":
        q = q.model_copy(update={"forwards": True})
    if rate:
        # The bucket is recorded (state, `linklab show`): it decides a switch port's least queue.
        bucket = queues.bucket_bytes(q.shaper if q.shaper in ("htb", "tbf") else "htb", rate, mtu, q.burst)
        qs = queues.size(fields.get("queue"), written_rate, scale, mtu, port, bucket)
        limit = q.limit
        if q.queue_holder == "netem" and limit is None:
            limit = queues.packets(qs, mtu, rate, q.delay_s + q.jitter_s)
        elif q.needs_netem and limit is None:
            limit = queues.delay_line_packets(qs.bytes, rate, q.delay_s + q.jitter_s)
        q = q.model_copy(update={"queue_bytes": qs.bytes, "queue_s": qs.seconds, "queue_source": qs.source,
                                 "limit": limit, "burst": bucket if q.shaper in ("htb", "tbf") else q.burst})
    elif fields.get("queue") and fields["queue"][0] == "packets" and q.limit is None:
        q = q.model_copy(update={"limit": int(fields["queue"][1])})  # no rate: netem's delay line only
    return _with_aqm(q, fields, scale, mtu)


def _with_aqm(q: resolved.Qdisc | None, fields: dict, scale: float, mtu: int) -> resolved.Qdisc | None:
    """`q` with its queue discipline (linklab/model/aqm.py); the FIFO leaves it as it was."""
    name = fields.get("aqm") or "fifo"
    if name == "fifo":
        return q
    if q is None:  # no rate and nothing for netem: the discipline alone, as the root qdisc
        q = resolved.Qdisc()
    params = aqm.resolved_params(name, fields.get("aqm_params") or {}, rate_bps=q.rate_bps, scale=scale,
                                 queue_bytes=q.queue_bytes, mtu=mtu)
    return q.model_copy(update={"aqm": name, "aqm_params": params})


def _link(t: Topology, i: int, link, names: _Names, seg: int, alloc: _Addresses, scale: float,
          notes: list[str]) -> resolved.Link:
    ep_a, ep_b = link.endpoints
    kind_of = node_kinds(t)
    mtu = link.mtu or t.defaults.mtu
    want_v6 = (link.ipv6 if link.ipv6 is not None else t.defaults.ipv6) and t.addressing.ipv6 is not None
    v6 = want_v6 and mtu >= MIN_IPV6_MTU
    v6_note = None
    if want_v6 and not v6:
        v6_note = f"IPv6 off on this link: MTU {mtu} < {MIN_IPV6_MTU} (the kernel drops IPv6 below that)"

    def impair_for(sender: str, member: int | None):
        # A router's port queues what it forwards, as a switch port does: packets with no socket
        # of its own to hold back, in the bursts of the shapers before it.
        return qdisc_for(direction_fields(t, link, sender, member), scale, mtu,
                         "host" if kind_of.get(sender) == "host" else "switch")

    veths: list[resolved.VethPair] = []
    bonds: list[resolved.BondEnd] = []
    ends: list[resolved.LinkEnd] = []
    end_ifaces: dict[str, str] = {}
    bridge_ports: dict[str, list[str]] = {}
    ovs_bonds: dict[str, resolved.OvsBond | None] = {}
    if link.bond is None:
        a_if = ep_a.ifname or names.take(ep_a.node, "eth", 1)
        b_if = ep_b.ifname or names.take(ep_b.node, "eth", 1)
        veths.append(resolved.VethPair(a=resolved.Iface(node=ep_a.node, ifname=a_if),
                                       b=resolved.Iface(node=ep_b.node, ifname=b_if),
                                       egress_a=impair_for(ep_a.node, None), egress_b=impair_for(ep_b.node, None)))
        end_ifaces = {ep_a.node: a_if, ep_b.node: b_if}
        bridge_ports = {ep_a.node: [a_if], ep_b.node: [b_if]}
    else:
        bond = link.bond
        members: dict[str, list[str]] = {}
        far_ovs = [ovs_bond_kind(bond, sw) for ep in (ep_a, ep_b) if (sw := ovs_switch(t, ep.node))]
        for ep in (ep_a, ep_b):
            if kind_of.get(ep.node) != "switch":  # a host's or a router's bond
                bname = ep.ifname or names.take(ep.node, "bond", 0)
                members[ep.node] = [f"{bname}-m{k}" for k in range(bond.members)]
                end_ifaces[ep.node] = bname
                opts = _bond_options(bond, members[ep.node], far_ovs[0] if far_ovs else None)
                bonds.append(resolved.BondEnd(node=ep.node, ifname=bname, mode=bond.mode,
                                       options=opts, members=members[ep.node]))
            else:
                members[ep.node] = [names.take(ep.node, "eth", 1) for _ in range(bond.members)]
                lag = _switch_lag(bond)
                sw = ovs_switch(t, ep.node)
                if sw is not None:
                    # OVS makes the switch side itself (an OVS bond), or leaves the members as
                    # separate ports for its controller (the lacp app) to aggregate.
                    end_ifaces[ep.node] = members[ep.node][0]
                    bridge_ports[ep.node] = members[ep.node]
                    ovs_bonds[ep.node] = _ovs_bond(bond, sw, names.take(ep.node, "lag", 0), members[ep.node])
                elif lag is None:
                    end_ifaces[ep.node] = members[ep.node][0]
                    bridge_ports[ep.node] = members[ep.node]
                else:
                    lname = ep.ifname or names.take(ep.node, "lag", 0)
                    end_ifaces[ep.node] = lname
                    bridge_ports[ep.node] = [lname]
                    bonds.append(resolved.BondEnd(node=ep.node, ifname=lname, mode=lag[0], options=lag[1],
                                           members=members[ep.node], role="switch-lag"))
        for k in range(bond.members):
            veths.append(resolved.VethPair(
                a=resolved.Iface(node=ep_a.node, ifname=members[ep_a.node][k]),
                b=resolved.Iface(node=ep_b.node, ifname=members[ep_b.node][k]),
                egress_a=impair_for(ep_a.node, k), egress_b=impair_for(ep_b.node, k)))
    for ep in (ep_a, ep_b):
        ifname = end_ifaces[ep.node]
        settings = link.interfaces.get(ep.node)
        if kind_of.get(ep.node) != "switch":
            ipv4, ipv6 = alloc.assign(i, seg, ep.node, v6)
            ports: list[str] = []
        else:
            ipv4 = ipv6 = None
            ports = bridge_ports.get(ep.node, [ifname])
        ends.append(resolved.LinkEnd(node=ep.node, ifname=ifname, ipv4=ipv4, ipv6=ipv6,
                              txqueuelen=settings.txqueuelen if settings else None,
                              offloads=dict(settings.offloads) if settings else {}, bridge_ports=ports,
                              ovs_bond=ovs_bonds.get(ep.node)))
    name = link_name(t, i)
    if v6_note:
        notes.append(f"link {name}: {v6_note}")
    unshaped = sorted({f"{end.node} sending ({q.aqm})" for pair in veths for end, _, q in pair.directions()
                       if q is not None and q.aqm and not q.rate_bps})
    if unshaped:
        notes.append(f"link {name}, {', '.join(unshaped)}: a queue discipline without a rate; nothing shapes there, "
                     "so it sees a queue only where the interface pushes back (a veth never does)")
    return resolved.Link(index=i, name=name, kind="bond" if link.bond else "veth", mtu=mtu, ipv6=v6, ipv6_note=v6_note,
                  ends=ends, veths=veths, bonds=bonds, segment=seg, cost=link.cost)


def node_kinds(t: Topology) -> dict[str, str]:
    """Each node's section: host, switch or router."""
    return {**{h: "host" for h in t.hosts}, **{s: "switch" for s in t.switches}, **{r: "router" for r in t.routers}}


def link_name(t: Topology, i: int) -> str:
    """The name of link `i`: as written, else its ends' (h1-r1), numbered where a pair repeats."""
    link = t.links[i]
    ep_a, ep_b = link.endpoints
    return link.name or f"{ep_a.node}-{ep_b.node}" + (f"-{i}" if _pair_repeats(t, i) else "")


def _pair_repeats(t: Topology, i: int) -> bool:
    key = {e.node for e in t.links[i].endpoints}
    return sum(1 for link in t.links if {e.node for e in link.endpoints} == key) > 1


def _bond_options(bond, members: list[str], far_ovs: tuple[str, str] | None = None) -> dict:
    opts = {k: v for k, v in bond.options.model_dump(exclude_none=True).items()}
    if bond.mode == "active-backup" and far_ovs == ("active-backup", "off"):
        # OVS drops what reaches it on its backup member: both ends start on member 0 (OVS's
        # bond-primary is the same member, see _ovs_bond).
        opts.setdefault("primary", 0)
    if bond.mode == "active-backup" and far_ovs == ("balance-slb", "off"):
        # balance-slb sends each source MAC out of a member of its choosing: the host must
        # take frames on its backup member too.
        opts.setdefault("all_slaves_active", True)
    if "arp_interval" not in opts:
        for k, v in LINKLAB_BOND_DEFAULTS.items():
            opts.setdefault(k, v)
    if bond.mode == "802.3ad":
        for k, v in LINKLAB_LACP_DEFAULTS.items():
            opts.setdefault(k, v)
    if isinstance(opts.get("primary"), int):
        opts["primary"] = members[opts["primary"]]
    if "arp_ip_target" in opts:
        opts["arp_ip_target"] = [str(a) for a in opts["arp_ip_target"]]
    return opts


def ovs_switch(t: Topology, node: str):
    """The node's switch if it is Open vSwitch, else None: a host, a Linux bridge, or a switch
    written as a bare name (`s1:`, which is a Linux bridge with defaults)."""
    sw = t.switches.get(node)
    return sw if sw is not None and sw.kind == "ovs" else None


def ovs_bond_kind(bond, sw) -> tuple[str, str] | None:
    """(OVS bond mode, lacp) an OVS switch makes of a host bond's members; None: separate
    ports (a controller aggregates them, or no LAG was asked for)."""
    if sw.controller is not None:
        return None
    kind = bond.switch_lag
    if kind == "auto":
        kind = {"802.3ad": "lacp", "balance-rr": "static", "balance-xor": "static",
                "broadcast": "static"}.get(bond.mode, "none")
    if kind == "none" and bond.ovs_bond_mode is None:
        return None
    mode = bond.ovs_bond_mode or ("balance-tcp" if kind == "lacp" else "balance-slb")
    return mode, "active" if kind == "lacp" else "off"


def _ovs_bond(bond, sw, name: str, members: list[str]) -> resolved.OvsBond | None:
    """An OVS switch's side of a host bond: its own bond unless a controller does the work."""
    kind = ovs_bond_kind(bond, sw)
    if kind is None:
        return None
    mode, lacp = kind
    primary = None
    if lacp == "off" and mode == "active-backup":
        # OVS's active member (the only one it accepts frames on) faces the host's primary.
        primary = members[_primary_index(bond)]
    return resolved.OvsBond(name=name, mode=mode, lacp=lacp, members=members, primary=primary)


def _primary_index(bond) -> int:
    """The host's primary member as an index (written as an index or as bondN-mK); 0 if none."""
    p = bond.options.primary
    if isinstance(p, int):
        return p
    m = re.search(r"-m(\d+)$", p or "")
    return int(m.group(1)) if m and int(m.group(1)) < bond.members else 0


def _switch_lag(bond) -> tuple[str, dict] | None:
    """The switch's side of a bond, as a real switch would be configured for that mode."""
    kind = bond.switch_lag
    if kind == "auto":
        kind = {"802.3ad": "lacp", "balance-rr": "static", "balance-xor": "static",
                "broadcast": "static"}.get(bond.mode, "none")
    hash_policy = bond.options.xmit_hash_policy or "layer3+4"
    if kind == "lacp":
        return "802.3ad", {"miimon": 100, "lacp_rate": bond.options.lacp_rate or "fast",
                           "xmit_hash_policy": hash_policy}
    if kind == "static":
        return "balance-xor", {"miimon": 100, "xmit_hash_policy": hash_policy}
    return None


# What makes a router of a namespace: it forwards both families (IPv6's `all` switch turns
# forwarding on for every interface, and routers stop taking router advertisements).
FORWARDING = {"net.ipv4.ip_forward": "1", "net.ipv6.conf.all.forwarding": "1"}
# fib_multipath_hash_policy: what the kernel hashes a flow's packets by to pick one path of a
# multipath route (0: addresses, 1: addresses and ports), set on the nodes that have one.
HASH_POLICY = {"l3": "0", "l4": "1"}


def _nodes(t: Topology, links: list[resolved.Link], scale: float, notes: list[str],
           node_routes: dict[str, list[resolved.Route]]) -> list[resolved.Node]:
    nodes: list[resolved.Node] = []
    ends_of = _ends_by_node(links)
    policy = HASH_POLICY[t.routing.hash_policy if t.routing else "l4"]

    ospf = t.routing_protocol == "ospf"
    ecmp = bool(t.routing and t.routing.ecmp)

    def sysctls_of(name: str, section: str, own: dict, forwarding: dict) -> dict[str, str]:
        multipath = any(len(r.nexthops) > 1 for r in node_routes.get(name, []))
        multipath |= ospf and ecmp and name in t.routers  # ospfd may install multipath routes
        hashing = {f"net.ipv{v}.fib_multipath_hash_policy": policy for v in (4, 6)} if multipath else {}
        merged = {**t.defaults.sysctls, **forwarding, **hashing, **own}  # what the node's file says wins
        scaled, changed = scaling.scale_sysctls({k: str(v) for k, v in merged.items()}, scale)
        notes.extend(f"{section} {name}: {n}" for n in changed)
        return scaled

    for name, host in t.hosts.items():
        nodes.append(resolved.Node(name=name, kind="host", sysctls=sysctls_of(name, "host", host.sysctls if host else {}, {}),
                                   container=_container(host), hosts=_hosts_entries(name, t, links, ends_of),
                                   exec=node_exec(host.exec) if host else [], routes=node_routes.get(name, [])))
    for name, sw in t.switches.items():
        mtus = [link.mtu for link in links if any(e.node == name for e in link.ends)]
        ovs = sw is not None and sw.kind == "ovs"
        ctl = sw.controller if sw else None
        nodes.append(resolved.Node(name=name, kind="switch", switch_kind=sw.kind if sw else "bridge",
                            stp=sw.stp if sw else False, controller=ctl.app if ctl else None,
                            controller_port=ctl.port if ctl else None,
                            fail_mode=(sw.fail_mode or ("secure" if ctl else "standalone")) if ovs else None,
                            datapath=sw.datapath if ovs else None, port_mtu=sw.port_mtu if sw else None,
                            mtu=min(mtus) if mtus else None, exec=node_exec(sw.exec) if sw else []))
    # After the switches: a switch's OpenFlow datapath id is its place among the nodes.
    for name, router in t.routers.items():
        nodes.append(resolved.Node(name=name, kind="router",
                                   sysctls=sysctls_of(name, "router", router.sysctls if router else {}, FORWARDING),
                                   hosts=_hosts_entries(name, t, links, ends_of), exec=node_exec(router.exec) if router else [],
                                   routes=node_routes.get(name, []),
                                   frr=_frr(name, router, links, ecmp) if ospf else None))
    return nodes


def _frr(name: str, router, links: list[resolved.Link], ecmp: bool) -> resolved.Frr:
    """A router's FRR: its router id is its first IPv4 address (a router is on two links or
    more, and IPv4 is always addressed)."""
    first = next(e.ipv4 for link in links for e in link.ends if e.node == name and e.ipv4)
    return resolved.Frr(router_id=_bare(first), ecmp=ecmp, config_file=router.frr_config if router else None)


def _container(host) -> resolved.Container | None:
    if host is None or host.kind != "container":
        return None
    env = {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in host.env.items()}
    return resolved.Container(image=host.image, cmd=host.cmd, env=env, binds=host.binds)


@functools.lru_cache(maxsize=4096)
def _bare(interface: str) -> str:
    """'10.77.0.2/24' -> '10.77.0.2' (asked once per pair of hosts: remembered)."""
    return str(ipaddress.ip_interface(interface).ip)


def _ends_by_node(links: list[resolved.Link]) -> dict[str, list]:
    out: dict[str, list] = {}
    for link in links:
        for e in link.ends:
            out.setdefault(e.node, []).append((link, e))
    return out


def _hosts_entries(me: str, t: Topology, links: list[resolved.Link],
                   ends_of: dict[str, list] | None = None) -> list[tuple[str, str]]:
    """Names as seen from `me`: each other host by its address on a segment `me` shares.
    `ends_of` (node -> its (link, end) pairs, in link order) is `_ends_by_node(links)`, made
    once per lab by the caller: looking them up per pair of hosts is cubic in the lab's size."""
    ends_of = ends_of if ends_of is not None else _ends_by_node(links)
    my_segments = {link.segment for link, _ in ends_of.get(me, [])}
    entries: list[tuple[str, str]] = []
    for other in [*t.hosts, *t.routers]:
        if other == me:
            continue
        mine = ends_of.get(other, [])
        shared = [(link, e) for link, e in mine if link.segment in my_segments]
        pick = (shared or mine)[:1]
        for link, e in pick:
            if e.ipv4:
                entries.append((_bare(e.ipv4), other))
            if e.ipv6:
                entries.append((_bare(e.ipv6), f"{other}-v6"))
    return entries


def node_exec(items: list) -> list[list[str] | resolved.Service]:
    """A node's `exec:` items resolved: commands as argv lists (a mapping without `background`
    is one too), background services with their names decided."""
    out: list[list[str] | resolved.Service] = []
    for item in items:
        if isinstance(item, Service) and item.background:
            out.append(resolved.Service(name=item.service_name(), run=item.run, ready=item.ready))
        else:
            out.append(item.run if isinstance(item, Service) else item)
    return out
