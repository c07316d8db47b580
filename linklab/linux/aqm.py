"""A queue discipline's tc arguments, one pure function per discipline (linklab/model/aqm.py
says what each takes and how the model's values were decided).

tc, not pyroute2: pyroute2 0.9.7 has no pie, fq_pie, fq or red modules at all (its
netlink/rtnl/tcmsg/ has codel, fq_codel and cake), and linklab builds every qdisc of an
interface in one `tc -batch` process already (linklab/linux/tc.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _us(seconds: float) -> str:
    return f"{int(round(seconds * 1e6))}us"


def _bit(bps: float) -> str:
    return f"{int(round(bps))}bit"


def _flag(on: bool, yes: str, no: str) -> list[str]:
    return [yes if on else no]


def _numbers(p: dict[str, Any], keys: tuple[str, ...], times: tuple[str, ...] = ()) -> list[str]:
    """`key value` for each of `keys` present, in that order; `times` in microseconds."""
    out: list[str] = []
    for k in keys:
        if k in p:
            out += [k, _us(p[k]) if k in times else str(p[k])]
    return out


def fq_codel(p: dict[str, Any]) -> list[str]:
    args = _numbers(p, ("limit", "flows", "target", "interval", "quantum", "memory_limit", "ce_threshold",
                        "drop_batch"), times=("target", "interval", "ce_threshold"))
    return [*args, *_flag(p.get("ecn", False), "ecn", "noecn")]


def codel(p: dict[str, Any]) -> list[str]:
    args = _numbers(p, ("limit", "target", "interval", "ce_threshold"), times=("target", "interval", "ce_threshold"))
    return [*args, *_flag(p.get("ecn", False), "ecn", "noecn")]


def fq(p: dict[str, Any]) -> list[str]:
    args = _numbers(p, ("limit", "flow_limit", "quantum", "initial_quantum", "buckets", "ce_threshold", "horizon"),
                    times=("ce_threshold", "horizon"))
    if "maxrate" in p:
        args += ["maxrate", _bit(p["maxrate"])]
    if "pacing" in p:
        args += _flag(p["pacing"], "pacing", "nopacing")
    return args


def _pie_flags(p: dict[str, Any]) -> list[str]:
    """The switches pie and fq_pie share."""
    args = _flag(p.get("ecn", False), "ecn", "noecn")
    if "bytemode" in p:
        args += _flag(p["bytemode"], "bytemode", "nobytemode")
    if "dq_rate_estimator" in p:
        args += _flag(p["dq_rate_estimator"], "dq_rate_estimator", "no_dq_rate_estimator")
    return args


def pie(p: dict[str, Any]) -> list[str]:
    return [*_numbers(p, ("limit", "target", "tupdate", "alpha", "beta"), times=("target", "tupdate")), *_pie_flags(p)]


def fq_pie(p: dict[str, Any]) -> list[str]:
    args = _numbers(p, ("limit", "flows", "target", "tupdate", "alpha", "beta", "quantum", "memory_limit", "ecn_prob"),
                    times=("target", "tupdate"))
    return [*args, *_pie_flags(p)]


def cake(p: dict[str, Any]) -> list[str]:
    # `unlimited`: htb above it shapes (linklab/model/aqm.py says why its own shaper is not used).
    args = ["unlimited"]
    if "rtt" in p:
        args += ["rtt", _us(p["rtt"])]
    if "diffserv" in p:
        args.append(p["diffserv"])
    if "flowmode" in p:
        args.append(p["flowmode"].replace("_", "-"))
    if "nat" in p:
        args += _flag(p["nat"], "nat", "nonat")
    if "wash" in p:
        args += _flag(p["wash"], "wash", "nowash")
    if "ack_filter" in p:
        args.append({"off": "no-ack-filter", "on": "ack-filter", "aggressive": "ack-filter-aggressive"}[p["ack_filter"]])
    if "split_gso" in p:
        args += _flag(p["split_gso"], "split-gso", "no-split-gso")
    if "memlimit" in p:
        args += ["memlimit", str(p["memlimit"])]
    return args


def red(p: dict[str, Any]) -> list[str]:
    args = _numbers(p, ("limit", "min", "max", "avpkt", "burst"))
    if "probability" in p:
        args += ["probability", f"{p['probability']:g}"]
    if "bandwidth" in p:
        args += ["bandwidth", _bit(p["bandwidth"])]
    return args + [flag for flag in ("ecn", "harddrop", "adaptive") if p.get(flag)]


ARGS: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "fq_codel": fq_codel, "codel": codel, "fq": fq, "pie": pie, "fq_pie": fq_pie, "cake": cake, "red": red,
}


def args(name: str, params: dict[str, Any]) -> list[str]:
    """`name` and its arguments, as they follow `tc qdisc add dev D parent P handle H`. Pure."""
    return [name, *ARGS[name](params)]
