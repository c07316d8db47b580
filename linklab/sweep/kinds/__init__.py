"""Tool kinds: what a sweep runs as a repetition's traffic, one module each (`tool.kind` in an
experiment). A kind keeps the point's servers up (`serve`), makes each repetition's traffic
(`traffic`: prepare, start, wait, row, as linklab/sweep/measure_rep.py drives it) and stops what
it started (`stop`). linklab's own probes (ping, CPU, counters, flags) run beside any kind.

To add a kind: a module here with a subclass of base.Kind, named in KINDS, and its name in
linklab/sweep/experiment.py's TOOL_KINDS (what the experiment schema accepts). `flows` is not
named by tool.kind: an experiment's `flows:` or `flows` axis chooses it (kind_of).
"""

from __future__ import annotations

from linklab.errors import UsageError
from linklab.sweep.kinds.base import Kind
from linklab.sweep.kinds.command import CommandKind
from linklab.sweep.kinds.flows import FlowsKind
from linklab.sweep.kinds.iperf3 import Iperf3Kind

KINDS: dict[str, type[Kind]] = {k.name: k for k in (Iperf3Kind, CommandKind, FlowsKind)}


def kind_for(name: str) -> type[Kind]:
    try:
        return KINDS[name]
    except KeyError:
        raise UsageError(f"unknown tool kind {name!r} (valid: {', '.join(KINDS)})") from None


def kind_of(exp) -> str:
    """The kind an experiment's repetitions run: `flows` when it has flows: (or a flows axis),
    else its tool's."""
    if getattr(exp, "flows", None) or "flows" in (getattr(exp, "matrix", None) or {}):
        return FlowsKind.name
    return getattr(getattr(exp, "tool", None), "kind", "iperf3")
