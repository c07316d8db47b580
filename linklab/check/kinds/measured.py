"""What measured checks share: a flow (iperf3, as a sweep's repetition runs it: linklab/sweep/
measure_rep.py) repeated `repeat` times with the probes a kind needs, and a judgement of the
repetitions' median against bounds widened by a stated `tolerance`.

A measured check is never failed by the emulator. Each repetition carries the flags a sweep's
does (linklab/measure/disturbance.py): core_saturated (a core of the lab's kernel >= 85 % busy),
host_disturbed / host_stolen (other work or the hypervisor took the host's CPU), emulator_burst
(drops beyond the path's bottleneck), emulator_rtt (the emulator's own round trip dominates). A
median inside its bounds passes whatever the flags. A limit moves a figure one way only (`worse`:
it holds a throughput down, it stretches a delay, an outage or a loss), so a flagged repetition
beyond the bound on that side might have been inside, and one on the other side is as good as
any. A median outside its bounds fails when it would be outside even with every such repetition
taken as inside; otherwise it is inconclusive: the measurement cannot tell a wrong lab from a
slow emulator. A repetition the policy for a busy host measures again (linklab/
measure/flags.py: one flagged host_disturbed, as a sweep does) is measured once more, the first
attempt kept aside ("disturbed" in the raw output); a second attempt flagged so stands.

Repetitions stop once the verdict is decided (`decided`): none failed to measure, and more than
half of the `repeat` planned are inside the bounds (the median of all of them would be inside,
whatever the rest measured: a pass), or more than half are surely beyond the same bound (the
median would be beyond it: a fail; a
student's wrong lab and a selftest's broken stage wait for no more). Otherwise all of them run.

One flow, several checks: checks of one run that send the same flow (the same iperf3 command
between the same hosts, no fault or probe of their own; a bond's member shares and the goodput
of 16 streams, say) are judged on the same repetitions. The later one measures only what it
still lacks to decide.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, Field

from linklab import units
from linklab.check.kinds.base import FAIL, INCONCLUSIVE, PASS, Check, Context, Judgement, Kind, node_problem, ping_target
from linklab.errors import LinklabError
from linklab.measure import flags
from linklab.measure.iperf3 import Iperf3Client
from linklab.measure.stats import percentile
from linklab.model.resolved import Lab

if TYPE_CHECKING:
    from linklab.measure.probes.base import Probe

# Flags that can hold a throughput figure down (a saturated core, a starved or slowed emulator,
# drops the emulator's bursts caused). queue_dropped is not one: a full queue is the link's.
THROUGHPUT_LIMITS = frozenset({"core_saturated", "emulator_burst"}) | flags.HOST_FLAGS
DELAY_LIMITS = frozenset({"emulator_rtt", "core_saturated"}) | flags.HOST_FLAGS
PORT = 5301  # the checks' iperf3 servers, apart from a sweep's (5201...)
IDLE_PINGS, IDLE_INTERVAL_S = 5, 0.2


def _whole_seconds(v):
    s = units.parse_time(v)
    if s != int(s):
        raise ValueError(f"whole seconds (iperf3 takes no fractions), got {v!r}")
    return int(s)


Seconds = Annotated[int, BeforeValidator(_whole_seconds)]


class MeasuredParams(Check):
    src: Annotated[str, Field(alias="from")]
    dst: Annotated[str, Field(alias="to")]
    repeat: Annotated[int, Field(ge=1, le=20)] = 3
    duration: Annotated[Seconds, Field(ge=1, le=120)] = 5
    warmup: Annotated[Seconds, Field(ge=0, le=30)] = 1
    tolerance: Annotated[float, Field(ge=0, le=0.5)] = 0.05  # the bounds widen by this share
    family: Literal[4, 6] = 4
    port: Annotated[int, Field(ge=1024, le=65000)] = PORT


class MeasuredKind(Kind):
    measured = True
    limits: ClassVar[frozenset[str]] = THROUGHPUT_LIMITS
    worse: ClassVar[int] = -1  # the side a limit moves this kind's figure to: -1 lower, 1 higher
    unit: ClassVar[str] = ""  # how a value is shown: rate, time, percent, ratio, share

    # ---- what a kind says -------------------------------------------------------------------
    def metric(self, p: Any, row: dict[str, Any], lab: Lab) -> float | None:
        raise NotImplementedError

    def bounds(self, p: Any, lab: Lab) -> tuple[float | None, float | None]:
        raise NotImplementedError

    def what(self, p: Any) -> str:
        return self.name

    def client(self, p: Any, lab: Lab) -> Iperf3Client:
        return Iperf3Client(server=ping_target(lab, p.dst, p.family), port=p.port, duration=p.duration,
                            ipv6=p.family == 6, omit=p.warmup)

    def extra_probes(self, p: Any, ctx: Context) -> list["Probe"]:
        return []

    def members(self, p: Any, lab: Lab) -> dict[str, list[str]]:
        return {}

    def report_interval(self, p: Any) -> float | None:
        return None

    # ---- shared ---------------------------------------------------------------------------
    def problems(self, p: Any, lab: Lab) -> list[tuple[tuple, str]]:
        out = node_problem(lab, p.src, ("from",), "host") + node_problem(lab, p.dst, ("to",), "host")
        if not out and p.src == p.dst:
            out.append((("to",), "from: and to: are the same node"))
        return out

    def limiting(self, row: dict[str, Any]) -> set[str]:
        """The row's flags that can have held this kind's figure: a core kept busy by the lab's
        own controller and OVS (a hub sends every packet through them) is the lab's, not the emulator's."""
        limited = set(flags.row_flags(row)) & self.limits
        if (row.get("lab_controller_cpu_pct") or 0) >= CONTROLLER_BUSY_PCT:
            limited.discard("core_saturated")
        return limited

    def side(self, p: Any, v: float, lab: Lab) -> int:
        """Where one figure lies against the bounds widened by the tolerance: -1 below, 0 within, 1 above."""
        lo, hi = self.bounds(p, lab)
        return -1 if lo is not None and v < lo * (1 - p.tolerance) else 1 if hi is not None and v > hi * (1 + p.tolerance) else 0

    def inside(self, p: Any, v: float, lab: Lab) -> bool:
        """Whether one figure is within the bounds widened by the tolerance."""
        return self.side(p, v, lab) == 0

    def beyond(self, p: Any, rows: list[dict[str, Any]], lab: Lab, count: int) -> int:
        """The side (-1 below, 1 above the bounds) on which at least `count` of the rows' figures
        lie even with every figure a limit might have moved there taken as inside (module text);
        0 when neither."""
        sure = []
        for row in rows:
            v = self.metric(p, row, lab)
            if v is None or row.get("error"):
                continue
            side = self.side(p, v, lab)
            if not (side == self.worse and self.limiting(row)):
                sure.append(side)
        return next((side for side in (-1, 1) if sure.count(side) >= count), 0)

    def decided(self, p: Any, rows: list[dict[str, Any]], lab: Lab) -> str | None:
        """The verdict the repetitions so far decide whatever the rest measure (module text), or
        None: PASS when more than half of the `repeat` planned are inside the bounds, FAIL when more
        than half are surely beyond the same bound (`beyond`)."""
        if any(row.get("error") for row in rows):
            return None
        sides = [self.side(p, v, lab) for row in rows if (v := self.metric(p, row, lab)) is not None]
        majority = p.repeat // 2 + 1
        if sides.count(0) >= majority:
            return PASS
        if self.beyond(p, rows, lab, majority):
            return FAIL
        return None

    def show(self, v: float | None) -> str:
        if v is None or (isinstance(v, float) and math.isinf(v)):
            return "none" if v is None else "never"
        if self.unit == "rate":
            return f"{v / 1e6:.3g} Mbit/s"
        if self.unit == "time":
            return units.format_time(v) if v else "0 s"
        if self.unit == "percent":
            return f"{v:.3g} %"
        return f"{v:.3g}"

    def expected(self, p: Any, lab: Lab) -> str:
        lo, hi = self.bounds(p, lab)
        band = (f">= {self.show(lo)}" if hi is None else f"<= {self.show(hi)}" if lo is None
                else f"{self.show(lo)}-{self.show(hi)}")
        return f"{self.what(p)} {band} (median of {p.repeat}, ±{p.tolerance * 100:g} %)"

    def flow(self, p: Any, ctx: Context) -> tuple | None:
        """What this check sends, as a key two checks of the same flow share (from, to, family,
        iperf3's whole command line, its report interval); None when its measurement does more than
        send the flow (a fault, a probe of its own): such a flow is its check's alone."""
        if self.extra_probes(p, ctx):
            return None
        return (p.src, p.dst, p.family, self.report_interval(p), tuple(self.client(p, ctx.lab).argv()))

    def observe(self, p: Any, ctx: Context) -> dict[str, Any]:
        """Up to `repeat` repetitions of the check's flow, fewer once the verdict is decided. A
        flow an earlier check of this run already measured (the same command, the same bond
        members counted) is not sent again: its repetitions are this check's first ones."""
        key = self.flow(p, ctx)
        members = self.members(p, ctx.lab)
        shared = ctx.flows.get(key) if key is not None else None
        if shared is not None and shared.serves(members):
            rows, aside = list(shared.rows[:p.repeat]), list(shared.disturbed)
            ctx.say(f"  {p.id}: judged on the {len(rows)} repetitions of {shared.by}'s flow, the same flow")
            if len(rows) < p.repeat and not self.decided(p, rows, ctx.lab):
                self._measure(p, ctx, members, rows, aside)
            return {"rows": rows, "disturbed": aside, "flow_of": shared.by}
        rows, aside = [], []
        self._measure(p, ctx, members, rows, aside)
        if key is None:
            ctx.flows.clear()  # a fault or a probe of its own may have moved the lab since
        elif key not in ctx.flows:
            ctx.flows[key] = Flow(p.id, members, rows, aside)
        return {"rows": rows, "disturbed": aside}

    def _measure(self, p: Any, ctx: Context, members: dict[str, list[str]], rows: list[dict[str, Any]],
                 aside: list[dict[str, Any]]) -> None:
        """Repetitions appended to `rows` until `repeat` or a decided verdict; those measured
        while the host was busy to `aside`."""
        # Imported here: what a measurement runs is not what every command's parser needs.
        from linklab.measure.probes.base import Repetition
        from linklab.measure.traffic import Traffic, start_servers
        from linklab.sweep.measure_rep import measure
        interval = self.report_interval(p)
        servers = start_servers(ctx.handle, p.dst, p.src, p.port, 1, interval)
        try:
            k, again = len(rows), False
            while k < p.repeat:
                ctx.say(f"  {p.id}: repetition {k + 1} of {p.repeat}")
                rep = Repetition(ctx.handle, p.src, p.dst, p.family, omit=p.warmup)
                client = self.client(p, ctx.lab)
                traffic = Traffic(client, processes=None, parallel="threads", timeout=p.duration + p.warmup + 30)
                try:
                    row = measure(rep, traffic, self.probes(p, ctx, members))[1]
                except LinklabError as e:
                    row = {"error": str(e)}
                if not again and flags.measure_again(row):
                    # The host's doing, not the lab's (measure/flags.py): measured once more, as a
                    # sweep does; the disturbed attempt is kept aside, not judged.
                    ctx.say(f"  {p.id}: repetition {k + 1} measured while the host was busy: once more")
                    aside.append(row)
                    again = True
                    continue
                rows.append(row)
                k, again = k + 1, False
                if k < p.repeat and (done := self.decided(p, rows, ctx.lab)):
                    ctx.say(f"  {p.id}: {done} after {k} of {p.repeat} repetitions (the median is decided)")
                    break
        finally:
            servers.stop()
            ctx.changed()

    def probes(self, p: Any, ctx: Context, members: dict[str, list[str]]) -> list[Probe]:
        """One repetition's probes, fresh (they keep state): the queues and bond members, the
        kind's own, the lab's controller CPU, the lab's cores, the host's CPU in the lab VM, then
        the judgement that flags the row. The idle RTT (5 pings, ~1 s before the flow) only where
        a flag the kind reads needs it (emulator_rtt)."""
        from linklab import placement
        from linklab.measure.probes.counters import QueueCounters
        from linklab.measure.probes.cpu import CpuLoad
        from linklab.measure.probes.judgement import Disturbance
        from linklab.measure.probes.ping import IdlePing
        queues = QueueCounters(members)
        probes: list[Probe] = [IdlePing(IDLE_PINGS, IDLE_INTERVAL_S)] if "emulator_rtt" in self.limits else []
        probes += [queues, *self.extra_probes(p, ctx), ControllerCpu(_controller_pids(ctx)), CpuLoad()]
        host_cpu = placement.host_cpu_probe()
        if host_cpu is not None:
            probes.append(host_cpu)
        return [*probes, Disturbance(queues)]

    def judge(self, p: Any, raw: dict[str, Any], lab: Lab) -> Judgement:
        rows = raw.get("rows") or []
        values = [v for row in rows if not row.get("error") and (v := self.metric(p, row, lab)) is not None]
        errors = sorted({row["error"] for row in rows if row.get("error")})
        limited = sorted({f for row in rows for f in self.limiting(row)})
        evidence = "; ".join(dict.fromkeys(e for row in rows for e in _evidence(row, self.limiting(row))))
        lab_busy = [row for row in rows if "core_saturated" in flags.row_flags(row)
                    and "core_saturated" not in self.limiting(row)]
        if not values:
            return Judgement(FAIL, "not measured: " + ("; ".join(errors) or "no repetition"),
                             values={"values": [], "errors": errors})
        med = percentile(values, 50)
        lo, hi = self.bounds(p, lab)
        ok = self.inside(p, med, lab)
        shown = f"{self.show(med)} (median of {len(values)}: {', '.join(self.show(v) for v in values)})"
        if errors:
            shown += f"; {len(errors)} failed: {errors[0]}"
        # Beyond its bounds: failed when more than half the figures are surely beyond (`beyond`).
        sure = not ok and bool(self.beyond(p, rows, lab, len(values) // 2 + 1))
        verdict = PASS if ok and not errors else FAIL if sure or not limited else INCONCLUSIVE
        detail = f"limited by {', '.join(limited)}: {evidence}" if verdict == INCONCLUSIVE else (
            f"flagged {', '.join(limited)}" if limited else "")
        if raw.get("flow_of"):
            detail = "; ".join(x for x in (detail, f"measured with {raw['flow_of']}'s flow (the same command)") if x)
        if lab_busy:
            detail = "; ".join(x for x in (detail, f"a core was busy with the lab's own OpenFlow controller and OVS "
                                           f"({max(r.get('lab_controller_cpu_pct') or 0 for r in lab_busy):.0f} % of a core): "
                                           "the lab's bottleneck, not the emulator's") if x)
        return Judgement(verdict, shown, detail, {"values": values, "median": med, "low": lo, "high": hi,
                                                  "flags": limited, "errors": errors})


@dataclass
class Flow:
    """A flow a check measured, kept for the run's later checks of the same flow."""

    by: str  # the check that measured it
    members: dict[str, list[str]]  # node -> the bond members whose counters its rows hold
    rows: list[dict[str, Any]]
    disturbed: list[dict[str, Any]]

    def serves(self, members: dict[str, list[str]]) -> bool:
        """Whether its rows hold the member shares a check of `members` reads: shares are of
        the members counted, so the same members per node, not more."""
        return all(sorted(self.members.get(node) or []) == sorted(m) for node, m in members.items() if m)


def _evidence(row: dict[str, Any], names: set[str]) -> list[str]:
    """The evidence of these of a row's flags."""
    return [e for n, e in flags.row_flags(row).items() if n in names]


# % of one core the lab's controllers and OVS daemons used in the window from which a saturated core is theirs
CONTROLLER_BUSY_PCT = 50.0


# The lab's own daemons that forward its packets in software: a switch's OVS and its controller.
FORWARDING_ROLES = ("controller", "ovs-vswitchd")


def _controller_pids(ctx: Context) -> list[int]:
    """The lab's OpenFlow controllers and OVS daemons, as its state record lists them."""
    return [int(r["pid"]) for r in (ctx.handle.record.get("owned") or {}).get("processes", [])
            if r.get("role") in FORWARDING_ROLES and r.get("pid")]


class ControllerCpu:
    """A probe (linklab/measure/probes/base.py): the CPU the lab's own OpenFlow controllers and
    OVS daemons used during the window, % of one core (their /proc/PID/stat, all threads), for
    `limiting`: a hub sends every packet up to its controller and back down through ovs-vswitchd."""

    phase = "cpu_sampling"

    def __init__(self, pids: list[int]):
        self.pids, self.t0, self.ticks0 = pids, 0.0, 0

    def _ticks(self) -> int:
        from linklab.measure.cpu import parse_pid_stat
        total = 0
        for pid in self.pids:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    st = parse_pid_stat(f.read())
            except (OSError, ValueError):
                continue
            total += st.utime + st.stime
        return total

    def before(self, rep) -> None:
        self.t0, self.ticks0 = time.monotonic(), self._ticks()

    def start(self, rep) -> None:
        pass

    def finish(self, rep) -> None:
        pass

    def row(self, rep) -> dict[str, Any]:
        from linklab.measure.cpu import CLK_TCK
        if not self.pids:
            return {}
        secs = time.monotonic() - self.t0
        return {"lab_controller_cpu_pct": round(100.0 * (self._ticks() - self.ticks0) / CLK_TCK / secs, 1) if secs > 0 else None}


