"""What a lab's picture shows, decided once from the resolved model (and the kernel's report of
a running lab), before anything is placed or drawn.

Node kinds come from the model: a host, a container (a host in a container), a switch by its
switch kind (bridge, ovs), and any other kind the model gains (a router) by its own name, drawn
with a generic shape until svg.py gives it one. Link labels give the rates as the topology
writes them (a lab run at scale s shapes at s times them: the caption says so); delays are
never scaled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from linklab.units import format_rate, format_time


@dataclass(frozen=True)
class GNode:
    name: str
    kind: str                      # host, container, bridge, ovs, or the model's own kind name
    detail: str                    # the line under the name: "host", "OVS (kernel datapath)"
    controller: str | None = None  # an OVS switch's controller app, with its port
    marks: tuple[str, ...] = ()    # what the kernel reports wrong: "namespace missing", ...
    controller_marks: tuple[str, ...] = ()


@dataclass(frozen=True)
class GEnd:
    node: str
    ifname: str                    # the interface carrying the link: a veth, bond, LAG or ports
    group: str | None = None       # a bond end: "bond0 balance-rr", "lag0 balance-tcp (OVS)"
    marks: tuple[str, ...] = ()


@dataclass(frozen=True)
class GMember:
    """One veth pair of a link: a plain link has one, a bond one per member."""

    a: str                         # "h1:bond0-m0"
    b: str
    label: str = ""                # what differs from the link's other members ("delay 600us")
    marks: tuple[str, ...] = ()    # "down", "missing"


@dataclass(frozen=True)
class GLink:
    name: str
    a: GEnd
    b: GEnd
    lines: tuple[str, ...]         # the label: name (and bond mode), MTU, rate and delay
    members: tuple[GMember, ...]
    bond: bool
    marks: tuple[str, ...] = ()    # link-wide: an MTU mismatch

    def problem_lines(self) -> list[str]:
        """What the kernel reports wrong at the link's ends and members, for its label (the MTU
        mismatch is its MTU line already)."""
        return ([f"{e.node}:{e.ifname} {m}" for e in (self.a, self.b) for m in e.marks]
                + [m for mem in self.members for m in mem.marks])


@dataclass
class Scene:
    name: str
    caption: str
    nodes: list[GNode]
    links: list[GLink]
    live: bool = False
    notes: list[str] = field(default_factory=list)

    def node(self, name: str) -> GNode:
        return next(n for n in self.nodes if n.name == name)

    def problems(self) -> list[str]:
        """Every mark, each with where it is: what a running lab's picture shows in red."""
        out = [f"node {n.name}: {m}" for n in self.nodes for m in n.marks]
        out += [f"node {n.name}: controller {m}" for n in self.nodes for m in n.controller_marks]
        for link in self.links:
            out += [f"link {link.name}: {m}" for m in [*link.marks, *link.problem_lines()]]
        return out


def count(items: Any, word: str) -> str:
    """'1 link', '4 links'."""
    return f"{len(items)} {word}{'' if len(items) == 1 else 's'}"


def node_kind(node: Any) -> str:
    """The kind a node is drawn as: container and the switch kinds split out of host and switch."""
    if node.kind == "host":
        return "container" if getattr(node, "container", None) else "host"
    if node.kind == "switch":
        return getattr(node, "switch_kind", None) or "bridge"
    return str(node.kind)


def _detail(node: Any, kind: str) -> str:
    if kind == "container":
        return f"container {node.container.image}"
    if kind == "ovs":
        return f"OVS ({node.datapath or 'kernel'} datapath)"
    if kind == "bridge":
        return "Linux bridge" + (" (STP)" if node.stp else "")
    return kind


def impairment_bits(q: Any, scale: float) -> list[str]:
    """['1gbit', 'delay 10ms±1ms', 'loss 1%'] of one direction's queue, rates as written (÷ scale)."""
    if q is None:
        return []
    bits = []
    if q.rate_bps:
        bits.append(format_rate(float(f"{q.rate_bps / (scale or 1):.6g}")))
    if q.delay_s or q.jitter_s:
        bits.append(f"delay {format_time(q.delay_s)}" + (f"±{format_time(q.jitter_s)}" if q.jitter_s else ""))
    for what, v in (("loss", q.loss_pct), ("dup", q.duplicate_pct), ("corrupt", q.corrupt_pct),
                    ("reorder", q.reorder_pct)):
        if v:
            bits.append(f"{what} {v:g}%")
    return bits


