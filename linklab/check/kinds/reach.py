"""reach: a reachability matrix, loss-aware. Every pair (a node of `from`, a node or address of
`to`) is probed in bursts of `count` pings; a pair reaches when one burst gets `need` replies,
and bursts are sent until one does or `timeout` has passed and at least three were sent (never
one ping: one lost reply is not a broken path). `expect: unreachable` pairs must get no reply to two
bursts.

Why these defaults (count 10, need 3): under 20 % loss each way a probe's round trip succeeds
with p = 0.64, and a burst gets fewer than 3 replies with probability 0.0059; three bursts in a
row fail with 2e-7. Those odds rest on the number of bursts, not on time: on a busy or emulated
machine a burst can take several seconds (a learning controller's first packets, a slow fork),
so a timeout never ends the probing of a pair before its third burst. A path that is cut gets no
reply at all, while a working one at 20 % loss each way gets none of 20 probes with 1.3e-9.

    - {id: reach, kind: reach, from: [h1, h2], to: [h2, h3]}
    - {id: isolated, kind: reach, from: guest, to: [server], expect: unreachable}
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from linklab import runner, units
from linklab.check.kinds.base import FAIL, PASS, UNREACHABLE, Check, Context, Judgement, Kind, as_list, node_problem, ping_target
from linklab.measure.ping import Ping, PingError, PingResult, parse_ping
from linklab.model.resolved import Lab

INTERVAL_S = 0.1
WAIT_S = 1.0
UNREACHABLE_BURSTS = 2
MIN_BURSTS = 3  # before a timeout ends a reachable pair's probing (the odds above)

Names = str | list[str]


class Params(Check):
    src: Annotated[Names, Field(alias="from")]
    dst: Annotated[Names, Field(alias="to")]
    expect: Literal["reachable", "unreachable"] = "reachable"
    count: Annotated[int, Field(ge=1, le=100)] = 10
    need: Annotated[int, Field(ge=1, le=100)] = 3
    timeout: Annotated[float, BeforeValidator(units.parse_time), Field(gt=0, le=600)] = 15.0
    family: Literal[4, 6] = 4

    @model_validator(mode="after")
    def _need(self):
        if self.need > self.count:
            raise ValueError(f"need {self.need} replies of a burst of count {self.count}: need must be at most count")
        return self


def pairs(p: Params) -> list[tuple[str, str]]:
    return [(a, b) for a in as_list(p.src) for b in as_list(p.dst) if a != b]


def burst(p: Params, lab: Lab, dst: str) -> Ping:
    return Ping(target=ping_target(lab, dst, p.family), count=p.count, interval=INTERVAL_S, wait=WAIT_S,
                family=p.family)


def parse_burst(text: dict[str, str]) -> PingResult | str:
    """One burst's output -> its result, or why ping could not send (unknown name, no route)."""
    try:
        return parse_ping(text.get("stdout", ""), text.get("stderr", ""))
    except PingError as e:
        return str(e)


def pair_outcome(p: Params, bursts: list[dict[str, str]]) -> tuple[bool, str]:
    """(reached?, in words) for one pair from its bursts' output. Pure."""
    results = [parse_burst(b) for b in bursts]
    got = [r.received if isinstance(r, PingResult) else 0 for r in results]
    sent = sum(r.transmitted for r in results if isinstance(r, PingResult))
    errors = sorted({r for r in results if isinstance(r, str)})
    reached = any(g >= p.need for g in got) if p.expect == "reachable" else sum(got) > 0
    words = f"{'/'.join(map(str, got))} of {p.count}" + (f" ({sent} sent)" if len(got) > 1 else "")
    if errors:
        words += f" [{'; '.join(errors)}]"
    return reached, words


class Reach(Kind):
    name = "reach"
    Params = Params
    negation = UNREACHABLE
    summary = "a reachability matrix, loss-aware (k of n replies, retried until a timeout); or must not reach"

    def problems(self, p: Params, lab: Lab) -> list[tuple[tuple, str]]:
        out = []
        for i, a in enumerate(as_list(p.src)):
            loc = ("from",) if isinstance(p.src, str) else ("from", i)
            out += node_problem(lab, a, loc, "host")
        names = {n.name for n in lab.nodes}
        for i, b in enumerate(as_list(p.dst)):
            loc = ("to",) if isinstance(p.dst, str) else ("to", i)
            if b not in names and not runner.is_address(b):
                out += node_problem(lab, b, loc, "host")
        if not out and not pairs(p):
            out.append((("to",), "no pair to probe: every node of to: is the node of from:"))
        return out

    def expected(self, p: Params, lab: Lab) -> str:
        how = (f">= {p.need} of {p.count} replies within {units.format_time(p.timeout)}" if p.expect == "reachable"
               else f"no reply to {UNREACHABLE_BURSTS}x{p.count} probes")
        return f"{', '.join(as_list(p.src))} -> {', '.join(as_list(p.dst))} {p.expect} ({how})"

    def observe(self, p: Params, ctx: Context) -> dict[str, Any]:
        def probe(pair: tuple[str, str]) -> list[dict[str, str]]:
            src, dst = pair
            argv = burst(p, ctx.lab, dst).argv()
            out: list[dict[str, str]] = []
            t0 = time.monotonic()
            while True:
                res = ctx.run(src, argv, timeout=p.count * INTERVAL_S + WAIT_S + 15)
                out.append({"stdout": res.stdout, "stderr": res.stderr})
                if p.expect == "unreachable":
                    if len(out) >= UNREACHABLE_BURSTS:
                        return out
                elif pair_outcome(p, out[-1:])[0] or (time.monotonic() - t0 >= p.timeout and len(out) >= MIN_BURSTS):
                    return out

        todo = pairs(p)
        with ThreadPoolExecutor(max_workers=min(8, len(todo))) as pool:
            return {f"{a}->{b}": got for (a, b), got in zip(todo, pool.map(probe, todo))}

    def judge(self, p: Params, raw: dict[str, Any], lab: Lab) -> Judgement:
        """One verdict per pair (in the values and the detail), and the check's: pass when every
        pair passes (its points are one verdict's)."""
        verdicts: dict[str, dict[str, Any]] = {}
        shown = []
        for a, b in pairs(p):
            reached, words = pair_outcome(p, raw.get(f"{a}->{b}", []))
            ok = reached == (p.expect == "reachable")
            verdicts[f"{a}->{b}"] = {"verdict": PASS if ok else FAIL, "reached": reached, "replies": words}
            shown.append(f"{a}->{b} {words}")
        detail = "; ".join(f"{pair} {v['verdict']}" + ("" if v["verdict"] == PASS else
                           f": {'unreachable' if p.expect == 'reachable' else 'reached'}")
                           for pair, v in verdicts.items())
        wrong = any(v["verdict"] == FAIL for v in verdicts.values())
        return Judgement(FAIL if wrong else PASS, "; ".join(shown), detail, {"pairs": verdicts})
