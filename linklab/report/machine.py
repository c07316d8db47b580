"""How fast was the new run's machine next to the baseline's? Read off the runs' own CPU figures.

Under software emulation (the lab VM on TCG) the CPU a packet costs scales with the host that
emulates it. Measured with E1 quick, 2026-11-25, against its baseline (recorded on another
machine of the same kind): on this machine the same code as the baseline's, and today's code
twice, put every point's busiest core and iperf3 CPU at 1.13-2.1x the baseline's (median over
the points 1.27, 1.30, 1.48; throughput 1 % or less apart except at balance-rr, MTU 450, 20
streams, the point the emulator's CPU limits: -1 to -5.3 %); a CI machine measured ~1.45x and
-4.3 % there. Same-machine quiet reruns move the level by a few per cent (the noise floor's
CPU scores, noise.py). A CPU band around the baseline's percentages would fail every run on a
slower machine; none around them would catch nothing.

So the CPU metrics (metrics.Metric.machine == "cost") are judged *relative to the run's level*:
the level is the median, over every point and CPU metric both runs measured above MIN_CPU_PCT,
of log(new mean / baseline mean). Each new CPU mean is divided by exp(level) before its band
judges it: a point whose CPU rose beyond the others still fails. The level itself is judged
(compare.py: rule cpu_level): beyond MACHINE_SPREAD either way it fails — no machine of the kind
differs that much, something in the lab does. What this cannot catch, and says: a CPU change at
every point alike smaller than MACHINE_SPREAD.

What the level moves besides CPU differs from point to point (one TCP flow at a small MTU loses
a fifth of its rate on a machine half as fast, 20 flows at a large MTU nothing): where the
baseline has a measured speed response (speed.py, BASELINE/speed.json) each point gets the room
it measurably needs on top of the general allowances below.

On another machine (level beyond OTHER_MACHINE) the points do not all move alike: after
dividing by the level, a point's CPU still sat up to 1.65x the baseline's (802.3ad, MTU 9200, 20
streams: 2.2x on a machine whose level was 1.33; 1.26-2.2x in four runs of the same code on one
machine), more than same-machine reruns move. So the CPU metrics get CPU_ROOM more room
upwards there, and the rates the emulator's speed can move (Metric.machine == "rate":
throughput) RATE_ALLOWANCE, or RATE_PER_LOG_LEVEL x |ln level| where that is more, on the side a
machine of that speed moves them (a slower one: down), never on the other. Both are fractions of
the baseline mean, added to the noise floor (bands.py).

A machine twice as slow (measured 2026-11-25, E1 quick, same code as the baseline's: level x1.89
and x1.95 in two sweeps) moves more than CPU:
- TCP's RTT and window (Metric.machine == "queue") include the emulator's own queueing (softirq
  backlogs, veth), which grows faster than the cost per packet: iperf3's RTT at balance-rr rose
  x2.9-3.6, about level**2 (3.6-3.8), its mean window up to x7 where the baseline's spread was
  already wide. Their band gets level**2 - 1 of the baseline mean more room on the slower side
  (1 - level**2 on a faster machine's, whose level is below 1), nothing on the other, on top of the whole band (the
  machine moves the value itself, however wide the baseline's own spread made the band).
- A point whose busiest core was already busy runs out of CPU: at MTU 450 with 20 streams the
  baseline's busiest core was 64 %, x1.95 is 125 %, and throughput fell 13 %. Throughput's room
  below on a slower machine is the larger of RATE_ALLOWANCE and 1 - SATURATED_PCT / (the
  baseline's busiest core x level): what the core the point needs can still give it.
- `core_saturated` appears where the busiest core, brought back to the baseline's speed (÷ level),
  would not have been saturated: the CPU bands (relative to the level) judge such a point instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import median
from typing import Iterable

from linklab.measure.disturbance import HOST_STEAL_PCT
from linklab.report import metrics

MIN_CPU_PCT = 5.0        # pairs below this on either side are left out: near idle, ratios are noise
# The level may be x3 or /3 at most: machines of this kind measured x1.27-2.16 the baseline
# machine's level (2026-11-25/26, E1 quick, same code), a CI machine x2.16 and x2.10 in one run.
MACHINE_SPREAD = 3.0
OTHER_MACHINE = 1.15     # beyond x1.15 (or /1.15) the run is taken to be on another machine
RATE_ALLOWANCE = 0.08    # throughput's extra room then (measured: -5.3 % at most), on one side ...
# ... growing with the level: at x1.9-2.16 (this machine kind, 2026-11-25/26, E1 quick, nothing
# changed, the hypervisor stealing up to a third of the host) single points lost 12-15 % in
# single runs (802.3ad MTU 450 and balance-rr MTU 1500, one stream), 0.2 x ln(level) = 13-15 %.
RATE_PER_LOG_LEVEL = 0.2
CPU_ROOM = 0.8           # CPU's extra room then, upwards (measured: a point 1.65x above the level)
SATURATED_PCT = 100.0    # a core cannot be busier: a point needing more loses throughput in proportion


@dataclass(frozen=True)
class Level:
    log: float            # median log ratio new/baseline of the CPU metrics; 0.0 with no pairs
    pairs: int            # how many point x metric pairs it is the median of

    @property
    def factor(self) -> float:
        return math.exp(self.log)

    @property
    def other_machine(self) -> bool:
        return self.pairs > 0 and abs(self.log) > math.log(OTHER_MACHINE)

    @property
    def beyond_machines(self) -> bool:
        return self.pairs > 0 and abs(self.log) > math.log(MACHINE_SPREAD)

    @property
    def slower(self) -> bool:
        return self.log > 0

    def words(self) -> str:
        return f"x{self.factor:.2f} the baseline's (median of {self.pairs} point x metric pairs)"


NONE = Level(0.0, 0)


def level(pairs: Iterable[tuple[float, float]]) -> Level:
    """(baseline mean, new mean) of each CPU metric at each point -> the run's CPU level."""
    logs = [math.log(n / b) for b, n in pairs if b >= MIN_CPU_PCT and n >= MIN_CPU_PCT]
    return Level(median(logs), len(logs)) if logs else NONE


