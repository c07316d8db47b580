"""Experiment files: which topology, which matrix, how often, what to measure.

Axes of the matrix are either
  topology axes  -> overrides applied to the running lab before the point is measured
                    (mtu, bond_mode, bond, sysctl_profile, cc, or any override path such as
                    `links[bond].bond.member[1].impair.delay`),
  named axes     -> an axis of the experiment's own `overrides:`, each value a named set of
                    overrides (several paths changed together: `design: [bond, ecmp]`), or
  tool axes      -> parameters of the measurement (streams, parallel, protocol, udp_rate,
                    mss, length, ip, duration, client, server), or
  flows          -> the flows measured together at the point, each value what `flows:` takes
                    (`rrul`, or a list of flows): 1 vs 4 flows each way in one matrix.
The two meanings of "MTU" in the papers are separate axes: `mtu` changes every interface,
`mss` (iperf3 -M) and `length` (iperf3 -l) change only what the application sends; each result
row says which one was varied (`mtu_varied`).
"""

from __future__ import annotations

import hashlib
import re
import shlex
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Discriminator, Field, Tag, TypeAdapter, ValidationError, field_validator, model_validator

from linklab import units
from linklab.model.loader import read_yaml
from linklab.model.topology import BOND_MODES, Model, Ready, Seconds, regex
from linklab.sweep.matrix import render_value

TOPOLOGY_AXES = ("mtu", "bond_mode", "bond", "sysctl_profile", "cc")
TOOL_AXES = ("streams", "parallel", "protocol", "udp_rate", "mss", "length", "ip", "duration", "client", "server")
FLOW_AXES = ("flows",)
MEASUREMENTS = ("throughput", "ping", "ping_load", "udp_rtt", "reorder", "cpu", "bond_counters", "link_counters", "nstat",
                "switch_counters", "queue")
CC_ALGORITHMS = ("cubic", "bbr", "reno", "htcp", "dctcp", "vegas", "westwood")


Command = str | Annotated[list[str], Field(min_length=1)]  # split shell-like into an argv, or an argv already
TOOL_KINDS = ("iperf3", "command")  # linklab/measure/kinds/: one module each
HARMLESS = ("below", "above")


