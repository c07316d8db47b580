"""Which tier selftests each shipped exercise: the host tier (tests/integration/host/
test_exercises_native.py) those whose labs the host's kernel builds natively, the kernel tier
(tests/integration/kernel/test_checks.py) the others: each exactly once. Decided as `linklab check
--selftest` decides where it runs (placement.lacking of what the exercise's labs need, exercise.labs),
against the host's kernel: its own natively, the one it recorded when it booted the lab VM inside
it (placement.host_has). Read at collection time: the same machine splits them the same way in
both tiers."""

from __future__ import annotations

from pathlib import Path

from linklab import placement
from linklab.check import exercise

ROOT = Path(__file__).resolve().parents[2]
EXERCISES = sorted(p.parent.name for p in (ROOT / "exercises").glob("*/exercise.yaml"))


def host_lacks(name: str) -> list[str]:
    """The kernel modules exercise `name`'s labs need that the host's kernel lacks (none: its
    selftest runs natively)."""
    return placement.lacking(placement.kernel_needs(exercise.labs(exercise.load(name))), placement.host_has)


def split() -> tuple[list[str], list[str]]:
    """(the exercises the host runs natively, those that need the lab VM), each sorted."""
    lacks = {name: host_lacks(name) for name in EXERCISES}
    return [n for n in EXERCISES if not lacks[n]], [n for n in EXERCISES if lacks[n]]


def judged_alone(name: str) -> bool:
    """Whether a stage of exercise `name` must fail a measured check (a goodput, a delay under
    load, an outage): its selftest runs alone in the kernel tier, not beside another
    (pyproject.toml's `concurrent` promises no bound a busy neighbour could break). A neighbour's
    load on the emulator flags the figures it measures, and a flagged figure beyond its bound on
    the side that load pushes it to is never sure (linklab/check/kinds/measured.py): the stage
    that must fail it ends inconclusive (bond_hash's goodput of one member of two, 0.5 of theory
    against 0.8, did so beside sdn_learning's selftest; bufferbloat's delay under load before it)."""
    from linklab.check.kinds import REGISTRY
    loaded = exercise.load(name)
    ex = loaded.exercise
    must_fail = set(ex.start.fails).union(*(v.fails for v in ex.variants))
    return any(c.id in must_fail and REGISTRY[c.kind].measured for c in loaded.checks.checks)
