"""Queue disciplines a link direction may use instead of the byte FIFO (`impair.aqm:`), and the
parameters each takes (`impair.aqm_params:`), as tc-fq_codel(8), tc-codel(8), tc-fq(8),
tc-pie(8), tc-fq_pie(8), tc-cake(8) and tc-red(8) name them (`-` written `_`).

Pure: what is valid, how a written value is parsed, and how the queue's time bound becomes
each discipline's own limit. The tc commands are built in linklab/linux/tc.py.

Where it sits: under linklab's shaper, as the leaf of htb's class (or of tbf), so that a rate
means what it means with the FIFO and the AQM holds the queue that forms there. With netem
(delay, loss, ...) on the same direction, netem stays where it is today (htb's leaf) and the
AQM becomes netem's child: packets wait out their delay in netem, then queue in the AQM for the
shaper (netem's own queue holds only packets still being delayed). Without a rate the AQM is
the root qdisc (or netem's child): nothing shapes, so it only sees a queue where the interface
itself pushes back (a veth never does).

cake keeps htb as its shaper and runs `unlimited`: every AQM is then compared under the same
shaper with the same bucket (a comparison of queues, not of shapers), a rate changed by
`linklab set` or a fault event changes htb's class as it does for the FIFO, and `queue:` bounds
cake as it bounds the others. cake's own shaper (`bandwidth`) is not offered.

ECN: `ecn: true` marks ECN-capable packets instead of dropping them where the discipline can
(fq_codel, codel, pie, fq_pie, red); fifo and fq cannot mark (fq has ce_threshold, which marks
above a sojourn threshold, a different thing); cake always marks (it has no switch to turn it
off). Unset, linklab writes `noecn` where the kernel would otherwise choose (fq_codel marks by
default): ECN on or off then means the same for every discipline. Hosts negotiate ECN through
their sysctl net.ipv4.tcp_ecn (1: ask for it), which stays a sysctl.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from linklab import units
from linklab.model.paths import frame_bytes

AQMS = ("fifo", "fq_codel", "codel", "fq", "pie", "fq_pie", "cake", "red")


@dataclass(frozen=True)
class Param:
    kind: str  # time | packets | bytes | count | bool | rate | choice | probability | threshold
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None


TIME, PACKETS, BYTES, BOOL, RATE = Param("time"), Param("packets"), Param("bytes"), Param("bool"), Param("rate")
COUNT = Param("count", low=1)
ALPHA = Param("count", low=0, high=32)  # pie's alpha and beta: 0-32 (in units of 1/8)
FLOWMODES = ("flowblind", "srchost", "dsthost", "hosts", "flows", "dual_srchost", "dual_dsthost", "triple_isolate")
DIFFSERV = ("besteffort", "diffserv3", "diffserv4", "diffserv8", "precedence")

PARAMS: dict[str, dict[str, Param]] = {
    "fifo": {},
    "fq_codel": {"limit": PACKETS, "flows": COUNT, "target": TIME, "interval": TIME, "quantum": BYTES,
                 "memory_limit": BYTES, "ce_threshold": TIME, "drop_batch": COUNT, "ecn": BOOL},
    "codel": {"limit": PACKETS, "target": TIME, "interval": TIME, "ce_threshold": TIME, "ecn": BOOL},
    "fq": {"limit": PACKETS, "flow_limit": PACKETS, "quantum": BYTES, "initial_quantum": BYTES, "maxrate": RATE,
           "buckets": COUNT, "pacing": BOOL, "ce_threshold": TIME, "horizon": TIME},
    "pie": {"limit": PACKETS, "target": TIME, "tupdate": TIME, "alpha": ALPHA, "beta": ALPHA, "ecn": BOOL,
            "bytemode": BOOL, "dq_rate_estimator": BOOL},
    "fq_pie": {"limit": PACKETS, "flows": COUNT, "target": TIME, "tupdate": TIME, "alpha": ALPHA, "beta": ALPHA,
               "quantum": BYTES, "memory_limit": BYTES, "ecn_prob": Param("count", low=0, high=100), "ecn": BOOL,
               "bytemode": BOOL, "dq_rate_estimator": BOOL},
    "cake": {"rtt": TIME, "diffserv": Param("choice", DIFFSERV), "flowmode": Param("choice", FLOWMODES),
             "nat": BOOL, "wash": BOOL, "ack_filter": Param("choice", ("off", "on", "aggressive")),
             "split_gso": BOOL, "memlimit": BYTES, "ecn": BOOL},
    # min and max are queue depths written like `queue:` (a time, bytes at the written rate, or
    # packets), turned into bytes at the scaled rate; probability is max_p (0-1).
    "red": {"min": Param("threshold"), "max": Param("threshold"), "avpkt": BYTES, "burst": COUNT,
            "probability": Param("probability", low=0, high=1), "ecn": BOOL, "harddrop": BOOL, "adaptive": BOOL},
}
CAN_MARK = ("fq_codel", "codel", "pie", "fq_pie", "red", "cake")
# Disciplines whose limit counts packets (the queue's byte bound is turned into MTU frames).
PACKET_LIMITED = ("fq_codel", "codel", "fq", "pie", "fq_pie")


def parse_value(p: Param, value: Any) -> Any:
    """A written value -> what the model keeps (seconds, bytes, bit/s, ...); ValueError says why not."""
    if p.kind == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"expected true or false, got {value!r}")
        return value
    if p.kind == "time":
        return units.parse_time(value)
    if p.kind == "bytes":
        return units.parse_size(value)
    if p.kind == "rate":
        return units.parse_rate(value)
    if p.kind == "threshold":
        return units.parse_queue(value)
    if p.kind == "choice":
        text = str(value).replace("-", "_")
        if text not in p.choices:
            raise ValueError(f"unknown value {value!r} (valid: {', '.join(p.choices)})")
        return text
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected a number, got {value!r}")
    if p.kind in ("packets", "count") and value != int(value):
        raise ValueError(f"expected a whole number, got {value!r}")
    low = p.low if p.low is not None else (1 if p.kind == "packets" else None)
    if low is not None and value < low or p.high is not None and value > p.high:
        span = f"{low:g}-{p.high:g}" if p.high is not None else f"at least {low:g}"
        raise ValueError(f"out of range ({span}), got {value!r}")
    return int(value) if p.kind in ("packets", "count") else float(value)


def problems(aqm: str | None, params: dict[str, Any] | None) -> list[tuple[tuple, str]]:
    """(key path below aqm_params, message) for every parameter `aqm` does not take or whose value
    it cannot use. `aqm` None: the FIFO (linklab's default). Pure."""
    aqm = aqm or "fifo"
    out: list[tuple[tuple, str]] = []
    valid = PARAMS.get(aqm, {})
    for key, value in (params or {}).items():
        p = valid.get(key)
        if key == "ecn" and aqm not in CAN_MARK:
            if value is not False:
                out.append(((key,), f"{aqm} cannot mark ECN, only drop (disciplines that mark: {', '.join(CAN_MARK)})"))
            continue
        if p is None:
            takes = f"valid: {', '.join(valid)}" if valid else "it takes none: its bound is queue:"
            out.append(((key,), f"unknown {aqm} parameter {key!r} ({takes})"))
            continue
        try:
            parse_value(p, value)
        except ValueError as e:
            out.append(((key,), f"{aqm} {key}: {e}"))
            continue
        if key == "ecn" and value is False and aqm == "cake":
            out.append(((key,), "cake always marks ECN-capable packets; it has no switch to drop them instead"))
    return out


def parsed(aqm: str, params: dict[str, Any]) -> dict[str, Any]:
    """The written parameters in the model's units (valid ones: problems() was empty). Pure."""
    return {k: parse_value(PARAMS[aqm][k], v) for k, v in params.items() if k in PARAMS[aqm]}  # fq's ecn: false: nothing


def resolved_params(aqm: str, written: dict[str, Any], *, rate_bps: float | None, scale: float,
                    queue_bytes: int | None, mtu: int) -> dict[str, Any]:
    """What tc is told for `aqm` on a direction shaped to `rate_bps` (scaled; None: no shaper)
    whose queue bound is `queue_bytes` (linklab/model/queues.py; None: no rate to size it).

    The time bound becomes each discipline's own limit, unless `limit` is written:
      fq_codel, codel, fq, pie, fq_pie  count packets: limit = the bound in MTU-sized frames. The
                     discipline's target keeps its standing queue far below; the limit binds for
                     traffic that does not back off. A GSO packet counts as one, so a host sending
                     super-packets can hold more bytes than the bound (the FIFO counts bytes).
      cake           memlimit = the bound in bytes (cake counts the memory its packets take, a
                     little above their length, so it holds a little less than the FIFO would).
      red            limit = the bound in bytes (red's hard limit); avpkt = one MTU frame;
                     bandwidth = the rate (red's idle-time estimate); min/max written like
                     `queue:` become bytes at the scaled rate, unset they are tc's (max = limit/4,
                     min = max/3).
    ecn is written out for every discipline that can mark (false unless asked: module text).
    Pure."""
    out = parsed(aqm, written)
    frame = frame_bytes(mtu)
    if aqm in PACKET_LIMITED and "limit" not in out and queue_bytes:
        out["limit"] = max(2, math.ceil(queue_bytes / frame))
    if aqm == "cake" and "memlimit" not in out and queue_bytes:
        out["memlimit"] = queue_bytes
    if aqm == "red":
        if queue_bytes:
            out["limit"] = queue_bytes
        out.setdefault("avpkt", frame)
        if rate_bps:
            out["bandwidth"] = rate_bps
        for key in ("min", "max"):
            if key in out:
                out[key] = threshold_bytes(out[key], (rate_bps or 0.0) / scale, scale, mtu)
    if aqm in CAN_MARK and aqm != "cake":
        out.setdefault("ecn", False)
    return dict(sorted(out.items()))


def threshold_bytes(spec: tuple[str, float], written_rate_bps: float, scale: float, mtu: int) -> int:
    """A red threshold written like `queue:` -> bytes at the scaled rate (a time means the same
    at every scale; bytes and packets are at the written rate, scaled with it). Pure."""
    kind, value = spec
    if kind == "time":
        return max(1, int(round(value * written_rate_bps * scale / 8)))
    nbytes = value if kind == "bytes" else value * frame_bytes(mtu)
    return max(1, int(round(nbytes * scale)))


def rate_problem(aqm: str, params: dict[str, Any], shaper: str | None, has_rate: bool) -> str | None:
    """Why `aqm` cannot sit on a direction with this shaper and rate (None: it can). Pure."""
    if aqm == "fifo":
        return None
    if shaper == "netem" and has_rate:
        return (f"{aqm} needs the htb or tbf shaper: netem's rate holds the queue inside netem, where no "
                "discipline under it sees one (remove shaper: netem)")
    if aqm == "red" and not has_rate:
        return "red needs a rate: its thresholds and idle-time estimate are sized from it"
    if aqm == "red" and "max" in params and "min" in params:
        lo, hi = (units.parse_queue(params[k]) for k in ("min", "max"))
        if lo[0] == hi[0] and lo[1] >= hi[1]:
            return "red's min must be below its max"
    return None
