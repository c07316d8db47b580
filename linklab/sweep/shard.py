"""Splitting a sweep's points into parts: shards for a batch scheduler (`--shard K/N`: a
Kubernetes Indexed Job, a Slurm array, a CI matrix) and units of work for a cluster.

Points that share the outermost axes stay together: the matrix puts the axis that is expensive
to change first (linklab/sweep/matrix.py: bond_mode rebuilds the bond), so a group of points
with the same leading values costs one such reconfiguration on whichever machine measures it.
Groups use the shortest prefix of axes that gives at least as many groups as there are parts
(each point is its own group at the limit). Pure and deterministic: every machine of an
Indexed Job computes the same split from the same experiment, with no coordination.
"""

from __future__ import annotations

import re
from typing import Sequence

from linklab.errors import UsageError
from linklab.sweep.matrix import Point, render_value

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse_shard(text: str) -> tuple[int, int]:
    """`K/N` (1 <= K <= N) -> (K, N); bad input is a UsageError."""
    m = _SHARD.match(text or "")
    if not m:
        raise UsageError(f"--shard {text!r}: expected K/N, e.g. 1/4 (the K-th of N parts, counted from 1)")
    k, n = int(m.group(1)), int(m.group(2))
    if not 1 <= k <= n or n > 10000:
        raise UsageError(f"--shard {text}: K must be from 1 to N, and N at most 10000")
    return k, n


def groups(points: Sequence[Point], at_least: int = 1) -> list[list[Point]]:
    """The points in groups sharing their leading axis values, in matrix order: the shortest
    prefix of axes giving `at_least` groups (or every point alone when none does)."""
    if not points:
        return []
    depth = max(len(p.axes) for p in points)
    for length in range(1, depth + 1):
        found = _group_by_prefix(points, length)
        if len(found) >= at_least:
            return found
    return [[p] for p in points]


def _group_by_prefix(points: Sequence[Point], length: int) -> list[list[Point]]:
    by_key: dict[tuple[str, ...], list[Point]] = {}
    for p in points:  # dicts keep insertion order: groups come in the order of their first point
        key = tuple(f"{a}={render_value(v)}" for a, v in list(p.axes.items())[:length])
        by_key.setdefault(key, []).append(p)
    return list(by_key.values())


def split(points: Sequence[Point], n: int) -> list[list[Point]]:
    """`points` in n parts of whole groups, balanced by point count: each group in turn goes to
    the part with the fewest points so far (the lowest-numbered on a tie)."""
    if n < 1:
        raise ValueError(f"cannot split into {n} parts")
    parts: list[list[Point]] = [[] for _ in range(n)]
    for group in groups(points, n):
        min(parts, key=len).extend(group)  # min() returns the first of equals: deterministic
    return [sorted(part, key=lambda p: p.index) for part in parts]


def shard(points: Sequence[Point], k: int, n: int) -> list[Point]:
    """The k-th (from 1) of n parts of `points`."""
    return split(points, n)[k - 1]
