"""Per-interface byte/packet counters read over netlink in a named namespace, and how a
bond's traffic spread over its members.

Counters are the kernel's 64-bit link stats (IFLA_STATS64) and qdiscs' TCA_STATS2, from raw
netlink dumps (linklab/linux/netlink.py: links, qdiscs) — no subprocess, and none of
pyroute2's full decoding (a repetition takes two snapshots of every node).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from linklab.linux import netlink
from linklab.errors import StateError

FIELDS = ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "rx_dropped", "tx_dropped")

Counters = dict[str, dict[str, int]]
T = TypeVar("T")


def _read(netns: str | None, dump: Callable[[str | None], T]) -> T:
    # Existing namespaces only (a typo must not read an empty new one).
    try:
        return dump(netns)
    except FileNotFoundError:
        raise StateError(f"network namespace {netns!r} does not exist") from None


def read_counters(netns: str | None, ifnames: Iterable[str]) -> Counters:
    """{ifname: {rx_bytes, tx_bytes, rx_packets, tx_packets, rx_dropped, tx_dropped}}."""
    return _link_counters(_read(netns, netlink.links), list(ifnames), netns)


def _link_counters(dump: Iterable[Mapping[str, Any]], wanted: list[str], netns: str | None) -> Counters:
    links = {link["ifname"]: link for link in dump}
    where = f" in namespace {netns}" if netns else ""
    missing = [n for n in wanted if n not in links]
    if missing:
        raise StateError(f"no interface {', '.join(missing)}{where}", hint=f"present: {', '.join(sorted(links))}")
    return {name: {f: int(links[name]["stats64"][f]) for f in FIELDS} for name in wanted}


def delta(before: Mapping[str, Mapping[str, int]], after: Mapping[str, Mapping[str, int]]) -> Counters:
    """after - before per interface and field. A negative step means the interface was
    recreated between the snapshots, which makes the window meaningless: refuse it."""
    out: Counters = {}
    for name, a in after.items():
        if name not in before:
            raise ValueError(f"interface {name} missing from the first snapshot")
        d = {f: a[f] - before[name][f] for f in a}
        neg = [f for f, v in d.items() if v < 0]
        if neg:
            raise ValueError(f"{name}: counters went backwards ({', '.join(neg)}); was it recreated?")
        out[name] = d
    return out


def spread(deltas: Mapping[str, Mapping[str, int]], unit: str = "bytes") -> dict[str, dict[str, float | None]]:
    """Each member's share (0..1) of the members' total, per direction.

    {"tx": {"eth0": 0.98, "eth1": 0.02}, "rx": {...}}. None when a direction carried nothing.
    Pass the members' deltas (not the bond's own): the shares then show the hash at work,
    e.g. all four streams on one member.
    """
    if unit not in ("bytes", "packets"):
        raise ValueError(f"unit must be bytes or packets, got {unit!r}")
    out: dict[str, dict[str, float | None]] = {}
    for direction in ("tx", "rx"):
        key = f"{direction}_{unit}"
        total = sum(d[key] for d in deltas.values())
        out[direction] = {name: (d[key] / total if total else None) for name, d in deltas.items()}
    return out


def spread_row(shares: Mapping[str, Mapping[str, float | None]], prefix: str = "member_",
               active_threshold: float = 0.05) -> dict[str, float | int | None]:
    """Flat keys: {prefix}{dir}_share_{ifname}, {prefix}{dir}_max_share, {prefix}{dir}_active
    (members above active_threshold of the traffic)."""
    row: dict[str, float | int | None] = {}
    for direction, by_if in shares.items():
        for name, share in by_if.items():
            row[f"{prefix}{direction}_share_{name}"] = share
        vals = [s for s in by_if.values() if s is not None]
        row[f"{prefix}{direction}_max_share"] = max(vals) if vals else None
        row[f"{prefix}{direction}_active"] = sum(1 for s in vals if s > active_threshold) if vals else None
    return row


QdiscCounters = dict[str, dict[str, int]]


def read_qdiscs(netns: str) -> QdiscCounters:
    """Every qdisc's counters in a namespace over netlink, keyed and valued as
    disturbance.parse_qdisc_stats reads `tc -s qdisc show` ("eth1 bfifo 10:" -> sent_bytes,
    sent_pkts, dropped, overlimits, requeues): two tc processes per node and repetition cost
    ~0.4 s under software emulation, one netlink dump a few ms. The kernel tier checks both
    agree on a live lab."""
    return snapshot(netns, [])[1]


def snapshot(netns: str, ifnames: Iterable[str]) -> tuple[Counters, QdiscCounters]:
    """read_counters and read_qdiscs of one namespace: one link dump and one qdisc dump."""
    dump = _read(netns, netlink.links)
    names = {link["index"]: link["ifname"] for link in dump}
    plain = [{"ifindex": q["ifindex"], "kind": q["kind"], "handle": q["handle"], **q["stats"]}
             for q in _read(netns, netlink.qdiscs) if q["stats"] is not None]
    return _link_counters(dump, list(ifnames), netns), qdisc_rows(plain, names)


def qdisc_rows(qdiscs: Iterable[Mapping[str, Any]], names: Mapping[int, str]) -> QdiscCounters:
    """Pure: qdiscs as netlink gives them (ifindex, kind, handle, TCA_STATS2's bytes, packets,
    drops, overlimits, requeues) -> QdiscCounters. tc names a qdisc by its handle's major number
    in hex ("10:"; 0x100000 -> "10:")."""
    out: QdiscCounters = {}
    for q in qdiscs:
        key = f"{names.get(q['ifindex'], '?')} {q['kind']} {q['handle'] >> 16:x}:"
        out[key] = {"sent_bytes": int(q.get("bytes", 0)), "sent_pkts": int(q.get("packets", 0)),
                    "dropped": int(q.get("drops", 0)), "overlimits": int(q.get("overlimits", 0)),
                    "requeues": int(q.get("requeues", 0))}
    return out