def room(kind: str, lv: Level) -> tuple[float, float]:
    """(below, above): the extra room a metric of this machine kind ("cost", "rate", "queue", "") gets
    in a run at level `lv`, as fractions of the baseline mean."""
    if not lv.other_machine:
        return 0.0, 0.0
    if kind == "cost":
        return 0.0, CPU_ROOM
    if kind == "rate":
        return (rate_allowance(lv), 0.0) if lv.slower else (0.0, rate_allowance(lv))
    if kind == "queue":
        return (0.0, lv.factor ** 2 - 1) if lv.slower else (1 - lv.factor ** 2, 0.0)
    return 0.0, 0.0


def rate_allowance(lv: Level) -> float:
    """Throughput's extra room on another machine, on the side its speed moves it."""
    return max(RATE_ALLOWANCE, RATE_PER_LOG_LEVEL * abs(lv.log)) if lv.other_machine else 0.0


def stolen_room(steal_pct: float | None) -> float:
    """Throughput's room below at a point measured while the hypervisor under the host took
    `steal_pct` % of the host's cores (host_steal_pct, flagged host_stolen from HOST_STEAL_PCT): that
    share of the rate. Measured on CI-like runs (2026-11-26, E1 quick at level x1.91): -23 % at
    23.7 % steal (balance-rr MTU 1500, one stream), -26 % at 25.4 % (MTU 450), -18 % at ~35 %."""
    return steal_pct / 100 if steal_pct is not None and steal_pct >= HOST_STEAL_PCT else 0.0


def row_stolen_room(row: dict) -> float:
    """stolen_room() of one results row, from the host_steal_pct it recorded ("" or absent: none)."""
    return stolen_room(metrics.num(row.get("host_steal_pct")))


def cpu_bound_room(lv: Level, busiest_core_pct: float | None) -> float:
    """Throughput's room below (a fraction of the baseline mean) on a slower machine at a point
    whose busiest core was `busiest_core_pct` busy in the baseline: the share of the rate that a
    core saturated at that speed can no longer carry (0 where it still has room)."""
    if not lv.other_machine or not lv.slower or not busiest_core_pct:
        return 0.0
    return max(0.0, 1 - SATURATED_PCT / (busiest_core_pct * lv.factor))


def saturated_here_only(lv: Level, busiest_core_pct: float | None, saturated_at_pct: float) -> bool:
    """A core saturated on this slower machine that, at the baseline's speed, would not have been."""
    return (lv.other_machine and lv.slower and busiest_core_pct is not None
            and busiest_core_pct / lv.factor < saturated_at_pct)
