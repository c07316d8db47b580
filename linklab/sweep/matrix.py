"""An experiment matrix expanded into points: the cartesian product of its axes.

The first axis is the outermost loop, so an axis that is expensive to change (bond_mode
means rebuilding the bond) belongs first and changes least often. Every point has a
canonical key (what it measures, readable) and an id derived from it (a directory name):
the same matrix always gives the same ids, which is what lets a rerun find its results.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

MAX_ID = 100
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")
# Keys in a matrix mapping that are not axes (the experiment file may carry them inline).
RESERVED = ("exclude", "include")


@dataclass(frozen=True)
class Point:
    index: int
    # axis -> value in matrix order; kept out of the hash (a dict is unhashable), key covers it.
    axes: dict = field(hash=False)
    key: str
    id: str


def render_value(value: Any) -> str:
    """A value as it appears in a key: strings bare, everything else as canonical JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


def point_key(axes: Mapping[str, Any]) -> str:
    return ",".join(f"{name}={render_value(v)}" for name, v in axes.items())


def point_id(index: int, axes: Mapping[str, Any], width: int = 3) -> str:
    """`p003-<slug>-<hash8>`, at most MAX_ID characters and safe as a file name.

    The slug is for people (and may be cut short); the hash of the full key keeps ids
    unique and stable; the zero-padded index keeps `ls` in matrix order.
    """
    digest = hashlib.sha256(point_key(axes).encode()).hexdigest()[:8]
    prefix = f"p{index:0{width}d}-"
    slug = "_".join(f"{_safe(name)}-{_safe(render_value(v))}" for name, v in axes.items())
    room = MAX_ID - len(prefix) - len(digest) - 1
    slug = slug[:room].strip("-_.")
    return f"{prefix}{slug}-{digest}" if slug else f"{prefix}{digest}"


def _safe(text: str) -> str:
    return _UNSAFE.sub("-", text).strip("-")


def expand(matrix: Mapping[str, Any], order: list[str] | None = None, *,
           exclude: Iterable[Mapping[str, Any]] | None = None,
           include: Iterable[Mapping[str, Any]] | None = None) -> list[Point]:
    """All points of `matrix` (axis -> list of values), first axis outermost.

    `order` puts the named axes first (the rest follow in matrix order). `exclude` drops
    product points matching every value in one entry; `include` appends points, each giving
    a value for every axis (values need not be in the axis lists). Both may also be given as
    `exclude:` / `include:` keys inside `matrix`. A point that would appear twice (an include
    repeating a product point) appears once.
    """
    matrix = dict(matrix)
    exclude = list(exclude or []) + list(matrix.pop("exclude", None) or [])
    include = list(include or []) + list(matrix.pop("include", None) or [])
    names = _axis_order(matrix, order)
    for name in names:
        values = matrix[name]
        if not isinstance(values, (list, tuple)):
            raise ValueError(f"axis {name!r}: expected a list of values, got {type(values).__name__}")
        if not values:
            raise ValueError(f"axis {name!r} has no values")
        # Compared as rendered in keys: 1500 and "1500" would give two points with one key.
        rendered = [render_value(v) for v in values]
        if len(set(rendered)) != len(rendered):
            dup = next(r for r in rendered if rendered.count(r) > 1)
            raise ValueError(f"axis {name!r} lists the value {dup} more than once")
    for entry in exclude:
        _check_axes(entry, names, "exclude", need_all=False)
    for entry in include:
        _check_axes(entry, names, "include", need_all=True)

    combos = [dict(zip(names, values)) for values in itertools.product(*(matrix[n] for n in names))]
    combos = [c for c in combos if not any(_matches(c, e) for e in exclude)]
    combos += [{n: entry[n] for n in names} for entry in include]

    seen: set[str] = set()
    unique: list[tuple[dict, str]] = []
    for axes in combos:
        key = point_key(axes)
        if key not in seen:
            seen.add(key)
            unique.append((axes, key))
    width = max(3, len(str(len(unique) - 1)))
    return [Point(index=i, axes=axes, key=key, id=point_id(i, axes, width)) for i, (axes, key) in enumerate(unique)]


def _axis_order(matrix: Mapping[str, Any], order: list[str] | None) -> list[str]:
    if not matrix:
        raise ValueError("the matrix has no axes")
    order = list(order or [])
    unknown = [n for n in order if n not in matrix]
    if unknown:
        raise ValueError(f"order names unknown axes {unknown} (axes: {list(matrix)})")
    if len(set(order)) != len(order):
        raise ValueError(f"order names an axis twice: {order}")
    return order + [n for n in matrix if n not in order]


def _check_axes(entry: Mapping[str, Any], names: list[str], what: str, *, need_all: bool) -> None:
    if not isinstance(entry, Mapping) or not entry:
        raise ValueError(f"{what}: each entry must be a non-empty mapping of axis -> value, got {entry!r}")
    unknown = [k for k in entry if k not in names]
    if unknown:
        # A typo here would silently exclude (or include) nothing.
        raise ValueError(f"{what} entry {dict(entry)} names unknown axes {unknown} (axes: {names})")
    missing = [n for n in names if n not in entry]
    if need_all and missing:
        raise ValueError(f"include entry {dict(entry)} lacks a value for axes {missing}")


def _matches(axes: Mapping[str, Any], entry: Mapping[str, Any]) -> bool:
    # Compare as JSON so 1500 and "1500", or 1 and True, are not confused.
    return all(_canon(axes[k]) == _canon(v) for k, v in entry.items())


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
