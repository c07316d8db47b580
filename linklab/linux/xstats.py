"""A queue discipline's own statistics (TCA_STATS_APP in a qdisc dump's TCA_STATS2): the ECN
marks and the queueing delay, where the discipline reports them. Pure.

Decoded here from the kernel's structs (include/uapi/linux/pkt_sched.h) because the window's
sampler reads ten dumps a second over raw netlink (linklab/linux/netlink.py: qdiscs), where a
tc process each time would cost a core under emulation; `linklab status` and the manifest read
the same figures through tc's JSON (linklab/linux/qdisc_report.py).
"""

from __future__ import annotations

import struct

from linklab.linux.netlink import _attrs  # the one walker of netlink attributes

_U32 = struct.Struct("I")
_U64 = struct.Struct("Q")
# (offset of the ECN-mark counter, its struct, offset of the delay in microseconds or None)
LAYOUT = {
    # struct tc_fq_codel_xstats: u32 type (0: the qdisc's), then tc_fq_codel_qd_stats {maxpacket,
    # drop_overlimit, ecn_mark, ...}; fq_codel reports a delay per flow only
    "fq_codel": (12, _U32, None),
    # struct tc_codel_xstats {maxpacket, count, lastcount, ldelay, drop_next, drop_overlimit, ecn_mark, ...}
    "codel": (24, _U32, 12),
    # struct tc_pie_xstats {u64 prob; u32 delay (us), avg_dq_rate, dq_rate_estimating, packets_in,
    # dropped, overlimit, maxq, ecn_mark}
    "pie": (36, _U32, 8),
    # struct tc_fq_pie_xstats {packets_in, dropped, overlimit, overmemory, ecn_mark, ...}
    "fq_pie": (16, _U32, None),
    # struct tc_red_xstats {early, pdrop, other, marked}
    "red": (12, _U32, None),
    # struct tc_fq_qd_stats: eight 64-bit counters, four u32, then u64 ce_mark
    "fq": (80, _U64, None),
}
# cake: nested attributes; TCA_CAKE_STATS_TIN_STATS holds one nest per tin
CAKE_TIN_STATS, TIN_ECN_MARKED_PACKETS, TIN_AVG_DELAY_US = 10, 8, 19


def decode(kind: str | None, raw: bytes | None) -> tuple[int | None, float | None]:
    """(ECN marks so far, queueing delay in seconds) from a discipline's xstats; None for what it
    does not report (or a struct shorter than expected)."""
    if not raw or kind is None:
        return None, None
    if kind == "cake":
        return _cake(raw)
    if kind not in LAYOUT:
        return None, None
    mark_at, fmt, delay_at = LAYOUT[kind]
    if kind == "fq_codel" and (len(raw) < 4 or _U32.unpack_from(raw, 0)[0] != 0):
        return None, None  # a class's statistics, not the qdisc's
    marks = fmt.unpack_from(raw, mark_at)[0] if len(raw) >= mark_at + fmt.size else None
    delay = _U32.unpack_from(raw, delay_at)[0] / 1e6 if delay_at is not None and len(raw) >= delay_at + 4 else None
    return marks, delay


def _cake(raw: bytes) -> tuple[int | None, float | None]:
    marks, delays = 0, []
    found = False
    for atype, value in _attrs(raw, 0, len(raw)):
        if atype != CAKE_TIN_STATS:
            continue
        for _tin, nest in _attrs(value, 0, len(value)):
            for ttype, tval in _attrs(nest, 0, len(nest)):
                if ttype == TIN_ECN_MARKED_PACKETS and len(tval) >= 4:
                    marks += _U32.unpack_from(tval)[0]
                    found = True
                elif ttype == TIN_AVG_DELAY_US and len(tval) >= 4:
                    delays.append(_U32.unpack_from(tval)[0] / 1e6)
    return (marks if found else None), (max(delays) if delays else None)
