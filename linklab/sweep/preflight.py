"""Before each point: is the lab what the point says it is? A failed pre-flight is recorded
as such, never measured silently.

Checks (read back live from the kernel):
  bonds   mode as planned, every member's link up, 802.3ad: all members in one aggregator with
          a partner and distributing (waits for LACP to converge, up to a deadline)
  path    a don't-fragment ping of the largest size the path MTU allows passes, one byte more does not;
          not again at a point whose lab is, in everything the pings depend on (path_signature:
          links, MTUs, bonds, switches, client, server, IP version), the one the previous passing
          check proved: a point that changes only queues, impairments, sysctls or the tool's
          settings has the same path. The bonds are read at every point: LACP can change on its own.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from linklab.backends.base import bond_summary
from linklab.handle import LabHandle
from linklab.measure.ping import Ping
from linklab.model import paths
from linklab.model.resolved import Lab

PING_GAP_S = 0.02
NEXT_WAIT_S = 0.5
# LACP: a member distributes ~2 s after it joins its aggregator (AD_AGGREGATE_WAIT_TIME) and the
# partners exchange LACPDUs each second (lacp_rate fast): seconds, even on a loaded emulator.
LACP_CONVERGE_S = 15.0


@dataclass
class Preflight:
    ok: bool = True
    problems: list[str] = field(default_factory=list)
    bonds: list[dict[str, Any]] = field(default_factory=list)
    path_mtu: int | None = None
    df_fits: str | None = None
    df_next: str | None = None
    waited_s: float = 0.0  # for the bonds to become ready (negotiating LACP): the lab's time, not the check's

    def fail(self, msg: str) -> None:
        self.ok = False
        self.problems.append(msg)

    def row(self) -> dict[str, Any]:
        return {"preflight_ok": self.ok, "preflight_problems": "; ".join(self.problems) or None,
                "path_mtu": self.path_mtu, "preflight_wait_s": round(self.waited_s, 2)}


def bond_problems(handle: LabHandle, nodes: set[str] | None = None) -> tuple[list[str], list[dict[str, Any]]]:
    lab = handle.lab
    bonds = [b for link in lab.links for b in link.bonds if nodes is None or b.node in nodes]
    # Only the bonded nodes' interfaces: a full inspect also dumps every OVS switch's tables
    # (~5 s a point in the lab VM), which no bond check reads.
    live = handle.backend.interfaces(lab, {b.node for b in bonds}) if bonds else {}
    problems, summaries = [], []
    for b in bonds:
        ifaces = live.get(b.node, [])
        bond = next((i for i in ifaces if i["ifname"] == b.ifname), None)
        if bond is None or not bond.get("bond"):
            problems.append(f"{b.node}:{b.ifname} missing")
            continue
        members = [i for i in ifaces if i.get("master") == b.ifname]
        s = bond_summary(bond, members)
        s["bond"] = f"{b.node}:{b.ifname}"
        summaries.append(s)
        if s["mode"] != b.mode:
            problems.append(f"{b.node}:{b.ifname} is {s['mode']}, planned {b.mode}")
        if s["members_up"] != len(b.members):
            problems.append(f"{b.node}:{b.ifname} has {s['members_up']}/{len(b.members)} members up")
        if b.mode == "802.3ad" and not s.get("lacp_aggregated"):
            problems.append(f"{b.node}:{b.ifname} LACP not aggregated (aggregator {s.get('aggregator')}, "
                            f"partner {s.get('partner_mac')}, {s.get('members_distributing')}/{len(b.members)} "
                            "members distributing)")
    return problems, summaries


def wait_for_bonds(handle: LabHandle, deadline_s: float, settled) -> tuple[list[str], list[dict[str, Any]], float]:
    """bond_problems, polled until settled(problems, summaries) or deadline_s (LACP converges
    in seconds after a bond is built or its mode changed); also the seconds until the last look,
    the time the bonds took (the kernel's negotiation, LACP's), not the sweep's or the check's."""
    t0 = time.monotonic()
    while True:
        polled = time.monotonic()
        problems, summaries = bond_problems(handle)
        if settled(problems, summaries) or time.monotonic() - t0 > deadline_s:
            return problems, summaries, polled - t0
        time.sleep(0.2)


def lacp_converging(summaries: list[dict[str, Any]]) -> list[str]:
    """The 802.3ad bonds (of bond_problems' summaries) with every member up but not aggregated
    yet: what LACP is still negotiating. A bond with a member down is as the lab made it."""
    return [s["bond"] for s in summaries if s.get("mode") == "802.3ad" and s["members_up"] == s["members"]
            and not s.get("lacp_aggregated")]


def path_mtu(lab: Lab, client: str, server: str) -> int:
    """The smallest MTU on the way: links of the client's and server's L2 segments."""
    segs = {link.segment for link in lab.links if any(e.node in (client, server) for e in link.ends)}
    # A switch whose ports keep their own MTU (port_mtu) bounds the path too.
    ports = [lab.node(e.node).port_mtu for link in lab.links if link.segment in segs for e in link.ends]
    return min([link.mtu for link in lab.links if link.segment in segs] + [m for m in ports if m])


PROVED = "proved at the previous point (the lab unchanged since)"


def path_signature(lab: Lab, client: str, server: str, ip: int) -> str:
    """Everything of a lab the path check's pings depend on, as text: two points with the same
    signature have the same path. Left out: the egress queues (rates, delays, loss, queue sizes),
    sysctls, hosts entries and node commands, which change no MTU, interface or forwarding. Pure."""
    links = [link.model_dump(mode="json", exclude={"veths": {"__all__": {"egress_a", "egress_b"}}})
             for link in lab.links]
    nodes = [node.model_dump(mode="json", exclude={"sysctls", "hosts", "exec"}) for node in lab.nodes]
    return json.dumps([client, server, ip, links, nodes], sort_keys=True)


def run(handle: LabHandle, client: str, server: str, ip: int, deadline_s: float = LACP_CONVERGE_S,
        path_proved: bool = False) -> Preflight:
    """The checks; `path_proved`: the path's MTU was proved by the previous point's pre-flight on
    this very lab (the caller knows nothing changed since): its pings are not sent again."""
    lab = handle.lab
    pf = Preflight()
    problems, pf.bonds, pf.waited_s = wait_for_bonds(handle, deadline_s, lambda problems, _s: not problems)
    for p in problems:
        pf.fail(p)
    mtu = path_mtu(lab, client, server)
    pf.path_mtu = mtu
    if ip == 6 and mtu < 1280:
        pf.fail(f"IPv6 asked for, but the path MTU is {mtu} (< 1280: no IPv6)")
        return pf
    if path_proved:
        pf.df_fits = pf.df_next = PROVED
        return pf
    ns = handle.ns(client)
    target = server if ip == 4 else f"{server}-v6"
    size = mtu - paths.headers(ip, "icmp")  # the ping payload that fills the MTU
    # 20 ms apart (root may go below ping's 200 ms floor): 0.7 s less per point under emulation.
    res = Ping(target=target, count=3, interval=PING_GAP_S, size=size, dont_fragment=True, family=ip, wait=2).run(
        netns=ns, timeout=15)
    pf.df_fits = res.verdict
    if res.received == 0:
        pf.fail(f"don't-fragment ping of {size} bytes (path MTU {mtu}) to {target} got no reply ({res.verdict})")
    # Waits NEXT_WAIT_S for a reply that should never come: 10x the slowest first reply in the lab
    # VM, a packet-in through an OpenFlow controller (bench/README.md#measurement).
    res2 = Ping(target=target, count=2, interval=PING_GAP_S, size=size + 1, dont_fragment=True, family=ip,
                wait=NEXT_WAIT_S).run(netns=ns, timeout=15)
    pf.df_next = res2.verdict
    if res2.received:
        pf.fail(f"don't-fragment ping of {size + 1} bytes passed: the path MTU is larger than the planned {mtu}")
    return pf
