"""The resolved lab: every name, address, MTU and qdisc decided, nothing left to defaults.

This is what a backend realizes, what the state file stores and what golden tests compare.
Still backend-independent: namespaces are named here only as the lab's node identities.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, model_serializer

from linklab.model.ready import Ready


class Resolved(BaseModel):
    """Every part of a resolved lab: frozen, and nothing but the fields named here."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Qdisc(Resolved):
    """Effective egress treatment of one interface (after scaling)."""

    shaper: Literal["netem", "tbf", "htb"] | None = None  # None: no rate limit
    rate_bps: float | None = None
    delay_s: float = 0.0
    jitter_s: float = 0.0
    loss_pct: float = 0.0
    duplicate_pct: float = 0.0
    corrupt_pct: float = 0.0
    reorder_pct: float = 0.0
    limit: int | None = None  # netem's limit in packets (when netem holds the queue)
    # The egress queue's bound (linklab/model/queues.py): bytes at the scaled rate, the delay
    # they allow (the same at every scale), and what decided it.
    queue_bytes: int | None = None
    queue_s: float | None = None
    queue_source: str | None = None
    overhead: int = 0
    burst: int | None = None
    # netem reorders packets when jitter exceeds their spacing; giving netem a rate makes it
    # queue in order (each packet leaves after the previous), which is what a real link does.
    order_rate_bps: float | None = None
    # The queue discipline that holds the queue (linklab/model/aqm.py): None is the byte FIFO;
    # its parameters as tc is told them (times in seconds, sizes in bytes, limits in packets).
    aqm: str | None = None
    aqm_params: dict[str, str | int | float | bool] = {}
    # The sender forwards others' packets (a router's or a switch's port): none has a socket to
    # hold back, so where netem is there its queue is a byte FIFO under it (queue_holder).
    forwards: bool = False

    @model_serializer(mode="wrap")
    def _without_fifo(self, handler):
        # A FIFO direction is written as before AQMs existed: state files, stored runs and
        # golden files of labs without one do not change.
        out = handler(self)
        if isinstance(out, dict) and out.get("aqm") is None:
            out.pop("aqm", None)
            out.pop("aqm_params", None)
        if isinstance(out, dict) and not out.get("forwards"):
            out.pop("forwards", None)  # a host's port, as written before ports were told apart
        return out

    @property
    def needs_netem(self) -> bool:
        return bool(self.delay_s or self.jitter_s or self.loss_pct or self.duplicate_pct or self.corrupt_pct
                    or self.reorder_pct or self.order_rate_bps or self.limit
                    or (self.shaper == "netem" and self.rate_bps))

    @property
    def queue_holder(self) -> str | None:
        """Which qdisc holds the backlog: a byte FIFO under htb, or under netem under htb (or
        tbf) at a port that forwards (linklab/linux/tc.py); netem at a host's own port with
        netem, and where netem is the shaper (its limit counts packets); tbf alone holds its own.

        Why a host's port keeps netem's count: netem detaches packets from their socket, so TCP
        small queues no longer hold the sender back, and a byte bound there drops the bursts a
        real host would have held (a request of 64 KiB on a 10 ms port at 50 Mbit/s); its count
        lets GSO packets queue past the time written instead (docs/topologies.md, "Queues")."""
        if self.aqm:
            return self.aqm
        if not self.shaper:
            return None
        if self.shaper == "netem" or (self.needs_netem and not self.forwards):
            return "netem"
        return "tbf" if self.shaper == "tbf" and not self.needs_netem else "bfifo"


class Iface(Resolved):
    node: str
    ifname: str


class VethPair(Resolved):
    a: Iface
    b: Iface
    egress_a: Qdisc | None = None  # what traffic sent by a (out of a.ifname) goes through
    egress_b: Qdisc | None = None

    def directions(self) -> tuple[tuple[Iface, Iface, Qdisc | None], tuple[Iface, Iface, Qdisc | None]]:
        """(sending end, receiving end, the queue the sender's traffic goes through), a to b then b to a."""
        return (self.a, self.b, self.egress_a), (self.b, self.a, self.egress_b)


class BondEnd(Resolved):
    node: str
    ifname: str
    mode: str
    options: dict[str, str | int | bool | list[str]]
    members: list[str]
    role: Literal["host", "switch-lag"] = "host"


