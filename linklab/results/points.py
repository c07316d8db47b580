"""Rows grouped into matrix points, and how points are named.

A point's label names what distinguishes it from the other points of the run: an axis that is
the same everywhere is left out, and a `bond` axis whose values share a mode (e.g. two
balance-xor settings that differ only in xmit_hash_policy) shows the option that differs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from linklab.measure.flags import quiet as quiet_rows, row_flags
from linklab.results.runs import Run, row_ok


@dataclass
class Point:
    index: int
    id: str
    axes: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)  # every repetition, failed ones too
    labels: dict[str, str] = field(default_factory=dict)     # axis -> distinguishing text

    @property
    def ok(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if row_ok(r)]

    @property
    def quiet(self) -> list[dict[str, Any]]:
        """Measured repetitions on a quiet host: flagged neither host_disturbed nor host_stolen
        (linklab/measure/flags.py)."""
        return quiet_rows(self.ok)

    @property
    def failed(self) -> int:
        return len(self.rows) - len(self.ok)

    @property
    def flags(self) -> dict[str, int]:
        """Disturbance flags (linklab/measure/disturbance.py) -> how many of the point's measured
        repetitions carry each: such a point may measure the emulator or its neighbours."""
        out: dict[str, int] = {}
        for r in self.ok:
            for name in row_flags(r):
                out[name] = out.get(name, 0) + 1
        return out

    @property
    def label(self) -> str:
        """Every axis that varies in the run, e.g. "802.3ad mtu=1500 streams=20"."""
        return " ".join(self.labels.values()) or "(one point)"

    def key(self) -> tuple[tuple[str, str], ...]:
        """Matches the same point in another run: by parameters, not by order."""
        return key_of(self.axes)


def key_of(axes: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """A point's key (Point.key) from its axes, as a run or a sweep's plan has them."""
    return tuple(sorted((a, canonical(v)) for a, v in axes.items()))


def canonical(value: Any) -> str:
    value = decode(value)
    return json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else str(value)


def decode(value: Any) -> Any:
    """A matrix value as recorded: JSON text (from a CSV) back into its mapping."""
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def axis_value(row: dict[str, Any], axis: str) -> Any:
    """An axis (or derived key) of a row: the row's own column, its `axes` mapping when the
    store keeps them apart, or a field of a mapping-valued axis named with an underscore
    (`bond_mode` reads `bond.mode`)."""
    axes = row.get("axes") if isinstance(row.get("axes"), dict) else {}
    for source in (axes, row):
        if axis in source:
            return decode(source[axis])
    if f"tool.{axis}" in row:  # a tool setting the experiment fixed rather than swept (store: tool.*)
        return decode(row[f"tool.{axis}"])
    head, _, tail = axis.partition("_")
    if tail:
        for source in (axes, row):
            parent = decode(source.get(head))
            if isinstance(parent, dict) and tail in parent:
                return parent[tail]
    return None


def group(run: Run) -> list[Point]:
    by_id: dict[str, Point] = {}
    for r in run.rows:
        pid = str(r.get("point_id"))
        if pid not in by_id:
            by_id[pid] = Point(int(r.get("point_index") or 0), pid, {a: axis_value(r, a) for a in run.axes})
        by_id[pid].rows.append(r)
    points = sorted(by_id.values(), key=lambda p: p.index)
    label_points(points)
    return points


def label_points(points: list[Point]) -> None:
    if not points:
        return
    axes = list(points[0].axes)
    for axis in axes:
        values = [p.axes.get(axis) for p in points]
        texts = axis_texts(values)
        varies = len({canonical(v) for v in values}) > 1
        for p, t in zip(points, texts):
            if varies or len(points) == 1:
                p.labels[axis] = t if axis in BARE_AXES or isinstance(decode(p.axes.get(axis)), dict) else f"{axis}={t}"


# Axes whose values say what they are without the axis name ("balance-rr", "tcp").
BARE_AXES = {"bond_mode", "protocol", "cc", "sysctl_profile", "server", "client"}


def value_text(value: Any) -> str:
    """A plain axis value as a cell shows it. A list (a `flows` axis value: one point's flows) by
    its items' names, "up1+down1", or its length where they have none; null: the topology's own
    (e.g. port_mtu)."""
    value = decode(value)
    if isinstance(value, list):
        names = [v.get("name") if isinstance(v, dict) else None for v in value]
        return "+".join(names) if names and all(names) else f"{len(value)} items"
    return "null" if value in (None, "") else str(value)


def axis_texts(values: list[Any]) -> list[str]:
    """Cell texts for one axis's values: short, and different wherever the values differ."""
    values = [decode(v) for v in values]
    if not any(isinstance(v, dict) for v in values):
        texts = [value_text(v) for v in values]
        # two lists of the same names (flows differing elsewhere) stay apart by their JSON
        return texts if len(set(texts)) == len({canonical(v) for v in values}) else [canonical(v) for v in values]
    flat = [_flatten(v) if isinstance(v, dict) else {"": v} for v in values]
    keys = sorted({k for f in flat for k in f})
    differing = [k for k in keys if len({json.dumps(f.get(k), sort_keys=True) for f in flat}) > 1]
    distinct = {canonical(v) for v in values}

    def text(f: dict[str, Any], extra: list[str]) -> str:
        if set(f) == {""}:  # a plain value among mappings
            return "" if f[""] is None else str(f[""])
        head = str(f["mode"]) if "mode" in f else ""
        tail = [f"{k.rsplit('.', 1)[-1]}={f[k]}" for k in extra if k != "mode" and k in f]
        return " ".join(x for x in [head, *tail] if x) or json.dumps(f, sort_keys=True)

    short = [text(f, []) for f in flat]
    if len(set(short)) == len(distinct):
        return short
    return [text(f, differing) for f in flat]


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out
