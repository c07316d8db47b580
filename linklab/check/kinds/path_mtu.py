"""path_mtu: the path from one host to another carries packets of `mtu` bytes without
fragmenting, and refuses one byte more: proved with don't-fragment pings (ping -M do). Packets
of `mtu` bytes must get `need` of `count` replies (bursts retried until `timeout`, as reach
does); packets of mtu + 1 bytes must get no reply to two bursts, refused (ICMP fragmentation
needed / packet too big, or the sender's own route) or dropped silently (a switch port with a
smaller MTU sends no ICMP). Sizes are IP packet sizes: the payload is mtu less the IP and ICMP
headers (linklab/model/paths.py: 28 bytes for IPv4, 48 for IPv6).

    - {id: path-mtu, kind: path_mtu, from: h1, to: h2, mtu: 9000}
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from linklab import units
from linklab.check.kinds.base import FAIL, PASS, Check, Context, Judgement, Kind, node_problem, ping_target
from linklab.measure.ping import Ping, PingError, PingResult, parse_ping
from linklab.model import paths
from linklab.model.resolved import Lab

INTERVAL_S = 0.1
WAIT_S = 1.0
REFUSED_BURSTS = 2


class Params(Check):
    src: Annotated[str, Field(alias="from")]
    dst: Annotated[str, Field(alias="to")]
    mtu: Annotated[int, Field(ge=68, le=65535)]
    family: Literal[4, 6] = 4
    count: Annotated[int, Field(ge=1, le=100)] = 5
    need: Annotated[int, Field(ge=1, le=100)] = 2
    timeout: Annotated[float, BeforeValidator(units.parse_time), Field(gt=0, le=600)] = 15.0

    @model_validator(mode="after")
    def _sizes(self):
        if self.need > self.count:
            raise ValueError(f"need {self.need} replies of a burst of count {self.count}: need must be at most count")
        if self.mtu - paths.headers(self.family, "icmp") < 0 or (self.family == 6 and self.mtu < 1280):
            raise ValueError(f"an IPv{self.family} path MTU of {self.mtu} cannot be probed "
                             f"({'IPv6 needs at least 1280' if self.family == 6 else 'below the header size'})")
        return self


def probe(p: Params, lab: Lab, size: int) -> Ping:
    return Ping(target=ping_target(lab, p.dst, p.family), count=p.count, interval=INTERVAL_S, wait=WAIT_S,
                size=size - paths.headers(p.family, "icmp"), dont_fragment=True, family=p.family)


def _parse(b: dict[str, str]) -> PingResult | str:
    try:
        return parse_ping(b.get("stdout", ""), b.get("stderr", ""))
    except PingError as e:
        return str(e)


def describe(results: list[PingResult | str], count: int) -> str:
    """'3/5' or '0/5, 0/5: frag needed (mtu 1500)' — what bursts of one size got."""
    got = "/".join(f"{r.received}" if isinstance(r, PingResult) else "0" for r in results) + f" of {count}"
    why = []
    for r in results:
        if isinstance(r, str):
            why.append(r)
        elif r.too_big:
            kinds = {e.kind for e in r.error_replies if e.kind in ("frag_needed", "packet_too_big", "local_too_big")}
            why.append(f"refused: {', '.join(sorted(k.replace('_', ' ') for k in kinds))}" + (f" (mtu {r.mtu})" if r.mtu else ""))
        elif r.received == 0:
            why.append("no reply, no ICMP: dropped silently")
    return got + (f", {'; '.join(dict.fromkeys(why))}" if why else "")


class PathMtu(Kind):
    name = "path_mtu"
    Params = Params
    summary = "a path's MTU proved with don't-fragment pings: mtu bytes pass, mtu + 1 are refused"

    def problems(self, p: Params, lab: Lab) -> list[tuple[tuple, str]]:
        out = node_problem(lab, p.src, ("from",), "host") + node_problem(lab, p.dst, ("to",), "host")
        if not out and p.src == p.dst:
            out.append((("to",), "from: and to: are the same node"))
        return out

    def expected(self, p: Params, lab: Lab) -> str:
        return f"{p.src} -> {p.dst}: {p.mtu} B pass (>= {p.need}/{p.count}), {p.mtu + 1} B refused"

    def observe(self, p: Params, ctx: Context) -> dict[str, Any]:
        fits: list[dict[str, str]] = []
        t0 = time.monotonic()
        argv = probe(p, ctx.lab, p.mtu).argv()
        while True:
            res = ctx.run(p.src, argv, timeout=p.count * INTERVAL_S + WAIT_S + 15)
            fits.append({"stdout": res.stdout, "stderr": res.stderr})
            r = _parse(fits[-1])
            if (isinstance(r, PingResult) and r.received >= p.need) or time.monotonic() - t0 >= p.timeout:
                break
        over = [ctx.run(p.src, probe(p, ctx.lab, p.mtu + 1).argv(), timeout=p.count * INTERVAL_S + WAIT_S + 15)
                for _ in range(REFUSED_BURSTS)]
        return {"fits": fits, "over": [{"stdout": r.stdout, "stderr": r.stderr} for r in over]}

    def judge(self, p: Params, raw: dict[str, Any], lab: Lab) -> Judgement:
        fits = [_parse(b) for b in raw.get("fits", [])]
        over = [_parse(b) for b in raw.get("over", [])]
        passes = any(isinstance(r, PingResult) and r.received >= p.need for r in fits)
        refused = bool(over) and all(not isinstance(r, PingResult) or r.received == 0 for r in over)
        shown = f"{p.mtu} B: {describe(fits, p.count)}; {p.mtu + 1} B: {describe(over, p.count)}"
        wrong = ([] if passes else [f"{p.mtu}-byte packets do not pass"]) + \
                ([] if refused else [f"{p.mtu + 1}-byte packets pass: the path MTU is larger"])
        learned = [r.mtu for r in fits + over if isinstance(r, PingResult) and r.mtu]
        return Judgement(PASS if not wrong else FAIL, shown, "; ".join(wrong),
                         {"passes": passes, "refused": refused, "icmp_mtu": min(learned) if learned else None})