class OvsBond(Resolved):
    """An Open vSwitch bond port: the switch side of a host's bond, done by OVS itself."""

    name: str
    mode: Literal["active-backup", "balance-slb", "balance-tcp"]
    lacp: Literal["active", "off"]
    members: list[str]
    primary: str | None = None  # the member OVS keeps active (other_config:bond-primary)


class LinkEnd(Resolved):
    node: str
    ifname: str  # the interface that carries addresses or joins the bridge (bond, veth or LAG)
    ipv4: str | None = None
    ipv6: str | None = None
    txqueuelen: int | None = None
    offloads: dict[str, bool] = {}
    bridge_ports: list[str] = []  # switch ends: the interfaces enslaved to the switch's bridge
    ovs_bond: OvsBond | None = None  # OVS switch ends of a bond: the bond OVS makes of bridge_ports


class Link(Resolved):
    index: int
    name: str
    kind: Literal["veth", "bond"]
    mtu: int
    ipv6: bool  # IPv6 addresses present (False when disabled or MTU < 1280)
    ipv6_note: str | None = None
    ends: list[LinkEnd]
    veths: list[VethPair]
    bonds: list[BondEnd]
    segment: int
    cost: int = 1  # crossing it, out of either end (routing: ospf: each end's interface cost)

    @model_serializer(mode="wrap")
    def _without_unit_cost(self, handler):
        # A link of cost 1 (every link before costs existed) is written as before.
        out = handler(self)
        if isinstance(out, dict) and out.get("cost") == 1:
            out.pop("cost", None)
        return out

    def bond_members(self, node: str) -> list[str]:
        """The member interfaces of `node`'s bond on this link (none: `node` has no bond here)."""
        return [m for b in self.bonds if b.node == node for m in b.members]


class Container(Resolved):
    """What a container node runs: a Docker image with its command, environment and binds."""

    image: str
    cmd: list[str] | None = None  # None: the image's own command
    env: dict[str, str] = {}
    binds: list[str] = []  # HOST:CONTAINER[:ro|rw]


class NextHop(Resolved):
    via: str  # the gateway: the neighbour's address on the link they share
    dev: str  # the interface it is reached through
    node: str  # the neighbour


class Route(Resolved):
    """One route a node's kernel gets: to a prefix (0.0.0.0/0, ::/0: default), through one next
    hop, or several (a multipath route: the kernel hashes each flow onto one)."""

    to: str
    nexthops: list[NextHop]
    source: Literal["computed", "written"]  # routing: static computed it, or the node's `routes:` wrote it
    cost: int | None = None  # computed: the path's cost (links' cost: summed, 1 each by default)


class Frr(Resolved):
    """A router's FRR (routing: ospf): zebra and ospfd in its namespace, configured with the
    frr.conf linklab generates from the lab (linklab/model/frr.py), or the user's own file."""

    router_id: str  # the router's first IPv4 address
    ecmp: bool = False  # equal-cost paths all installed (else maximum-paths 1)
    config_file: str | None = None  # the user's frr.conf (absolute), loaded instead of the generated one


class Service(Resolved):
    """A long-running program in a node (an `exec:` item with `background: true`): started in
    exec order once the lab is built, waited for until `ready`, owned by the lab."""

    name: str  # unique in its node: its log file, `linklab set --restart NODE/NAME`
    run: list[str]
    ready: Ready | None = None

    @model_serializer(mode="wrap")
    def _without_unset_signs(self, handler):
        out = handler(self)
        if isinstance(out, dict) and isinstance(out.get("ready"), dict):
            out["ready"] = {k: v for k, v in out["ready"].items() if v is not None}
        if isinstance(out, dict) and out.get("ready") is None:
            out.pop("ready", None)
        return out


