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


def judges_delay_under_load(name: str) -> bool:
    """Whether exercise `name` has a check of delay beside load (an `rtt` check with `load:`): its
    selftest runs alone in the kernel tier, not beside another (pyproject.toml's `concurrent`
    promises no bound a busy neighbour could break). A neighbour's load on the emulator flags
    the RTTs it measures, and a flagged RTT above its bound is never sure (linklab/check/kinds/
    measured.py): the variant that must fail for its queue's delay ends inconclusive."""
    return any(c.kind == "rtt" and getattr(c, "load", None) for c in exercise.load(name).checks.checks)
