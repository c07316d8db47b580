"""What the kernel reports of a lab's queue disciplines: `tc -s -j qdisc show` parsed (pure),
and read from a namespace (one tc process).

tc, not netlink: the options and extended statistics of pie, fq_pie, fq, red (absent from
pyroute2 0.9.7) and cake (nested per-tin statistics) are decoded by iproute2 into JSON whose
keys are the kernel's names (iproute2's tc/q_*.c: print_*(PRINT_JSON, ...)); times there are
in microseconds. The window's sampler (linklab/measure/probes/queues.py) reads its counters over
raw netlink instead: a tc process ten times a second would cost a core under emulation.

A report per qdisc:
  kind, dev, handle, parent ("root" or the parent's handle)
  options     as the kernel reports them, times in seconds where iproute2 gives microseconds
  bytes, packets, drops, overlimits, requeues, backlog_bytes, backlog_pkts   (tc -s)
  marks       packets ECN-marked instead of dropped (fq_codel, codel, pie, fq_pie: ecn_mark;
              red: marked; cake: its tins' ecn_mark; fq: ce_mark), None where not reported
  delay_s     the queue's sojourn or delay where the discipline reports one (codel: ldelay, the
              last packet's sojourn; pie: its delay estimate; cake: the largest of its tins'
              average delay), None otherwise (fq_codel reports it per flow only)
"""

from __future__ import annotations

import json
from typing import Any

from linklab import runner

# Option keys iproute2 prints in microseconds in JSON (tc/q_fq_codel.c, q_codel.c, q_pie.c,
# q_fq_pie.c, q_fq.c, q_cake.c).
TIME_OPTIONS_US = ("target", "interval", "ce_threshold", "tupdate", "rtt", "horizon", "refill_delay")
AQM_KINDS = ("fq_codel", "codel", "fq", "pie", "fq_pie", "cake", "red")
MARK_KEY = {"fq_codel": "ecn_mark", "codel": "ecn_mark", "pie": "ecn_mark", "fq_pie": "ecn_mark", "red": "marked",
            "fq": "ce_mark"}
DELAY_KEY_US = {"codel": "ldelay", "pie": "delay"}


def _number(v: Any) -> int | None:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def report(q: dict[str, Any]) -> dict[str, Any]:
    """One qdisc of tc's JSON -> its report (the module's text). Pure."""
    kind = q.get("kind")
    options = dict(q.get("options") or {})
    for key in TIME_OPTIONS_US:
        if _number(options.get(key)) is not None:
            options[key] = options[key] / 1e6
    out: dict[str, Any] = {"kind": kind, "dev": q.get("dev"), "handle": q.get("handle"),
                           "parent": "root" if q.get("root") else q.get("parent"), "options": options}
    for key in ("bytes", "packets", "drops", "overlimits", "requeues"):
        out[key] = _number(q.get(key))
    out["backlog_bytes"], out["backlog_pkts"] = _number(q.get("backlog")), _number(q.get("qlen"))
    tins = q.get("tins") if isinstance(q.get("tins"), list) else []
    if kind == "cake":
        out["marks"] = sum(_number(t.get("ecn_mark")) or 0 for t in tins) if tins else None
        delays = [_number(t.get("avg_delay_us")) for t in tins]
        out["delay_s"] = max(d for d in delays if d is not None) / 1e6 if any(d is not None for d in delays) else None
    else:
        out["marks"] = _number(q.get(MARK_KEY[kind])) if kind in MARK_KEY else None
        delay = _number(q.get(DELAY_KEY_US[kind])) if kind in DELAY_KEY_US else None
        out["delay_s"] = delay / 1e6 if delay is not None else None
    return out


def parse(text: str) -> list[dict[str, Any]]:
    """`tc -s -j qdisc show` -> a report per qdisc, in tc's order. Pure."""
    data = json.loads(text or "[]")
    if not isinstance(data, list):
        raise ValueError("tc -j qdisc show printed no list")
    return [report(q) for q in data if isinstance(q, dict) and q.get("kind")]


def read(netns: str) -> list[dict[str, Any]]:
    """Every qdisc of namespace `netns`, as the kernel reports it (tc's own -n enters it)."""
    return parse(runner.run(["tc", "-n", netns, "-s", "-j", "qdisc", "show"], timeout=10).stdout)


def summary(rep: dict[str, Any]) -> str:
    """One line for `linklab status`: the kind and what it was built with. Pure."""
    opts = rep["options"]
    bits = [rep["kind"]]
    for key, value in opts.items():
        if isinstance(value, bool) or value is None:
            if value is not False:
                bits.append(key)
        elif isinstance(value, float) and key in TIME_OPTIONS_US:
            bits.append(f"{key} {value * 1e3:g}ms")
        elif isinstance(value, (int, float, str)):
            bits.append(f"{key} {value}")
    return " ".join(bits)