class Node(Resolved):
    name: str
    # A container node is a host (addresses, sysctls, names) in a container; a router is a host
    # that forwards (its sysctls say so).
    kind: Literal["host", "switch", "router"]
    container: Container | None = None
    switch_kind: Literal["bridge", "ovs"] | None = None
    stp: bool = False
    controller: str | None = None  # OVS: the os-ken app (controllers/<app>.py)
    controller_port: int | None = None  # OVS: its OpenFlow TCP port, inside the switch's namespace
    fail_mode: Literal["secure", "standalone"] | None = None  # OVS
    datapath: Literal["kernel", "netdev"] | None = None  # OVS
    port_mtu: int | None = None  # switches: their ports' MTU, when it differs from the links'
    sysctls: dict[str, str] = {}
    mtu: int | None = None  # switches: the bridge's MTU (the smallest of its links)
    hosts: list[tuple[str, str]] = []  # /etc/hosts entries seen from this node: (address, name)
    # Run in the node once the lab is up, in order: commands (argv lists) and services.
    exec: list[list[str] | Service] = []
    routes: list[Route] = []  # beyond its own links' subnets: computed (routing: static) or written
    frr: Frr | None = None  # routers of a routing: ospf lab

    def address_of(self, name: str) -> str | None:
        """The address this node's hosts file gives `name` (its first line for it, as the
        resolver reads it); None when it names no such host."""
        return next((addr for addr, n in self.hosts if n == name), None)

    @model_serializer(mode="wrap")
    def _without_no_container(self, handler):
        # A node that is no container, runs no commands or has no routes is written as before
        # it could: state files, stored runs and golden files of labs without them do not change.
        out = handler(self)
        if isinstance(out, dict):
            for key in ("container", "frr"):
                if out.get(key) is None:
                    out.pop(key, None)
            for key in ("exec", "routes"):
                if not out.get(key):
                    out.pop(key, None)
        return out


class Lab(Resolved):
    name: str
    scale: float
    scale_source: str
    nodes: list[Node]
    links: list[Link]
    notes: list[str] = []

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def link(self, name: str) -> Link:
        for link in self.links:
            if link.name == name:
                return link
        raise KeyError(name)

    # Questions code above the model asks of a lab: answered here once, not by each caller
    # walking links, pairs and bonds itself.

    def egress_queues(self, node: str | None = None) -> Iterator[Egress]:
        """Every veth end's egress queue (both directions of every pair of every link), of one
        node's ends when `node` is given."""
        for link in self.links:
            for pair in link.veths:
                for end, peer, queue in pair.directions():
                    if node is None or end.node == node:
                        yield Egress(link, end, peer, queue)

    def bond_members(self, node: str) -> list[str]:
        """Every member interface of `node`'s bonds, link by link."""
        return [m for link in self.links for m in link.bond_members(node)]

    def switch_ports(self, switch: str) -> list[SwitchPort]:
        """`switch`'s ports in port order (link by link): each with the MTU it takes (the
        switch's port_mtu when set, else its link's). OpenFlow port k+1 is the k-th."""
        node = self.node(switch)
        return [SwitchPort(p, node.port_mtu or link.mtu, link, end)
                for link in self.links for end in link.ends if end.node == switch for p in end.bridge_ports]

    def ovs_bonds(self, switch: str) -> list[OvsBond]:
        """The bonds an Open vSwitch switch makes of its ports (the switch side of host bonds)."""
        return [end.ovs_bond for link in self.links for end in link.ends if end.node == switch and end.ovs_bond]

    def dpid(self, switch: str) -> int:
        """The switch's OpenFlow datapath id: its place among the lab's nodes, from 1."""
        return 1 + [n.name for n in self.nodes].index(switch)

    def openflow_layout(self, switch: str) -> dict[str, list]:
        """What a controller app is told of its switch (controllers/_grouped.py): the OpenFlow
        port numbers, and the groups of ports it should treat as one logical port (a host bond's
        members, parallel links to one neighbour)."""
        number = {p.name: k for k, p in enumerate(self.switch_ports(switch), start=1)}
        groups: list[list[int]] = []
        by_peer: dict[str, list[int]] = {}
        for link in self.links:
            for end in link.ends:
                if end.node != switch:
                    continue
                if len(end.bridge_ports) > 1:
                    groups.append([number[p] for p in end.bridge_ports])
                else:
                    peer = next(e.node for e in link.ends if e is not end)
                    by_peer.setdefault(peer, []).extend(number[p] for p in end.bridge_ports)
        groups += [ports for ports in by_peer.values() if len(ports) > 1]
        return {"ports": list(number.values()), "groups": groups}

    def address(self, node: str, family: int) -> str:
        """`node`'s first address of that IP family (4 or 6), without its prefix length."""
        for link in self.links:
            for end in link.ends:
                addr = end.ipv4 if family == 4 else end.ipv6
                if end.node == node and addr:
                    return addr.split("/")[0]
        raise LookupError(f"{node} has no IPv{family} address")


class Egress(NamedTuple):
    """One direction of a veth pair: `end` sends through `queue` to `peer`, on `link`."""

    link: Link
    end: Iface
    peer: Iface
    queue: Qdisc | None


class SwitchPort(NamedTuple):
    """One port of a switch: the interface, the MTU it takes, and the link end it belongs to."""

    name: str
    mtu: int
    link: Link
    end: LinkEnd
