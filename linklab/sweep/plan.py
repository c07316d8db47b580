"""From a matrix point to what must change: topology overrides and the tool's settings; an
experiment file loaded with every point's plan checked (`load_experiment`).

Pure: the same experiment, topology and point give the same plan (validation runs every
point's plan through the topology loader before anything is measured).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from linklab.errors import LinklabError, ValidationFailed
from linklab.measure.traffic import CC_SYSCTL
from linklab.model import load_topology
from linklab.model.overrides import link_auto_name
from linklab.model.loader import format_path, load_model, pydantic_problems, read_yaml
from linklab.sweep.experiment import (TOOL_AXES, Event, Experiment, Flow, Tool, apply_quick, expand_flows, is_path_axis,
                                      one_of, point_flows, topology_path)
from linklab.sweep.matrix import expand


@dataclass(frozen=True)
class PointPlan:
    overrides: tuple[tuple[str, Any], ...]
    tool: Tool
    client: str
    server: str
    cc: str | None
    mtu_varied: str  # interface | mss | length | interface+mss ... | none
    axes: dict[str, Any] = field(default_factory=dict)  # the point's axes as the matrix gives them (${point.AXIS})
    flows: tuple[Flow, ...] = ()  # several flows at once (experiment.expand_flows): none, the tool's one flow
    events: tuple[Event, ...] = ()  # the timeline's events at this point (an event's `when` matches it)


def _bond_links(topo: dict) -> list[int]:
    return [i for i, link in enumerate(topo.get("links") or []) if isinstance(link, dict) and link.get("bond")]


def _hosts(topo: dict) -> list[str]:
    return list((topo.get("hosts") or {}).keys())


def plan_point(exp: Experiment, topo: dict, axes: dict[str, Any]) -> PointPlan:
    overrides: list[tuple[str, Any]] = []
    tool = exp.tool.model_dump()
    client, server, cc = exp.client, exp.server, None
    flows = exp.flows
    for axis, value in axes.items():
        if axis == "mtu":
            overrides.append(("links[*].mtu", value))
        elif axis == "bond_mode":
            overrides += [(f"links[{i}].bond.mode", value) for i in _bond_links(topo)]
        elif axis == "bond":
            overrides += [(f"links[{i}].bond.{k}", v) for i in _bond_links(topo) for k, v in value.items()]
        elif axis == "sysctl_profile":
            profile = exp.profiles[value]
            # Every key any profile sets is named at every point: keys a profile leaves out go
            # back to the value the host had before the sweep (the backend restores originals).
            overrides += [(f'hosts.{h}.sysctls."{k}"', v) for h in _hosts(topo) for k, v in profile.items()]
        elif axis == "cc":
            cc = value
            overrides += [(f'hosts.{h}.sysctls."{CC_SYSCTL}"', value) for h in _hosts(topo)]
        elif axis in exp.overrides:
            overrides += list(exp.overrides[axis][value].items())
        elif axis in ("client", "server"):
            client, server = (value, server) if axis == "client" else (client, value)
        elif axis == "flows":
            flows = point_flows(value)
        elif axis in TOOL_AXES:
            tool[axis] = value
        elif is_path_axis(axis):
            overrides.append((axis, value))
    varied = [name for name, hit in (("interface", "mtu" in axes or any(is_path_axis(a) and a.endswith(".mtu") for a in axes)),
                                     ("mss", "mss" in axes), ("length", "length" in axes)) if hit]
    return PointPlan(overrides=tuple(overrides), tool=Tool.model_validate(tool), client=client, server=server,
                     cc=cc, mtu_varied="+".join(varied) or "none", axes=dict(axes),
                     flows=tuple(expand_flows(flows, client, server)),
                     events=tuple(ev for ev in exp.events if ev.applies(axes)))


def load_experiment(path: str | Path, quick: bool = False) -> Experiment:
    """Validate an experiment file, its topology, and every point's overrides; nothing runs."""
    exp = load_model(path, Experiment, checks=lambda e, _idx: check_experiment_points(Path(path), e))
    return apply_quick(exp) if quick else exp


