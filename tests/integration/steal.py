"""The kernel tier's one allowance for the hypervisor under the host: bounded.

A repetition measured while the hypervisor took the host's CPU (host_steal_pct at or above
linklab/measure/disturbance.py's HOST_STEAL_PCT: flagged host_stolen) ran on a slower machine for
a while, and a CPU-bound rate falls with it. A lower bound may give it the steal's share of room,
but never more than CAP: beyond that the bound would say little (at 50 % steal a failover's bound
reaches zero, at 10 % "one balance-rr stream beats one member" is no longer checked), so the
test reports the measurement inconclusive instead of passing or failing it.
"""

from __future__ import annotations

import pytest

from linklab.measure.disturbance import HOST_STEAL_PCT
from linklab.verdict.metrics import num

CAP = 0.10  # the most room steal may take from a lower bound: a tenth of it


def steal_pct(row: dict) -> float | None:
    return num(row.get("host_steal_pct"))


def room(*rows: dict) -> float:
    """The share of a lower bound the steal during these repetitions may take (0 below the flag's
    threshold); the test is inconclusive (skipped, saying why) when any took more than CAP."""
    worst = max((s for r in rows if (s := steal_pct(r)) is not None), default=None)
    if worst is None or worst < HOST_STEAL_PCT:
        return 0.0
    if worst / 100 > CAP:
        pytest.skip(f"inconclusive: the hypervisor took {worst:.0f} % of the host's CPU while this measured "
                    f"(a bound may give steal at most {100 * CAP:.0f} %: tests/integration/steal.py)")
    return worst / 100


def not_stolen(*rows: dict) -> None:
    """For a bound that steal would void (a CPU-bound rate that must beat a link's): the test is
    inconclusive when any of these repetitions was flagged host_stolen."""
    worst = max((s for r in rows if (s := steal_pct(r)) is not None), default=None)
    if worst is not None and worst >= HOST_STEAL_PCT:
        pytest.skip(f"inconclusive: the hypervisor took {worst:.0f} % of the host's CPU while this measured, "
                    "and this bound gives steal no room (tests/integration/steal.py)")


def words(row: dict) -> str:
    """What a failure message says of a row's steal ("-" natively)."""
    return f"steal {row.get('host_steal_pct') or '-'} %"
