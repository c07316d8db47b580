"""What a kind of check is, and what every kind shares.

A kind has its parameters (a model extending Check, the settings every check has) and four verbs:
  problems(p, lab)   what in the parameters does not fit the lab (unknown node, a link with no
                     bond...), as (path, message): reported with the file's other problems,
                     before anything runs
  expected(p, lab)   what a passing lab shows, in words, for the table
  observe(p, ctx)    read or measure the running lab; returns what the tools said (JSON-able:
                     live interface data, ping output, measured rows), kept as the check's raw
  judge(p, raw, lab) the verdict from that: pure, so it is tested on output captured from real labs

Negation is one setting, `expect:`, with one word per family of kinds (NEGATIONS): a state kind
(Negatable params) takes `expect: absent` and passes when what it describes is not there (its
judgement turned round here, in `verdict`); reach and service take `expect: unreachable` and
judge it themselves (silence must be proved with probes of its own). Other kinds refuse `expect:`.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, Field, field_validator

from linklab import runner
from linklab.handle import LabHandle
from linklab.model.ready import regex
from linklab.model.resolved import Lab, Link, LinkEnd
from linklab.model.topology import Model

# A regular expression a check searches output for: refused at validation when it does not compile.
Regex = Annotated[str, AfterValidator(lambda v: regex(v, None) or v)]

PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"
ABSENT, UNREACHABLE = "absent", "unreachable"  # the `expect:` words that negate a kind
ID_RE = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


class Check(Model):
    """What every check has; each kind's parameters extend it (linklab/check/kinds/)."""

    id: str
    kind: str
    title: str | None = None
    points: Annotated[float, Field(ge=0, le=1000)] = 1
    hint: str | None = None
    stage: Annotated[int, Field(ge=1, le=100)] = 1
    requires: list[str] = Field(default_factory=list)
    hidden: bool = False  # counts for the grade; not run or shown with --student
    severity: Literal["fail", "warn"] = "fail"  # warn: a failure is a warning (exit: only warnings, if nothing else)

    @field_validator("id")
    @classmethod
    def _id(cls, v):
        if not re.match(ID_RE, v):
            raise ValueError(f"bad id {v!r}: letters, digits, _, . and -, starting with a letter or digit, at most 64")
        return v


class Negatable(Check):
    """A state kind's parameters: `expect: absent` passes when the state described is not there."""

    expect: Literal["present", "absent"] = "present"


@dataclass(frozen=True)
class Judgement:
    verdict: str  # pass | fail | inconclusive
    observed: str  # what was seen, in words: shown beside what was expected
    detail: str = ""  # why, when the verdict needs more than the observation (flags, per pair)
    values: dict[str, Any] = field(default_factory=dict)  # the figures behind it, for JSON


@dataclass
class Context:
    """A running lab as the checks see it: its handle, and the lab's interfaces read once per
    run of the checks (nothing the checks do changes them: a measured check that takes a
    member down brings it back before it returns, and says so with `changed()`)."""

    handle: LabHandle
    say: Callable[[str], None] = lambda _msg: None
    _interfaces: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # The flows this run's measured checks sent, by what they sent (measured.Flow): a later check
    # of the same flow is judged on the repetitions already measured.
    flows: dict[tuple, Any] = field(default_factory=dict)

    @property
    def lab(self) -> Lab:
        return self.handle.lab

    def ns(self, node: str) -> str:
        return self.handle.ns(node)

    def interfaces(self, nodes: Collection[str]) -> dict[str, list[dict[str, Any]]]:
        """{node: its interfaces as `linklab status` reads them}; a node whose namespace is gone
        has an empty list."""
        missing = [n for n in nodes if n not in self._interfaces]
        if missing:
            got = self.handle.backend.interfaces(self.lab, missing)
            for n in missing:
                self._interfaces[n] = got.get(n, [])
        return {n: self._interfaces[n] for n in nodes}

    def changed(self) -> None:
        self._interfaces.clear()

    def run(self, node: str, argv: list[str], timeout: float = 30, names: bool = True) -> runner.Result:
        return runner.run(argv, netns=self.ns(node), check=False, timeout=timeout, names=names)

    def switch_tool(self, switch: str, argv: list[str], timeout: float = 30) -> runner.Result:
        return runner.run(self.handle.backend.switch_tool_argv(self.lab, switch, argv), check=False, timeout=timeout)