class DeclaredMetric(Model):
    """A metric a command tool's client prints: read by `json` (a dotted path into its JSON output,
    numbers index arrays) or `regex` (one group), judged by the verdict as the built-in ones are
    (linklab/verdict/metrics.py): on its `scale`, failing beyond `min_effect`, unless it moved to
    its `harmless` side."""

    json_path: str | None = Field(None, alias="json")
    regex: str | None = None
    scale: Literal["rel", "log", "abs"] = "rel"
    min_effect: Annotated[float, Field(ge=0)]
    harmless: Literal[HARMLESS] | None = None  # type: ignore[valid-type]
    unit: str = ""
    offset: Annotated[float, Field(ge=0)] = 0.0  # log scale: log(value + offset), so zero is finite

    @model_validator(mode="after")
    def _source(self):
        given = [k for k in ("json", "regex") if getattr(self, "json_path" if k == "json" else k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of json, regex (given: {', '.join(given) or 'none'})")
        if self.regex is not None:
            regex(self.regex, groups=1)
        return self

    def spec(self) -> dict[str, Any]:
        """What the manifest records and linklab/measure/command.py reads it by."""
        return self.model_dump(by_alias=True)


METRIC_NAME = r"^[a-z][a-z0-9_]*$"


class Tool(Model):
    """Measurement defaults; tool axes override them per point. `kind` names the traffic
    (linklab/measure/kinds/): iperf3 (the default), or command, a program of your own."""

    kind: Literal[TOOL_KINDS] = "iperf3"  # type: ignore[valid-type]
    duration: Seconds = 10.0
    protocol: Literal["tcp", "udp"] = "tcp"
    streams: Annotated[int, Field(ge=1, le=128)] = 1
    parallel: Literal["threads", "processes"] = "threads"  # -P N in one iperf3, or N iperf3 processes
    udp_rate: str = Field("1gbit", json_schema_extra={"pattern": units.pattern(["", *units.RATE_UNITS])})
    mss: Annotated[int, Field(ge=88, le=9216)] | None = None
    length: Annotated[int, Field(ge=1)] | None = None
    ip: Literal[4, 6] = 4
    ping_count: Annotated[int, Field(ge=1)] = 20
    ping_interval: Seconds = 0.2
    port: int = 5201
    interval: Seconds | None = None  # iperf3 -i: report every this many seconds (events: 0.1)
    # kind: command (linklab/measure/kinds/command.py)
    server: Command | None = None   # started on the server node, kept up for the point
    client: Command | None = None   # run on the client node once per repetition
    ready: Ready | None = None      # when the server is ready
    metrics: dict[Annotated[str, Field(pattern=METRIC_NAME)], DeclaredMetric] = Field(default_factory=dict)
    timeout: Seconds = 300.0        # a client run longer than this is killed, its repetition failed

    @field_validator("udp_rate")
    @classmethod
    def _rate(cls, v):
        units.parse_rate(v)
        return v

    @model_validator(mode="after")
    def _kind(self):
        own = [k for k in ("server", "client", "ready") if getattr(self, k) is not None] + (["metrics"] if self.metrics else [])
        if self.kind != "command" and own:
            raise ValueError(f"{', '.join(own)}: settings of kind command (this tool is kind {self.kind})")
        if self.kind == "command":
            missing = [k for k in ("client", "metrics") if not getattr(self, k)]
            if missing:
                raise ValueError(f"kind command needs {' and '.join(missing)} (the program run per repetition, "
                                 "the metrics read from its output)")
            if self.ready is not None and self.server is None:
                raise ValueError("ready: says when the server is ready, but no server is given")
            for what in ("server", "client"):
                cmd = getattr(self, what)
                if cmd is not None:
                    try:
                        shlex.split(cmd) if isinstance(cmd, str) else None
                    except ValueError as e:
                        raise ValueError(f"{what}: cannot be split into arguments ({e})") from None
                    if isinstance(cmd, str) and not cmd.strip():
                        raise ValueError(f"{what}: an empty command")
        return self


EVENT_RE = re.compile(r"^links\[(?P<link>[^\]]+)\]\.bond\.member\[(?P<member>\d+)\]\.state=(?P<state>up|down)$")
LINK_STATE_RE = re.compile(r"^links\[(?P<link>[^\]]+)\]\.state=(?P<state>up|down)$")
ACTIVE_RE = re.compile(r"^links\[(?P<link>[^\]]+)\]\.bond\.active=(?P<member>\d+)$")
# Any override path through an `impair` block: a link's, a direction's or a member's.
IMPAIR_RE = re.compile(r"^(?P<path>links\[[^\]]+\](?:\.[A-Za-z_0-9\[\]]+)*\.impair(?:\.from\.[A-Za-z0-9_-]+)?\.[a-z_]+)=(?P<value>.+)$")
EVENT_KINDS = ("links[<link>].bond.member[<k>].state=down|up", "links[<link>].state=down|up", "links[<link>].bond.active=<k>",
               "links[<link>](.bond.member[<k>])?.impair(.from.<node>)?.<field>=<value>")


class Event(Model):
    """A fault on the timeline, at `at` seconds into the throughput window (after warmup):
      set: links[bond].bond.member[0].state=down     a member's cable pulled (or =up: replugged)
      set: links[path0].state=down                   a link's cable(s) pulled: every member of a bond
      set: links[bond].bond.active=1                 the bond's active member changed (active-backup, tlb, alb)
      set: links[wan].impair.delay=50ms              an impairment changed in place (delay, loss, rate, ...)
    `when:` (axis: value, or axis: [values]) puts the event only at the points that match, e.g.
    a bond member's failure at `design: bond`, a route's link at `design: ecmp`.
    """

    at: Seconds
    set: str
    when: dict[str, Any] = Field(default_factory=dict)

    @field_validator("set")
    @classmethod
    def _set(cls, v):
        v = v.strip()
        compact = v.replace(" ", "")
        if EVENT_RE.match(compact) or ACTIVE_RE.match(compact) or LINK_STATE_RE.match(compact):
            return compact
        if IMPAIR_RE.match(v):
            return v
        raise ValueError(f"unknown event {v!r} (valid: {'; '.join(EVENT_KINDS)})")

    @property
    def kind(self) -> Literal["member_state", "link_state", "active_member", "impair"]:
        if EVENT_RE.match(self.set):
            return "member_state"
        if LINK_STATE_RE.match(self.set):
            return "link_state"
        return "active_member" if ACTIVE_RE.match(self.set) else "impair"

    @property
    def is_failure(self) -> bool:
        """A cable pulled or replugged, the active member moved: judged by the outage it causes.
        An impairment set in place (rate, delay, loss...) is a change, judged by how long the flow
        takes to settle at its new level (linklab/measure/timeline.py)."""
        return self.kind != "impair"

    def action(self) -> tuple[str, int, bool]:
        """member_state: (link, member index, up?)."""
        m = EVENT_RE.match(self.set)
        return m["link"], int(m["member"]), m["state"] == "up"

    def link_state(self) -> tuple[str, bool]:
        """link_state: (link, up?)."""
        m = LINK_STATE_RE.match(self.set)
        return m["link"], m["state"] == "up"

    def applies(self, axes: dict[str, Any]) -> bool:
        """At a point with these axes: every `when` axis has the (or one of the) value(s) given."""
        return all(axes.get(axis) in (want if isinstance(want, list) else [want]) for axis, want in self.when.items())

    def active(self) -> tuple[str, int]:
        """active_member: (link, member index)."""
        m = ACTIVE_RE.match(self.set)
        return m["link"], int(m["member"])

    def override(self) -> tuple[str, Any]:
        """impair: the override it applies, (path, value), parsed as `linklab set` parses one."""
        from linklab.model.overrides import split_assignment
        return split_assignment(self.set)


FLOW_DIRECTIONS = ("up", "down", "both")
FLOW_NAME = r"^[a-z][a-z0-9_]*$"
RRUL_FLOWS = 4  # flent's RRUL: four TCP flows each way, beside the latency probes


class Flow(Model):
    """One of several flows measured together in each repetition (an experiment's `flows:`):
    iperf3 from `client` to `server` (`up`: the client sends; `down`: the server sends, iperf3
    -R; `both`: one flow each way, named NAME_up and NAME_down), its own streams, protocol and
    congestion control, started `start` seconds into the window and running `duration` seconds
    (default: the tool's). A flow's RTT is its path's: hosts on links of other delays."""

    name: Annotated[str, Field(pattern=FLOW_NAME)] | None = None  # default flow<N>: its columns' prefix
    client: str
    server: str
    direction: Literal[FLOW_DIRECTIONS] = "up"  # type: ignore[valid-type]
    streams: Annotated[int, Field(ge=1, le=128)] = 1
    protocol: Literal["tcp", "udp"] = "tcp"
    cc: Literal[CC_ALGORITHMS] | None = None  # type: ignore[valid-type]  # None: the point's cc, else the client's default
    start: Seconds = 0.0
    duration: Seconds | None = None
    udp_rate: str | None = Field(None, json_schema_extra={"pattern": units.pattern(["", *units.RATE_UNITS])})

    @field_validator("udp_rate")
    @classmethod
    def _rate(cls, v):
        if v is not None:
            units.parse_rate(v)
        return v

    @field_validator("duration")
    @classmethod
    def _whole(cls, v):
        if v is not None and v != int(v):
            raise ValueError(f"iperf3 runs whole seconds, got {v!r}")
        return v


def expand_flows(flows: list[Flow] | str, client: str, server: str) -> list[Flow]:
    """The flows one repetition runs, each in one direction and named: `both` split in two,
    `rrul` (flent's Realtime Response Under Load) as four TCP flows up and four down between
    the point's client and server."""
    if flows == "rrul":
        return [Flow(name=f"{d}{i}", client=client, server=server, direction=d)
                for d in ("up", "down") for i in range(1, RRUL_FLOWS + 1)]
    out = []
    for i, f in enumerate(flows):
        name = f.name or f"flow{i + 1}"
        if f.direction == "both":
            out += [f.model_copy(update={"name": f"{name}_{d}", "direction": d}) for d in ("up", "down")]
        else:
            out.append(f.model_copy(update={"name": name}))
    return out


# `flows:` is a list of flows or the `rrul` shorthand: a tagged union, so a list's problems are
# reported for the list alone (not beside "valid: rrul").
Flows = Annotated[Annotated[list[Flow], Tag("Flows")] | Annotated[Literal["rrul"], Tag("Rrul")],
                  Discriminator(lambda v: "Flows" if isinstance(v, list) else "Rrul")]


class Quick(Model):
    """The short variant: replaces axes' value lists, repetitions and tool settings."""

    matrix: dict[str, list[Any]] = Field(default_factory=dict)
    repetitions: Annotated[int, Field(ge=1)] | None = None
    tool: dict[str, Any] = Field(default_factory=dict)
    warmup: Seconds | None = None
    settle: Seconds | None = None


# An axis is a built-in one or one of the experiment's `overrides:` (a name), or an override path
# (it has a dot or a bracket): for editors, which cannot tell a name of the file's own from a typo.
AXES = TOPOLOGY_AXES + TOOL_AXES + FLOW_AXES
AXIS_NAMES = {"propertyNames": {"pattern": f"^{METRIC_NAME[1:-1]}$|[.\\[]"},
              "additionalProperties": {"type": "array", "minItems": 1}}


class Experiment(Model):
    # Without `overrides:` the file names no axis of its own: editors then know every valid one.
    model_config = ConfigDict(**Model.model_config, json_schema_extra={
        "if": {"not": {"required": ["overrides"]}},
        "then": {"properties": {"matrix": {"propertyNames": {
            "pattern": f"^({'|'.join(AXES)})$|[.\\[]"}}}}})

    name: str
    description: str | None = None
    source: str | None = None  # the published document this reproduces
    topology: str
    client: str
    server: str
    matrix: dict[str, list[Any]] = Field(json_schema_extra=AXIS_NAMES)
    exclude: list[dict[str, Any]] = Field(default_factory=list)
    repetitions: Annotated[int, Field(ge=1, le=1000)] = 3
    warmup: Seconds = 1.0  # iperf3 --omit: the first seconds are measured but not counted
    settle: Seconds = 1.0  # after changing the lab, before measuring (LACP, ARP, queues)
    pause: Seconds = 0.5  # between repetitions
    tool: Tool = Tool()
    measure: list[Literal[MEASUREMENTS]] = ["throughput", "cpu", "bond_counters", "nstat"]  # type: ignore[valid-type]
    profiles: dict[str, dict[str, str | int]] = Field(default_factory=dict)
    # Axes of the experiment's own: axis -> value -> the overrides (path: value) that value
    # applies, several paths changed together (design: {bond: {...}, ecmp: {...}}); a value with
    # none changes nothing in the lab, for events' `when` to tell points apart (fault: {none: {}}).
    overrides: dict[Annotated[str, Field(pattern=METRIC_NAME)], dict[str, dict[str, Any]]] = Field(default_factory=dict)
    # measure: link_counters: these links' byte counters around the window (a bond's: each
    # member's), each veth its own path; none named: every link of the lab.
    counted_links: list[str] = Field(default_factory=list)
    quick: Quick | None = None
    reference: str | None = None  # published figures, beside the experiment file
    notes: list[str] = Field(default_factory=list)
    events: list[Event] = Field(default_factory=list)  # faults inside each repetition's window
    # Several flows at once instead of the tool's one (linklab/sweep/kinds/flows.py): a list, or
    # `rrul` (four TCP flows each way between client and server, ping under load beside them).
    flows: Flows = Field(default_factory=list)
    # Run once per sweep before anything is measured, in the experiment's directory (under
    # `linklab ab`, each arm's revision's): a program of your own built as that revision has it.
    build: list[Command] = Field(default_factory=list)

    @field_validator("matrix")
    @classmethod
    def _axes(cls, v):
        for axis, values in v.items():
            if not isinstance(values, list) or not values:
                raise ValueError(f"axis {axis!r} needs a non-empty list of values")
        return v

    @model_validator(mode="after")
    def _values(self):
        problems = []
        for axis in self.overrides:
            if axis in AXES:
                problems.append(f"overrides.{axis}: a built-in axis (name the axis of your own otherwise)")
        unknown = [a for a in self.matrix if not is_path_axis(a) and a not in AXES + tuple(self.overrides)]
        if unknown:
            problems += [f"unknown axis {a!r} (valid: {', '.join(AXES + tuple(self.overrides))}, "
                         "or an override path such as links[0].impair.delay)" for a in unknown]
            raise ValueError("; ".join(problems))
        for i, ev in enumerate(self.events):
            for axis, want in ev.when.items():
                if axis not in self.matrix:
                    problems.append(f"events[{i}].when.{axis}: not an axis of the matrix (axes: {', '.join(self.matrix)})")
                    continue
                shown = [render_value(v) for v in self.matrix[axis]]
                problems += [f"events[{i}].when.{axis}: {render_value(w)} is not one of its values (values: {', '.join(shown)})"
                             for w in (want if isinstance(want, list) else [want]) if render_value(w) not in shown]
        if self.counted_links and "link_counters" not in self.measure:
            problems.append("counted_links: names the links link_counters reads, but measure: has no link_counters")
        for axis, values in self.matrix.items():
            for i, value in enumerate(values):
                msg = check_axis_value(axis, value, self)
                if msg:
                    problems.append(f"matrix.{axis}[{i}]: {msg}")
        if self.quick:
            for axis, values in self.quick.matrix.items():
                if axis not in self.matrix:
                    problems.append(f"quick.matrix.{axis}: not an axis of the matrix (axes: {', '.join(self.matrix)})")
                elif not values:
                    problems.append(f"quick.matrix.{axis}: needs a non-empty list of values")
                for i, value in enumerate(values if axis in self.matrix else []):
                    msg = check_axis_value(axis, value, self)
                    if msg:
                        problems.append(f"quick.matrix.{axis}[{i}]: {msg}")
            for key in self.quick.tool:
                if key not in Tool.model_fields:
                    problems.append(f"quick.tool.{key}: unknown setting (valid: {', '.join(Tool.model_fields)})")
            if not problems:
                try:  # the quick variant's tool is the full one with these changes: it must be valid too
                    Tool.model_validate({**self.tool.model_dump(), **self.quick.tool})
                except ValidationError as e:
                    problems += [f"quick.tool.{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors()]
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @model_validator(mode="before")
    @classmethod
    def _rrul_probes(cls, data):
        """`flows: rrul` is flent's RRUL: the flows and the latency probes beside them (ping_load)."""
        if isinstance(data, dict) and "rrul" in all_flows(data):
            measure = data.get("measure", cls.model_fields["measure"].default)
            if isinstance(measure, list) and "ping_load" not in measure:
                data = {**data, "measure": [*measure, "ping_load"]}
        return data


def all_flows(data: dict) -> list[Any]:
    """Every value of flows an experiment's raw data gives: its `flows:` and each value of a
    `flows` axis (each is one point's flows)."""
    matrix = data.get("matrix")
    axis = matrix.get("flows") if isinstance(matrix, dict) else None
    return [data.get("flows"), *(axis if isinstance(axis, list) else [])]


FLOWS = TypeAdapter(Flows)


def point_flows(value: Any) -> list[Flow] | str:
    """A `flows` axis value as the experiment's `flows:` takes it (checked by check_axis_value)."""
    return FLOWS.validate_python(value)


def is_path_axis(axis: str) -> bool:
    return "." in axis or "[" in axis


def one_of(value: Any, choices) -> bool:
    """`value in choices` that is simply False for a value that cannot be in them (a mapping
    where a name was expected: unhashable, so `in` a dict or set would raise)."""
    try:
        return value in choices
    except TypeError:
        return False


def check_axis_value(axis: str, value: Any, exp: Experiment) -> str | None:
    if axis in exp.overrides and not one_of(value, exp.overrides[axis]):
        return f"unknown {axis} {value!r} (valid: {', '.join(exp.overrides[axis])}; overrides.{axis} names them)"
    if axis == "flows":
        if value == []:
            return "a point needs flows (rrul or a list of flows); leave the axis out for the tool's one flow"
        try:
            point_flows(value)
        except ValidationError as e:
            return "; ".join(f"{'.'.join(map(str, err['loc'][1:])) or 'flows'}: {err['msg']}" for err in e.errors())
        return None
    if axis == "mtu" and not (isinstance(value, int) and 68 <= value <= 65535):
        return f"MTU must be a whole number 68-65535, got {value!r}"
    if axis == "bond_mode" and not one_of(value, BOND_MODES):
        return f"unknown bond mode {value!r} (valid: {', '.join(BOND_MODES)})"
    if axis == "bond" and not isinstance(value, dict):
        return "each value is a mapping of bond settings, e.g. {mode: 802.3ad, options: {lacp_rate: fast}}"
    if axis == "sysctl_profile" and not one_of(value, exp.profiles):
        return f"unknown profile {value!r} (valid: {', '.join(exp.profiles) or 'none defined under profiles:'})"
    if axis == "cc" and not one_of(value, CC_ALGORITHMS):
        return f"unknown congestion control {value!r} (valid: {', '.join(CC_ALGORITHMS)})"
    if axis == "streams" and not (isinstance(value, int) and 1 <= value <= 128):
        return f"streams must be 1-128, got {value!r}"
    if axis == "parallel" and not one_of(value, ("threads", "processes")):
        return f"unknown parallel {value!r} (valid: threads, processes)"
    if axis == "protocol" and not one_of(value, ("tcp", "udp")):
        return f"unknown protocol {value!r} (valid: tcp, udp)"
    if axis == "ip" and not one_of(value, (4, 6)):
        return f"unknown ip version {value!r} (valid: 4, 6)"
    if axis == "udp_rate":
        try:
            units.parse_rate(value)
        except ValueError as e:
            return str(e)
    return None


def apply_quick(exp: Experiment) -> Experiment:
    if not exp.quick:
        return exp
    q = exp.quick
    return exp.model_copy(update={
        "matrix": {axis: q.matrix.get(axis, values) for axis, values in exp.matrix.items()},
        "repetitions": q.repetitions or exp.repetitions,
        "tool": Tool.model_validate({**exp.tool.model_dump(), **q.tool}),
        "warmup": exp.warmup if q.warmup is None else q.warmup,
        "settle": exp.settle if q.settle is None else q.settle,
    })


def topology_path(exp_path: str | Path, exp: Experiment) -> Path:
    """The topology named by an experiment, relative to the experiment file (or the cwd)."""
    p = Path(exp.topology)
    if p.is_absolute():
        return p
    beside = Path(exp_path).parent / p
    try:
        return beside if beside.exists() else p
    except OSError:  # a name the file system cannot hold (too long): reading it reports it, with the path
        return p


def file_sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def raw_data(path: str | Path) -> dict:
    return read_yaml(Path(path))[0]
