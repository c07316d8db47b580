"""What every exporter shares: the resolved lab they start from, and facts about it.

Exporters work from the resolved model (load_topology -> resolve), never from the file as
written, so addresses, MTUs, qdiscs and bond members are exactly what `linklab up` builds.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from linklab.errors import UsageError
from linklab.model.resolved import Lab, Link


def resolved_lab(topology: str | Path, overrides: list[tuple[str, Any]] = (), scale: float | None = None) -> Lab:
    from linklab import lab
    return lab.build_lab(topology, list(overrides), scale=scale)


def ovs_switches(lab: Lab) -> list[str]:
    return [n.name for n in lab.nodes if n.switch_kind == "ovs"]


def refuse_ovs(lab: Lab, target: str) -> None:
    ovs = ovs_switches(lab)
    if ovs:
        raise UsageError(f"export to {target}: switches {', '.join(ovs)} are Open vSwitch (kind: ovs), which this "
                         "exporter does not map yet (their controllers and OVS bonds have no equivalent here)",
                         hint="export a copy of the topology with kind: bridge for these switches")


def bond_ip_args(options: dict[str, Any]) -> list[str]:
    """Bond options as `ip link add NAME type bond …` arguments (names as in sysfs; primary is
    set once the members are enslaved, so it is left out here)."""
    args: list[str] = []
    for k, v in options.items():
        if k == "primary":
            continue
        if isinstance(v, bool):
            v = int(v)
        elif isinstance(v, list):
            v = ",".join(map(str, v))
        args += [k, str(v)]
    return args


@dataclass(frozen=True)
class PingCheck:
    src: str
    dst: str
    dst_addr: str
    mtu: int
    via: str


def ping_checks(lab: Lab) -> list[PingCheck]:
    """Every ordered pair of hosts that share an L2 segment: ping at the path MTU (the smallest
    MTU of the two hosts' links into the segment), naming the links crossed."""
    ends: dict[int, list[tuple[str, str, Link]]] = {}
    for link in lab.links:
        for e in link.ends:
            if lab.node(e.node).kind == "host" and e.ipv4:
                ends.setdefault(link.segment, []).append((e.node, str(ipaddress.ip_interface(e.ipv4).ip), link))
    out = []
    for seg in sorted(ends):
        for src, _, l1 in ends[seg]:
            for dst, addr, l2 in ends[seg]:
                if src == dst:
                    continue
                via = l1.name if l1 is l2 else f"{l1.name}+{l2.name}"
                out.append(PingCheck(src, dst, addr, min(l1.mtu, l2.mtu), via))
    return out


def kbit(bps: float) -> str:
    return f"{bps / 1e6:g} Mbit/s"