def _pair_text(pair: Any, scale: float) -> list[str]:
    """Both directions of a veth pair: once when alike, else each by its sender."""
    fwd, back = impairment_bits(pair.egress_a, scale), impairment_bits(pair.egress_b, scale)
    if fwd == back:
        return fwd
    return [f"{end.node}→ {', '.join(bits) or 'unshaped'}" for end, bits in ((pair.a, fwd), (pair.b, back))]


def _end_group(link: Any, end: Any) -> str | None:
    bond = next((b for b in link.bonds if b.node == end.node), None)
    if bond is not None:
        return f"{bond.ifname} {bond.mode}"
    if end.ovs_bond is not None:
        return f"{end.ovs_bond.name} {end.ovs_bond.mode} (OVS" + (", LACP)" if end.ovs_bond.lacp == "active" else ")")
    if len(end.bridge_ports) > 1:
        return "ports " + ",".join(end.bridge_ports)
    return None


def _intended_mtus(lab: Any, link: Any) -> dict[str, int]:
    """Each end node's MTU on this link as the model sets it (a switch's port_mtu wins)."""
    out = {}
    for end in link.ends:
        node = lab.node(end.node)
        out[end.node] = (getattr(node, "port_mtu", None) or link.mtu) if node.kind == "switch" else link.mtu
    return out


def _link(lab: Any, link: Any, kernel: _Kernel | None) -> GLink:
    texts = [_pair_text(p, lab.scale) for p in link.veths]
    common = texts[0] if all(t == texts[0] for t in texts) else []
    members = []
    for i, (pair, text) in enumerate(zip(link.veths, texts)):
        label = "" if common or not text else (f"m{i}: " if link.kind == "bond" else "") + ", ".join(text)
        members.append(GMember(f"{pair.a.node}:{pair.a.ifname}", f"{pair.b.node}:{pair.b.ifname}", label,
                               tuple(kernel.member_marks(pair)) if kernel else ()))
    head = link.name
    if link.kind == "bond":
        modes = sorted({b.mode for b in link.bonds if b.role == "host"} or {b.mode for b in link.bonds})
        head += f": bond {'/'.join(modes)} × {len(link.veths)}"
    mtu_line, marks = _mtu_line(link, kernel.mtus(link) if kernel else _intended_mtus(lab, link), kernel is not None)
    ends = [GEnd(e.node, e.ifname, _end_group(link, e), tuple(kernel.end_marks(e)) if kernel else ())
            for e in link.ends[:2]]
    return GLink(link.name, ends[0], ends[1], (head, *_with_impairment(mtu_line, common)), tuple(members),
                 link.kind == "bond", tuple(marks))


def _mtu_line(link: Any, mtus: dict[str, int], live: bool) -> tuple[str, list[str]]:
    """'MTU 1500', or each end's when they differ (then also the link's mark)."""
    if len(set(mtus.values())) > 1:
        line = "MTU " + " ≠ ".join(f"{node} {mtu}" for node, mtu in mtus.items())
        return line, [line]
    mtu = next(iter(mtus.values()), link.mtu)
    return f"MTU {mtu}" + (f" (topology: {link.mtu})" if live and mtu != link.mtu else ""), []


def _with_impairment(mtu_line: str, common: list[str]) -> list[str]:
    """The MTU line, the rate joining it when both directions share one; the rest of the
    impairment below it (a line per direction when they differ)."""
    if not common:
        return [mtu_line]
    if "→" in common[0]:
        return [mtu_line, *common]
    rate, rest = (common[0], common[1:]) if common[0][0].isdigit() else (None, common)  # a rate comes first
    return [mtu_line + (f" · {rate}" if rate else ""), *([", ".join(rest)] if rest else [])]


