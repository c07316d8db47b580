"""What a measurement window did inside the lab's switches, as row fields: packets sent to
the controller, datapath misses and lost upcalls, per-port drops and errors, and kernel log
lines of over-MTU drops. Pure: works on two `Backend.switch_counters` snapshots."""

from __future__ import annotations

from statistics import mean
from typing import Any

from linklab.linux.ovs import port_delta


def first_packet_row(rtts_ms: tuple[float, ...] | list[float]) -> dict[str, Any]:
    """The first reply's RTT (its packets crossed the controller when nothing was learned yet)
    apart from the steady state of the rest."""
    rtts = list(rtts_ms)
    return {"ping_first_rtt_ms": rtts[0] if rtts else None,
            "ping_steady_rtt_mean_ms": mean(rtts[1:]) if len(rtts) > 1 else None}


def row(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    sums = {"packet_ins": 0, "dp_hit": 0, "dp_missed": 0, "dp_lost": 0, "rx_dropped": 0, "rx_errors": 0,
            "tx_dropped": 0, "tx_errors": 0}
    for name, a in (after.get("switches") or {}).items():
        b = (before.get("switches") or {}).get(name, {})
        if a.get("error") or b.get("error"):
            continue
        sums["packet_ins"] += (a.get("packet_ins") or 0) - (b.get("packet_ins") or 0)
        for k in ("hit", "missed", "lost"):
            sums[f"dp_{k}"] += (a.get("datapath") or {}).get(k, 0) - (b.get("datapath") or {}).get(k, 0)
        for port, d in port_delta(b.get("ports", []), a.get("ports", [])).items():
            for k in ("rx_dropped", "rx_errors", "tx_dropped", "tx_errors"):
                sums[k] += d.get(k, 0)
        out["switch_flows"] = a.get("flows")
    out.update({f"switch_{k}": v for k, v in sums.items()})
    if after.get("kernel_over_mtu_lines") is not None and before.get("kernel_over_mtu_lines") is not None:
        out["kernel_over_mtu_lines"] = after["kernel_over_mtu_lines"] - before["kernel_over_mtu_lines"]
    return out
