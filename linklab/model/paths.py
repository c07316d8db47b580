"""What a topology asks of the path between two nodes: the round trip its links' delays add up
to, and which of its ports lie beyond the path's bottleneck.

Why: an emulator has a round trip of its own (veth, bridges, and under software emulation a
scheduler that wakes a vCPU late). Where that is as large as the delays the topology asks for,
every delay-sensitive figure (RTT, RTT under load, cwnd / rate) measures the emulator, not the
link; linklab/measure/disturbance.py flags such repetitions by comparing the idle RTT it measured
with this figure. Pure: works on the resolved lab only.
"""

from __future__ import annotations

from collections import deque

from linklab.model.resolved import Lab, Qdisc

# The header sizes linklab counts, bytes: what lies between a link's MTU and the payload a flow
# carries, and what a frame adds to its IP packet. One set, for the sweeps' theory, the checks',
# the published findings', the queues' frame sizes, the pre-flight's pings, bench and tests.
ETHERNET_HEADER = 14  # a frame's header beyond its IP packet: what tc's shapers count in a packet's length
IP_HEADER = {4: 20, 6: 40}  # IPv4 without options, IPv6 without extension headers
TCP_HEADER = 20
TCP_TIMESTAMPS = 12  # the timestamp option (with its padding), which Linux sends by default
UDP_HEADER = 8
ICMP_HEADER = 8  # an echo request's, ICMP's and ICMPv6's alike
PING_DATA = 56  # a default ping's data


def headers(family: int = 4, protocol: str = "tcp", timestamps: bool = True) -> int:
    """IP and transport headers of one packet: what an MTU-sized packet carries besides its
    payload. protocol: tcp (with the timestamp option unless `timestamps` is False), udp or icmp."""
    transport = {"tcp": TCP_HEADER + (TCP_TIMESTAMPS if timestamps else 0), "udp": UDP_HEADER, "icmp": ICMP_HEADER}
    return IP_HEADER.get(family, IP_HEADER[4]) + transport[protocol]


def frame_bytes(mtu: float) -> float:
    """A full-sized packet's length as a shaper counts it: the MTU and the Ethernet header."""
    return mtu + ETHERNET_HEADER


# A default ping's frame (IPv4). A slow link's shaper takes this long to send it, and that is asked for too.
PING_FRAME_BYTES = frame_bytes(PING_DATA + headers(4, "icmp"))


def _hop_s(q: Qdisc | None) -> float:
    if q is None:
        return 0.0
    serialize = PING_FRAME_BYTES * 8 / q.rate_bps if q.rate_bps else 0.0
    return q.delay_s + q.jitter_s + serialize


def _one_way_s(lab: Lab, src: str, dst: str) -> float:
    """The most delay (delay + jitter + sending a ping at the shaped rate) any single link from
    `src` to `dst` asks for on the way out of `src`: bond members may differ, and a probe can
    take the slowest one."""
    return max((_hop_s(e.queue) for e in lab.egress_queues(src) if e.peer.node == dst), default=0.0)


def _route(lab: Lab, a: str, b: str) -> list[str] | None:
    """The fewest-hop path a -> ... -> b as its nodes (ties broken by name), None when none."""
    neighbours: dict[str, set[str]] = {}
    for link in lab.links:
        for pair in link.veths:
            neighbours.setdefault(pair.a.node, set()).add(pair.b.node)
            neighbours.setdefault(pair.b.node, set()).add(pair.a.node)
    came_from: dict[str, str] = {a: a}
    todo = deque([a])
    while todo:
        here = todo.popleft()
        for there in sorted(neighbours.get(here, ())):
            if there not in came_from:
                came_from[there] = here
                todo.append(there)
    if b not in came_from:
        return None
    path = [b]
    while path[-1] != a:
        path.append(came_from[path[-1]])
    return path[::-1]


def asked_rtt_s(lab: Lab, a: str, b: str) -> float | None:
    """Seconds of delay the topology puts on the fewest-hop path a -> b -> a (both directions,
    each link's worst member), or None when no path joins them."""
    if a == b:
        return 0.0
    path = _route(lab, a, b)
    if path is None:
        return None
    return sum(_one_way_s(lab, here, there) + _one_way_s(lab, there, here) for here, there in zip(path, path[1:]))


def _egress(lab: Lab, here: str, there: str) -> list[tuple[str, float]]:
    """The ports `here` sends to `there` through ("node/ifname"), each with its shaped rate
    (inf: not shaped). Bond members are one port each."""
    return [(f"{end.node}/{end.ifname}", q.rate_bps if q is not None and q.rate_bps else float("inf"))
            for link in lab.links for pair in link.veths
            for end, peer, q in ((pair.a, pair.b, pair.egress_a), (pair.b, pair.a, pair.egress_b))
            if end.node == here and peer.node == there]


def beyond_bottleneck(lab: Lab, src: str, dst: str) -> dict[str, str]:
    """Ports on the path src -> dst that a single path's traffic reaches only after a port no
    faster than themselves: {"node/ifname": the earlier port that bounds them}.

    Why: traffic that left a port at rate R arrives at most at R, so a later port of rate >= R
    never needs to queue it (no other traffic crosses a lab's measured path). When one drops
    packets anyway, the emulator delivered them in bursts (timer slack, batched forwarding):
    the drop, and whatever throughput it cost, is the emulator's, not the link's.
    A hop's capacity is what its ports carry together (a bond spreads flows over its members),
    a later hop is judged by its slowest port (a hash may put every flow on one member), so
    hashing a bond's flows onto fewer members never counts as the emulator's doing."""
    path = _route(lab, src, dst) if src != dst else None
    out: dict[str, str] = {}
    bound: tuple[float, str] | None = None  # the slowest hop so far: (capacity, its first port)
    for here, there in zip(path or [], (path or [])[1:]):
        ports = _egress(lab, here, there)
        if not ports:
            continue
        slowest = min(rate for _, rate in ports)
        if bound is not None and bound[0] <= slowest:
            out.update((name, bound[1]) for name, _ in ports)
        capacity = sum(rate for _, rate in ports)
        if bound is None or capacity < bound[0]:
            bound = (capacity, ports[0][0])
    return out