def check_experiment_points(exp_path: Path, exp: Experiment) -> list[tuple[tuple, str]]:
    """Every point of the full and quick matrix must give a valid lab: checked before running."""
    tpath = topology_path(exp_path, exp)
    try:
        topo_raw = read_yaml(tpath)[0]
        base = load_topology(tpath)
    except ValidationFailed as e:
        return [(("topology",), f"{tpath}: {p}") for p in e.problems]
    except LinklabError as e:
        return [(("topology",), str(e))]
    problems: list[tuple[tuple, str]] = []
    for role in ("client", "server"):
        name = getattr(exp, role)
        if not one_of(name, base.hosts):
            problems.append(((role,), f"unknown host {name!r} in {tpath} (valid: {', '.join(base.hosts)})"))
    for axis in ("client", "server"):
        for i, v in enumerate(exp.matrix.get(axis, [])):
            if not one_of(v, base.hosts):
                problems.append((("matrix", axis, i), f"unknown host {v!r} (valid: {', '.join(base.hosts)})"))
    problems += flow_problems(exp, list(base.hosts))
    problems += placeholder_problems(exp, [*base.hosts, *base.switches])
    names = [str(lk.get("name") or link_auto_name(lk)) for lk in topo_raw.get("links") or []]
    problems += [(("counted_links", i), f"unknown link {name!r} (valid: {', '.join(names)})")
                 for i, name in enumerate(exp.counted_links) if name not in names + [str(i) for i in range(len(names))]]
    if "bond_mode" in exp.matrix and not _bond_links(topo_raw):
        problems.append((("matrix", "bond_mode"), f"{tpath} has no bonded link to change the mode of"))
    if problems:
        return problems
    seen: set[str] = set()
    for where, variant in ((("matrix",), exp), (("quick", "matrix"), apply_quick(exp))):
        try:  # expand() holds the matrix's own rules (axes, values given twice, exclude/include)
            points = expand(variant.matrix, exclude=variant.exclude)  # an excluded point is never built
        except ValueError as e:
            if str(e) not in seen:  # the quick variant repeats the full matrix's axes it keeps
                seen.add(str(e))
                problems.append((where, str(e)))
            continue
        for point in points:
            try:
                plan = plan_point(variant, topo_raw, point.axes)
            except ValidationError as e:  # a tool axis value the tool settings refuse
                for loc, msg in pydantic_problems(e, Tool):
                    text = f"point {point.key}: tool.{format_path(loc)}: {msg}"
                    if text not in seen:
                        seen.add(text)
                        problems.append((("matrix",), text))
                continue
            try:
                load_topology(tpath, list(plan.overrides))
            except ValidationFailed as e:
                for p in e.problems:
                    text = f"point {point.key}: {p}"
                    if text not in seen:
                        seen.add(text)
                        problems.append((("matrix",), text))
            except LinklabError as e:
                problems.append((("matrix",), f"point {point.key}: {e}"))
    return problems


def flow_problems(exp: Experiment, hosts: list[str]) -> list[tuple[tuple, str]]:
    """Every flow between two hosts of the topology, not a host to itself, named once; nothing
    beside them that sets the one flow's traffic (a command tool, the axes each flow sets).
    `flows:` and each value of a `flows` axis are checked alike."""
    sources = [(("flows",), exp.flows)] if exp.flows else []
    for i, value in enumerate(exp.matrix.get("flows", [])):
        try:
            sources.append((("matrix", "flows", i), point_flows(value)))
        except ValidationError:  # reported by the matrix's own check of the value
            pass
    if not sources:
        return []
    problems: list[tuple[tuple, str]] = []
    if exp.tool.kind != "iperf3":
        problems.append((("tool", "kind"), f"flows: run iperf3; tool.kind {exp.tool.kind} cannot go with them"))
    rrul_only = all(flows == "rrul" for _, flows in sources)
    own = ("streams", "protocol", "parallel", "udp_rate") + (() if rrul_only else ("client", "server"))
    problems += [(("matrix", a), f"each flow sets its own {a} (flows: {a}: per flow)") for a in own if a in exp.matrix]
    for where, flows in sources:
        if flows == "rrul":
            continue
        names = [f.name for f in expand_flows(flows, exp.client, exp.server)]
        problems += [(where, f"two flows named {n!r} (a flow both ways is NAME_up and NAME_down; "
                             f"names: {', '.join(names)})")
                     for n in sorted({n for n in names if names.count(n) > 1})]
        for i, flow in enumerate(flows):
            for role in ("client", "server"):
                name = getattr(flow, role)
                if not one_of(name, hosts):
                    problems.append(((*where, i, role), f"unknown host {name!r} (valid: {', '.join(hosts)})"))
            if flow.client == flow.server:
                problems.append(((*where, i), f"a flow from {flow.client} to itself (give another server)"))
    return problems


def placeholder_names(exp: Experiment, nodes: list[str]) -> list[str]:
    """What a command tool's commands may name as ${NAME}: the point's server and client, any
    node (each by the address the running node's hosts file gives it), ${point.AXIS}."""
    return ["server", "client", *nodes, *(f"point.{axis}" for axis in exp.matrix)]


def placeholder_problems(exp: Experiment, nodes: list[str]) -> list[tuple[tuple, str]]:
    from linklab.measure.command import placeholders
    valid = placeholder_names(exp, nodes)
    problems = []
    for what in ("server", "client"):
        cmd = getattr(exp.tool, what)
        for name in placeholders(cmd) if cmd is not None else []:
            if name not in valid:
                problems.append((("tool", what), f"unknown placeholder ${{{name}}} "
                                                 f"(valid: {', '.join('${' + v + '}' for v in valid)})"))
    for i, cmd in enumerate(exp.build):
        for name in placeholders(cmd):
            problems.append((("build", i), f"${{{name}}}: a build step runs before any lab or point, it has no placeholders"))
    return problems


def point_labs(exp_path: str | Path, exp: Experiment, overrides: tuple[tuple[str, Any], ...] = ()) -> list:
    """The lab at every point of `exp` (its matrix as given: load it with quick= for the quick
    one), with `overrides` (--set) on top and every impairment its timeline's events set, and
    first the lab a sweep brings up before its first point (and puts back after its last): the
    topology with `overrides`. Every lab a sweep of it may build, so that it runs where all of
    them can (linklab/placement.py)."""
    from linklab.lab import build_lab
    tpath = topology_path(Path(exp_path), exp)
    raw = read_yaml(tpath)[0]
    labs = [build_lab(tpath, list(overrides))]
    for point in expand(exp.matrix, exclude=exp.exclude):
        plan = plan_point(exp, raw, point.axes)
        events = [ev.override() for ev in sorted(plan.events, key=lambda e: e.at) if ev.kind == "impair"]
        labs.append(build_lab(tpath, [*plan.overrides, *overrides]))
        if events:
            labs.append(build_lab(tpath, [*plan.overrides, *overrides, *events]))
    return labs