class _Kernel:
    """`linklab status`'s live data (Backend.inspect: nodes -> interfaces), asked per link."""

    def __init__(self, live: dict[str, Any]):
        self.nodes = live.get("nodes") or {}

    def iface(self, node: str, ifname: str) -> dict[str, Any] | None:
        info = self.nodes.get(node) or {}
        return next((i for i in info.get("interfaces") or [] if i.get("ifname") == ifname), None)

    def present(self, node: str) -> bool:
        return bool((self.nodes.get(node) or {}).get("present"))

    def member_marks(self, pair: Any) -> list[str]:
        marks = []
        for end in (pair.a, pair.b):
            if not self.present(end.node):
                continue  # the node's own mark says it
            it = self.iface(end.node, end.ifname)
            if it is None:
                marks.append(f"{end.node}:{end.ifname} missing")
                continue
            member = it.get("bond_member") or {}
            if str(it.get("state", "")).upper() not in ("UP", "UNKNOWN"):
                marks.append(f"{end.node}:{end.ifname} {str(it.get('state')).lower()}")
            elif member and member.get("mii") != "up":
                marks.append(f"{end.node}:{end.ifname} link {member.get('mii')} (bond member)")
        return marks

    def mtus(self, link: Any) -> dict[str, int]:
        """Each end node's MTUs on this link as the kernel reports them (its bond or LAG and every
        veth end); a node whose interfaces disagree among themselves shows the smallest."""
        out: dict[str, int] = {}
        for end in link.ends:
            names = {end.ifname, *end.bridge_ports}
            names |= {v.ifname for p in link.veths for v in (p.a, p.b) if v.node == end.node}
            seen = [it["mtu"] for n in sorted(names) if (it := self.iface(end.node, n)) and it.get("mtu")]
            if seen:
                out[end.node] = min(seen)
        return out

    def end_marks(self, end: Any) -> list[str]:
        if not self.present(end.node):
            return []
        it = self.iface(end.node, end.ifname)
        bond = (it or {}).get("bond")
        if not bond:
            return []
        from linklab.backends.base import bond_summary
        members = [m for m in self.nodes[end.node].get("interfaces", []) if m.get("master") == end.ifname]
        s = bond_summary(it, members)
        marks = []
        if s["members_up"] < s["members"]:
            marks.append(f"{s['members_up']}/{s['members']} members up")
        if s.get("mode") == "802.3ad" and not s.get("lacp_aggregated"):
            marks.append("LACP not aggregated")
        return marks

    def node_marks(self, node: Any) -> tuple[list[str], list[str]]:
        info = self.nodes.get(node.name)
        if info is None or not info.get("present"):
            return ["namespace missing"], []
        ovs = info.get("ovs") or {}
        if ovs.get("error"):
            return ["OVS not answering"], []
        if node.controller and ovs and not ovs.get("controller_connected"):
            return [], ["NOT connected"]
        container = info.get("container") or {}
        if container and container.get("state") not in (None, "running"):
            return [f"container {container.get('state')}"], []
        return [], []


def scene(lab: Any, live: dict[str, Any] | None = None, caption: str | None = None) -> Scene:
    """The picture's content: every node and link of `lab`, marked where `live` (the kernel's
    report of the running lab, as `linklab status --json` gives it under "live") disagrees."""
    kernel = _Kernel(live) if live is not None else None
    nodes = []
    for n in lab.nodes:
        kind = node_kind(n)
        marks, ctl_marks = kernel.node_marks(n) if kernel else ([], [])
        ctl = f"controller {n.controller}" + (f" :{n.controller_port}" if getattr(n, "controller_port", None) else "") \
            if getattr(n, "controller", None) else None
        nodes.append(GNode(n.name, kind, _detail(n, kind), ctl, tuple(marks), tuple(ctl_marks)))
    links = [_link(lab, link, kernel) for link in lab.links]
    if caption is None:
        caption = f"lab {lab.name}: {count(nodes, 'node')}, {count(links, 'link')}"
        if lab.scale != 1:
            caption += f"; rates as written, shaped at scale {lab.scale:g} ({lab.scale_source})"
    return Scene(lab.name, caption, nodes, links, live=live is not None)
