"""The verdict's structure (docs/verdicts.md, "Structure"): per point, B against A in what was
measured at all (missing, failed, pre-flight, path MTU); over the run, the flags B's repetitions
carry more often than A's beyond chance."""

from __future__ import annotations

import math
from typing import Any

from linklab.measure.flags import HOST_FLAGS, row_flags
from linklab.results.points import Point
from linklab.results.runs import row_ok
from linklab.verdict import metrics
from linklab.verdict.model import EVERY_POINT, FAIL, HARMLESS, WITHIN, Judgment


def fisher_more(a: int, n_a: int, b: int, n_b: int) -> float:
    """One-sided Fisher's exact test: the chance of B holding at least `b` of the a + b events
    if the n_a + n_b repetitions carried them at random (the same in both arms)."""
    k, n = a + b, n_a + n_b
    total = math.comb(n, k)
    return sum(math.comb(n_b, x) * math.comb(n_a, k - x) for x in range(b, min(k, n_b) + 1)) / total


def flag_counts(pairs: list[tuple[Point, Point]]) -> dict[str, list[tuple[str, int, int, int, int]]]:
    """flag -> [(point, A's reps carrying it, A's reps, B's, B's reps)] at every point where either
    arm carried it (the points that say something about it); host flags are the host's, not the lab's."""
    out: dict[str, list[tuple[str, int, int, int, int]]] = {}
    for p, q in pairs:
        a_flags = [set(row_flags(r)) - HOST_FLAGS for r in p.ok]
        b_flags = [set(row_flags(r)) - HOST_FLAGS for r in q.ok]
        for f in sorted(set().union(*a_flags, *b_flags)):
            out.setdefault(f, []).append((p.label, sum(f in x for x in a_flags), len(a_flags),
                                          sum(f in x for x in b_flags), len(b_flags)))
    return out


def flag_judgment(flag: str, counts: list[tuple[str, int, int, int, int]], alpha: float) -> Judgment:
    """A flag B carries more often than A over the run, beyond chance (Fisher, one-sided): B's new
    flags fail, a flag that went away is harmless."""
    a, n_a, b, n_b = (sum(c[i] for c in counts) for i in (1, 2, 3, 4))
    p_more, p_less = fisher_more(a, n_a, b, n_b), fisher_more(b, n_b, a, n_a)
    verdict = FAIL if p_more < alpha else HARMLESS if p_less < alpha else WITHIN
    where = "; ".join(f"{c[0]} {c[1]}/{c[2]} vs {c[3]}/{c[4]}" for c in counts[:6]) + (" ..." if len(counts) > 6 else "")
    return Judgment(EVERY_POINT, "flag", flag, verdict, a_text=f"in {a} of {n_a} repetitions",
                 b_text=f"in {b} of {n_b} (p = {min(p_more, p_less):.2g}, fails below {alpha:.2g}; {where})")


def _error(row: dict[str, Any]) -> str:
    text = str(row.get("error") or row.get("preflight_problems") or "failed")
    return text if len(text) <= 120 else text[:117] + "..."


def _preflight_failed(row: dict[str, Any]) -> bool:
    return str(row.get("preflight_ok", True)).lower() == "false" or str(row.get("error") or "").startswith("pre-flight")


def state_judgments(p: Point, q: Point) -> list[Judgment]:
    """Failed repetitions and pre-flight: B against A at one point."""
    out: list[Judgment] = []
    a_failed = [r for r in p.rows if not row_ok(r)]
    b_failed = [r for r in q.rows if not row_ok(r)]
    a_pf = [r for r in a_failed if _preflight_failed(r)]
    b_pf = [r for r in b_failed if _preflight_failed(r)]
    if b_pf and not a_pf:
        out.append(Judgment(p.label, "preflight", "pre-flight", FAIL, a_text=f"passed in {len(p.rows)} of {len(p.rows)}",
                         b_text=f"failed in {len(b_pf)} of {len(q.rows)}: {_error(b_pf[0])}"))
    elif a_pf and not p.ok and q.ok:
        out.append(Judgment(p.label, "preflight", "pre-flight", FAIL, a_text=f"failed: {_error(a_pf[0])}",
                         b_text=f"passed in {len(q.ok)} of {len(q.rows)}"))
    bad = [r for r in b_failed if not _preflight_failed(r)]
    if bad and (not a_failed or (not q.ok and p.ok)):
        out.append(Judgment(p.label, "failed", "repetitions", FAIL, a_text=f"{len(p.rows)} of {len(p.rows)} measured",
                         b_text=f"{len(bad)} of {len(q.rows)} failed: {_error(bad[0])}"))
    if not p.ok and a_failed and not a_pf and q.ok:
        out.append(Judgment(p.label, "baseline", "point", FAIL, a_text=f"every repetition failed: {_error(a_failed[0])}",
                         b_text="cannot be judged against it"))
    return out


def structure_judgments(p: Point, q: Point) -> list[Judgment]:
    """The path MTU pre-flight found: B against A at one point."""
    a_mtu = {int(v) for r in p.ok if (v := metrics.num(r.get("path_mtu"))) is not None}
    b_mtu = {int(v) for r in q.ok if (v := metrics.num(r.get("path_mtu"))) is not None}
    if not (a_mtu and b_mtu):
        return []
    return [Judgment(p.label, "path_mtu", "path MTU", FAIL if b_mtu != a_mtu else WITHIN,
                  a_text=", ".join(map(str, sorted(a_mtu))), b_text=", ".join(map(str, sorted(b_mtu))))]