class Kind:
    name: ClassVar[str]
    Params: ClassVar[type[Check]]
    summary: ClassVar[str] = ""
    measured: ClassVar[bool] = False  # judged from repeated measurements, with a tolerance
    negation: ClassVar[str | None] = None  # the `expect:` word that negates it (ABSENT, UNREACHABLE); None: cannot be

    def problems(self, p: Any, lab: Lab) -> list[tuple[tuple, str]]:
        return []

    def expected(self, p: Any, lab: Lab) -> str:
        raise NotImplementedError

    def observe(self, p: Any, ctx: Context) -> Any:
        raise NotImplementedError

    def judge(self, p: Any, raw: Any, lab: Lab) -> Judgement:
        raise NotImplementedError

    # What the run and the tables use: expected/judge with `expect: absent` applied.
    def expectation(self, p: Any, lab: Lab) -> str:
        text = self.expected(p, lab)
        return f"absent: {text}" if self.negation == ABSENT and p.expect == ABSENT else text

    def verdict(self, p: Any, raw: Any, lab: Lab) -> Judgement:
        j = self.judge(p, raw, lab)
        if self.negation != ABSENT or p.expect != ABSENT or j.verdict == INCONCLUSIVE:
            return j
        return replace(j, verdict=FAIL if j.verdict == PASS else PASS,
                       detail="present, and must be absent" if j.verdict == PASS else j.detail)


# ---- where things are in a lab: shared by the kinds ------------------------------------------

def node_problem(lab: Lab, name: str, loc: tuple, kind: str | None = None) -> list[tuple[tuple, str]]:
    """A node that is not in the lab (or not of `kind`: host, switch, ovs)."""
    names = [n.name for n in lab.nodes]
    if name not in names:
        return [(loc, f"unknown node {name!r} (valid: {', '.join(names)})")]
    node = lab.node(name)
    if kind == "ovs" and node.switch_kind != "ovs":
        valid = [n.name for n in lab.nodes if n.switch_kind == "ovs"]
        return [(loc, f"{name!r} is not an Open vSwitch switch (valid: {', '.join(valid) or 'none in this lab'})")]
    if kind in ("host", "switch") and node.kind != kind:
        valid = [n.name for n in lab.nodes if n.kind == kind]
        return [(loc, f"{name!r} is a {node.kind}, not a {kind} (valid: {', '.join(valid) or 'none in this lab'})")]
    return []


def link_problem(lab: Lab, name: str, loc: tuple, node: str | None = None) -> list[tuple[tuple, str]]:
    """A link that is not in the lab, or that `node` is not an end of."""
    names = [link.name for link in lab.links]
    if name not in names:
        return [(loc, f"unknown link {name!r} (valid: {', '.join(names)})")]
    ends = [e.node for e in lab.link(name).ends]
    if node is not None and node not in ends:
        return [(loc, f"{node!r} is not an end of link {name!r} (ends: {', '.join(ends)})")]
    return []


def end_of(link: Link, node: str) -> LinkEnd:
    return next(e for e in link.ends if e.node == node)


def link_interfaces(link: Link) -> list[tuple[str, str]]:
    """Every interface a link makes, (node, ifname): each end's (a bond, a LAG or a veth) and
    every veth of it (bond members)."""
    out = [(e.node, e.ifname) for e in link.ends]
    for pair in link.veths:
        out += [(pair.a.node, pair.a.ifname), (pair.b.node, pair.b.ifname)]
    return list(dict.fromkeys(out))


def find(ifaces: list[dict[str, Any]], ifname: str) -> dict[str, Any] | None:
    return next((i for i in ifaces if i.get("ifname") == ifname), None)


def node_addresses(lab: Lab, name: str) -> set[str]:
    """Every address a lab node carries, on any of its links (without prefix lengths)."""
    return {str(ipaddress.ip_interface(a).ip) for link in lab.links for e in link.ends if e.node == name
            for a in (e.ipv4, e.ipv6) if a}


def ping_target(lab: Lab, node_or_address: str, family: int) -> str:
    """What ping is given: a lab node's name (its hosts file resolves NAME and NAME-v6), or an
    address as written."""
    if node_or_address in {n.name for n in lab.nodes}:
        return node_or_address if family == 4 else f"{node_or_address}-v6"
    return node_or_address


def as_list(v: str | list[str]) -> list[str]:
    return [v] if isinstance(v, str) else list(v)