def goodput_fraction(mtu: float, family: int = 4, mss: int | None = None, protocol: str = "tcp",
                     timestamps: bool = True) -> float:
    """Goodput theory: payload per byte a shaped link carries, at full-sized packets of the path's
    MTU (for TCP, or of iperf3's -M, which counts the timestamp option in: its payload is mss less
    the option). (MTU - 52) / (MTU + 14) for TCP over IPv4 with timestamps, (MTU - 28) / (MTU + 14)
    for UDP. What netem's and htb's rates deliver (bench/README.md#queues-and-shapers)."""
    over = headers(family, protocol, timestamps)
    payload = mtu - over
    if mss and protocol == "tcp":
        payload = min(payload, mss - (TCP_TIMESTAMPS if timestamps else 0))
    return max(0.0, payload / frame_bytes(payload + over))


def goodput_bps(wire_bps: float, mtu: float, family: int = 4, mss: int | None = None, protocol: str = "tcp",
                timestamps: bool = True) -> float:
    """What a flow can deliver through a bottleneck that carries `wire_bps` on the wire (frames
    counted whole): that rate times goodput_fraction."""
    return wire_bps * goodput_fraction(mtu, family, mss, protocol, timestamps)


def tcp_timestamps(lab: Lab, src: str, dst: str) -> bool:
    """Whether a TCP connection src -> dst carries the timestamp option: both ends must allow it
    (net.ipv4.tcp_timestamps, for IPv6 too; the kernel's default allows it)."""
    return all(str(lab.node(n).sysctls.get("net.ipv4.tcp_timestamps", 1)).strip() != "0" for n in (src, dst))


def path_mtu(lab: Lab, src: str, dst: str) -> int | None:
    """The smallest MTU on the fewest-hop path src -> dst (its links' and its switches' ports')."""
    path = _route(lab, src, dst) if src != dst else None
    if not path:
        return None
    mtus = [link.mtu for here, there in zip(path, path[1:]) for link in lab.links
            if any({p.a.node, p.b.node} == {here, there} for p in link.veths)]
    mtus += [n.port_mtu for n in lab.nodes if n.name in path and n.port_mtu]
    return min(mtus) if mtus else None


def _spread_mode(lab: Lab, here: str, there: str) -> str | None:
    """How `here` spreads one path's packets over its ports to `there`: its bond's mode (a host's or
    a switch's LAG), its OVS bond's, or None (plain ports: a bridge sends to a MAC address through
    one port)."""
    for link in lab.links:
        if not any({p.a.node, p.b.node} == {here, there} for p in link.veths):
            continue
        for bond in link.bonds:
            if bond.node == here:
                return bond.mode
        for end in link.ends:
            if end.node == here and end.ovs_bond is not None:
                return end.ovs_bond.mode
    return None


def tcp_capacity_bps(lab: Lab, src: str, dst: str, src_members: int | None = None,
                     dst_members: int | None = None) -> tuple[float, str] | None:
    """The rate the path src -> dst can carry one host pair's TCP traffic at, in bits/s on the wire,
    with the port that bounds it: the slowest hop, a hop being one port, or all of a balance-rr
    bond's members (it sprays every flow's packets over them). Other bonds hash a flow, or a host
    pair, onto one member, so they count one member unless measured: `src_members`, how many
    members of the first hop carried the traffic (src's bond counters, tx), `dst_members` of the
    last (dst's, rx).
    None: no path, or no hop is shaped (nothing but the emulator's CPU bounds the path)."""
    path = _route(lab, src, dst) if src != dst else None
    best: tuple[float, str] | None = None
    for here, there in zip(path or [], (path or [])[1:]):
        ports = _egress(lab, here, there)
        if not ports:
            continue
        rates = sorted(rate for _, rate in ports)
        if _spread_mode(lab, here, there) == "balance-rr":
            capacity = sum(rates)
        else:
            measured = src_members if here == src else dst_members if there == dst else None
            capacity = rates[0] * max(1, min(len(rates), measured or 1))
        if capacity != float("inf") and (best is None or capacity < best[0]):
            best = (capacity, ports[0][0])
    return best


def tcp_goodput_bps(lab: Lab, src: str, dst: str, family: int = 4, mss: int | None = None,
                    src_members: int | None = None, dst_members: int | None = None) -> float | None:
    """What TCP could deliver from src to dst if only the links bounded it: the path's capacity
    (tcp_capacity_bps) times the payload share of its full-sized segments (goodput_fraction at
    the path's MTU). None where no shaped hop bounds the path."""
    cap, mtu = tcp_capacity_bps(lab, src, dst, src_members, dst_members), path_mtu(lab, src, dst)
    if cap is None or mtu is None:
        return None
    return goodput_bps(cap[0], mtu, family, mss, timestamps=tcp_timestamps(lab, src, dst))


def bottleneck_bps(lab: Lab, src: str, dst: str) -> float | None:
    """The shaped rate the path src -> dst can carry at most: its slowest hop, a hop carrying
    what its ports carry together (a bond's members add up). None: no path, or no hop shaped."""
    path = _route(lab, src, dst) if src != dst else None
    hops = [sum(rate for _, rate in _egress(lab, here, there)) for here, there in zip(path or [], (path or [])[1:])]
    slowest = min(hops, default=float("inf"))
    return None if slowest == float("inf") else slowest
