"""The round trip a topology asks for between two nodes: what its links' delays add up to.

Why: an emulator has a round trip of its own (veth, bridges, and under software emulation a
scheduler that wakes a vCPU late). Where that is as large as the delays the topology asks for,
every delay-sensitive figure (RTT, RTT under load, cwnd / rate) measures the emulator, not the
link; linklab/measure/disturbance.py flags such repetitions by comparing the idle RTT it measured
with this figure. Pure: works on the resolved lab only.
"""

from __future__ import annotations

from collections import deque

from linklab.model.resolved import Lab, Qdisc

# A default ping's frame: 56 bytes of data, ICMP 8, IPv4 20, Ethernet 14. A slow link's shaper
# takes this long to send it, and that is asked for too.
PING_FRAME_BYTES = 98


def _hop_s(q: Qdisc | None) -> float:
    if q is None:
        return 0.0
    serialize = PING_FRAME_BYTES * 8 / q.rate_bps if q.rate_bps else 0.0
    return q.delay_s + q.jitter_s + serialize


def _one_way_s(lab: Lab, src: str, dst: str) -> float:
    """The most delay (delay + jitter + sending a ping at the shaped rate) any single link from
    `src` to `dst` asks for on the way out of `src`: bond members may differ, and a probe can
    take the slowest one."""
    return max((_hop_s(q) for link in lab.links for pair in link.veths
                for here, there, q in ((pair.a, pair.b, pair.egress_a), (pair.b, pair.a, pair.egress_b))
                if here.node == src and there.node == dst), default=0.0)


def asked_rtt_s(lab: Lab, a: str, b: str) -> float | None:
    """Seconds of delay the topology puts on the fewest-hop path a -> b -> a (both directions,
    each link's worst member), or None when no path joins them."""
    if a == b:
        return 0.0
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
    total, node = 0.0, b
    while node != a:
        prev = came_from[node]
        total += _one_way_s(lab, prev, node) + _one_way_s(lab, node, prev)
        node = prev
    return total
