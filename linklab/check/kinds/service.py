"""service: a service answers, asked from a node: a TCP port accepts a connection (`tcp: PORT`),
an HTTP request gets a status (`status:`, 200) and a body matching a regular expression
(`body:`) (`http: PORT`, `http: /path` on port 80, or `http: PORT/path`), a DNS name resolves
(`dns: NAME`) to an address (`address:` an address or a node's name: any of its addresses; none
given: any answer), asked of a DNS server (`server:` a node or an address; none: the node's own
resolver, i.e. its hosts file). `expect: unreachable`: the service must not answer (no
connection, no HTTP response, no address) to two probes.

A probe that fails is repeated (`attempts`, 3) so that one lost packet is not a verdict; each
waits `timeout` (5 s). The probe is python3's standard library (service_probe.py says why).

    - {id: web, kind: service, from: h1, to: srv, http: 8080, status: 200, body: "hello"}
    - {id: ssh-closed, kind: service, from: guest, to: srv, tcp: 22, expect: unreachable}
    - {id: dns, kind: service, from: h1, dns: www.lab, server: ns1, address: srv}
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from linklab import runner, units
from linklab.check.kinds import service_probe
from linklab.check.kinds.base import (FAIL, PASS, UNREACHABLE, Check, Context, Judgement, Kind, Regex, node_addresses,
                                      node_problem, ping_target)
from linklab.model.resolved import Lab

UNREACHABLE_PROBES = 2
MODES = ("tcp", "http", "dns")
_HTTP = re.compile(r"(?P<port>\d+)?(?P<path>/\S*)?")


class Params(Check):
    src: Annotated[str, Field(alias="from")]
    dst: Annotated[str | None, Field(alias="to")] = None
    tcp: Annotated[int, Field(ge=1, le=65535)] | None = None
    http: int | str | None = None
    status: Annotated[int, Field(ge=100, le=599)] = 200
    body: Regex | None = None
    dns: str | None = None
    server: str | None = None
    address: str | None = None
    family: Literal[4, 6] = 4
    expect: Literal["reachable", "unreachable"] = "reachable"
    timeout: Annotated[float, BeforeValidator(units.parse_time), Field(gt=0, le=60)] = 5.0
    attempts: Annotated[int, Field(ge=1, le=10)] = 3

    @field_validator("http")
    @classmethod
    def _http(cls, v):
        if v is not None and not (isinstance(v, int) and 0 < v < 65536) and not (
                isinstance(v, str) and v and _HTTP.fullmatch(v)):
            raise ValueError(f"http: a port (8080), a path (/index.html) or both (8080/index.html), not {v!r}")
        return v

    @model_validator(mode="after")
    def _one_question(self):
        asked = [m for m in MODES if getattr(self, m) is not None]
        if len(asked) != 1:
            raise ValueError(f"give one of {', '.join(f'{m}:' for m in MODES)} (the service asked)"
                             + (f", not {len(asked)}: {', '.join(asked)}" if asked else ""))
        mode = asked[0]
        if mode in ("tcp", "http") and self.dst is None:
            raise ValueError(f"a {mode} service needs to: (the node or address serving it)")
        if mode == "dns" and self.dst is not None:
            raise ValueError("a dns question has no to: (the server is server:, none: the node's resolver)")
        misplaced = [f"{k}: is for {on}:" for k, on in (("status", "http"), ("body", "http"), ("server", "dns"),
                                                          ("address", "dns")) if k in self.model_fields_set and mode != on]
        if misplaced:
            raise ValueError(f"{'; '.join(misplaced)}, and this check asks {mode}:")
        return self

    @property
    def mode(self) -> str:
        return next(m for m in MODES if getattr(self, m) is not None)


def url(p: Params, lab: Lab) -> str:
    m = _HTTP.fullmatch(str(p.http)) if isinstance(p.http, str) else None
    port = p.http if isinstance(p.http, int) else (m["port"] if m and m["port"] else 80)
    path = (m["path"] if m and m["path"] else "/")
    host = ping_target(lab, p.dst or "", p.family)
    if runner.is_address(host) and ipaddress.ip_address(host).version == 6:
        host = f"[{host}]"
    return f"http://{host}:{port}{path}"


def question(p: Params, lab: Lab) -> dict[str, Any]:
    """What the probe is asked (service_probe.SCRIPT's argument)."""
    if p.mode == "tcp":
        return {"mode": "tcp", "host": ping_target(lab, p.dst or "", p.family), "port": p.tcp, "timeout": p.timeout}
    if p.mode == "http":
        return {"mode": "http", "url": url(p, lab), "timeout": p.timeout}
    server = ping_target(lab, p.server, 4) if p.server else None
    return {"mode": "dns", "name": p.dns, "server": server, "family": p.family, "timeout": p.timeout}


def answered(p: Params, got: dict[str, Any]) -> bool:
    """The service answered at all (what `expect: unreachable` forbids)."""
    return bool(got.get("connected") or "status" in got or got.get("addresses"))


def fits(p: Params, lab: Lab, got: dict[str, Any]) -> list[str]:
    """What in an answer is not as expected (empty: it fits). Pure."""
    if "error" in got:
        return [got["error"]]
    if p.mode == "tcp":
        return [] if got.get("connected") else ["not connected"]
    if p.mode == "http":
        wrong = [] if got.get("status") == p.status else [f"status {got.get('status')}, not {p.status}"]
        if p.body is not None and not re.search(p.body, got.get("body", "")):
            wrong.append(f"body does not match {p.body!r}")
        return wrong
    addresses = set(got.get("addresses") or [])
    if not addresses:
        return [f"no address (rcode {got['rcode']})" if got.get("rcode") else "no address"]
    if p.address is None:
        return []
    want = {p.address} if runner.is_address(p.address) else node_addresses(lab, p.address)
    return [] if addresses & want else [f"{', '.join(sorted(addresses))}, not {p.address}"]


def said(got: dict[str, Any]) -> str:
    """One answer in words."""
    if "error" in got:
        return got["error"]
    if "connected" in got:
        return "connected"
    if "status" in got:
        return f"HTTP {got['status']}, {len(got.get('body', ''))} B"
    return ", ".join(got.get("addresses") or []) or f"no address (rcode {got.get('rcode')})"


class Service(Kind):
    name = "service"
    Params = Params
    negation = UNREACHABLE
    summary = "a TCP port accepts, an HTTP request gets a status and body, a DNS name resolves; or not"

    def problems(self, p: Params, lab: Lab) -> list[tuple[tuple, str]]:
        out = node_problem(lab, p.src, ("from",))
        for key in ("dst", "server", "address"):
            v = getattr(p, key)
            if v is not None and not runner.is_address(v):
                out += node_problem(lab, v, ("to",) if key == "dst" else (key,))
        return out

    def expected(self, p: Params, lab: Lab) -> str:
        if p.mode == "tcp":
            what = f"{p.dst} TCP port {p.tcp}"
        elif p.mode == "http":
            what = f"{url(p, lab)}: HTTP {p.status}" + (f", body ~ {p.body!r}" if p.body else "")
        else:
            what = f"{p.dns} -> {p.address or 'an address'} (asked of {p.server or 'its resolver'})"
        return f"{p.src}: {what}" + (" answers" if p.expect == "reachable" else " does not answer")

    def observe(self, p: Params, ctx: Context) -> dict[str, Any]:
        argv = service_probe.argv(**question(p, ctx.lab))
        probes: list[dict[str, str]] = []
        tries = UNREACHABLE_PROBES if p.expect == UNREACHABLE else p.attempts
        for _ in range(tries):
            res = ctx.run(p.src, argv, timeout=p.timeout + 15)
            probes.append({"stdout": res.stdout, "stderr": res.stderr})
            if p.expect == "reachable" and not fits(p, ctx.lab, service_probe.read(res.stdout, res.stderr)):
                break
        return {"probes": probes}

    def judge(self, p: Params, raw: dict[str, Any], lab: Lab) -> Judgement:
        answers = [service_probe.read(x.get("stdout", ""), x.get("stderr", "")) for x in raw.get("probes", [])]
        shown = "; ".join(dict.fromkeys(said(a) for a in answers)) or "no probe"
        if p.expect == UNREACHABLE:
            heard = [a for a in answers if answered(p, a)]
            ok = bool(answers) and not heard
            return Judgement(PASS if ok else FAIL, shown, "" if ok else "it answered", {"answers": answers})
        good = next((a for a in answers if not fits(p, lab, a)), None)
        why = "" if good else "; ".join(dict.fromkeys(w for a in answers for w in fits(p, lab, a)))
        return Judgement(PASS if good else FAIL, said(good) if good else shown, why, {"answers": answers})
