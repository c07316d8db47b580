"""path: the routers a packet from one node to another crosses, as traceroute shows them (each
router answers from the address it received the probe on): `hops:` lists them in order, each a
node's name or an address, or a list of alternatives where a multipath route spreads the probes
(`[r1, r2]`: every answer at that hop is from r1 or r2). The destination's own answer ends the
trace and is not a hop; a path with no router is `hops: []`.

A router that does not answer (its ICMP errors are rate limited: 1 per second per peer by default,
after a burst) leaves its hop unknown: the trace is repeated (`attempts`), and a path whose every
answered hop fits but one stayed silent is inconclusive, not failed.

    - {id: via-r1, kind: path, from: h1, to: h2, hops: [r1, r3]}
    - {id: ecmp, kind: path, from: h1, to: h4, hops: [[r1, r2], r3]}
"""

from __future__ import annotations

import ipaddress
from typing import Annotated, Any, Literal

from pydantic import Field

from linklab import runner
from linklab.check.kinds.base import (FAIL, INCONCLUSIVE, PASS, Check, Context, Judgement, Kind, as_list,
                                      node_addresses, node_problem, ping_target)
from linklab.measure.traceroute import Trace, Traceroute, TracerouteError, parse_traceroute
from linklab.model.resolved import Lab


class Params(Check):
    src: Annotated[str, Field(alias="from")]
    dst: Annotated[str, Field(alias="to")]
    hops: list[str | list[str]]
    family: Literal[4, 6] = 4
    max_hops: Annotated[int, Field(ge=1, le=64)] = 16
    attempts: Annotated[int, Field(ge=1, le=10)] = 3  # traces, until one reaches and every router answered


def tool(p: Params, lab: Lab) -> Traceroute:
    return Traceroute(target=ping_target(lab, p.dst, p.family), family=p.family, max_hops=p.max_hops)


def who(lab: Lab) -> dict[str, str]:
    """{address: node} for every address of the lab, to show a trace in names."""
    return {a: n.name for n in lab.nodes for a in node_addresses(lab, n.name)}


def allowed(lab: Lab, hop: str | list[str]) -> set[str]:
    """The addresses that may answer at one hop: every address of each node named, or the address."""
    return {str(ipaddress.ip_address(h)) if runner.is_address(h) else a
            for h in as_list(hop) for a in ([h] if runner.is_address(h) else node_addresses(lab, h))}


def complete(trace: Trace) -> bool:
    """Reached, and every router on the way answered."""
    return trace.reached and all(h.addresses for h in trace.hops[:-1])


def parse(out: dict[str, str]) -> Trace | str:
    try:
        return parse_traceroute(out.get("stdout", ""), out.get("stderr", ""))
    except TracerouteError as e:
        return str(e)


def shown(trace: Trace, names: dict[str, str]) -> str:
    """'r1 (10.0.1.2), r3 (10.0.3.1) -> h2' — a trace in the lab's names."""
    def one(hop) -> str:
        if not hop.addresses:
            return "*"
        words = "|".join(f"{names.get(a, '?')} ({a})" for a in hop.addresses)
        return words + (f" {' '.join(hop.flags)}" if hop.flags else "")
    routers = trace.hops[:-1] if trace.reached else trace.hops
    end = f" -> {names.get(trace.target, trace.target)}" if trace.reached else f" -/-> {trace.target} (not reached)"
    return (", ".join(one(h) for h in routers) or "no router") + end


def compare(p: Params, lab: Lab, trace: Trace) -> tuple[str, str]:
    """(verdict, why) for one trace. Pure."""
    if not trace.reached:
        return FAIL, f"{trace.target} did not answer within {trace.max_hops} hops"
    routers = trace.hops[:-1]
    if len(routers) != len(p.hops):
        return FAIL, f"{len(routers)} router(s) on the way, not {len(p.hops)}"
    wrong, silent = [], []
    for i, (hop, want) in enumerate(zip(routers, p.hops), start=1):
        if not hop.addresses:
            silent.append(str(i))
        elif not set(hop.addresses) <= allowed(lab, want):
            wrong.append(f"hop {i} is not {'|'.join(as_list(want))}")
    if wrong:
        return FAIL, "; ".join(wrong)
    if silent:
        return INCONCLUSIVE, f"hop {', '.join(silent)} did not answer (ICMP rate limited?)"
    return PASS, ""


class Path(Kind):
    name = "path"
    Params = Params
    summary = "the routers a packet crosses from a node to another, as traceroute shows them"

    def problems(self, p: Params, lab: Lab) -> list[tuple[tuple, str]]:
        out = node_problem(lab, p.src, ("from",))
        if not runner.is_address(p.dst):
            out += node_problem(lab, p.dst, ("to",))
        for i, hop in enumerate(p.hops):
            for j, h in enumerate(as_list(hop)):
                if not runner.is_address(h):
                    out += node_problem(lab, h, ("hops", i) if isinstance(hop, str) else ("hops", i, j))
        return out

    def expected(self, p: Params, lab: Lab) -> str:
        via = ", ".join("|".join(as_list(h)) for h in p.hops) or "no router"
        return f"{p.src} -> {p.dst} through {via}"

    def observe(self, p: Params, ctx: Context) -> dict[str, Any]:
        t = tool(p, ctx.lab)
        traces = []
        for _ in range(p.attempts):
            res = ctx.run(p.src, t.argv(), timeout=p.max_hops * t.queries * t.wait + 15)
            traces.append({"stdout": res.stdout, "stderr": res.stderr})
            got = parse(traces[-1])
            # Done: traceroute could not trace, every router answered, or one said the path ends.
            if isinstance(got, str) or complete(got) or any(h.flags for h in got.hops):
                break
        return {"traces": traces}

    def judge(self, p: Params, raw: dict[str, Any], lab: Lab) -> Judgement:
        traces = [parse(t) for t in raw.get("traces", [])]
        if not traces:
            return Judgement(FAIL, "no trace")
        last = traces[-1]
        if isinstance(last, str):
            return Judgement(FAIL, last)
        # The first complete trace is the one judged; none complete: the last one.
        trace = next((t for t in traces if isinstance(t, Trace) and complete(t)), last)
        verdict, why = compare(p, lab, trace)
        return Judgement(verdict, shown(trace, who(lab)), why,
                         {"hops": [list(h.addresses) for h in trace.hops], "reached": trace.reached,
                          "traces": len(traces)})
