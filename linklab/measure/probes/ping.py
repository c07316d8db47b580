"""Round-trip time from the client to the server: idle, before the window, and under load,
through it (flent's RRUL view)."""

from __future__ import annotations

import subprocess
from typing import Any

from linklab import procs, runner
from linklab.measure import switch_evidence
from linklab.measure.ping import Ping, PingResult, under_load_row
from linklab.measure.probes.base import Probe, Repetition

# One probe every 100 ms through the throughput window, counted from 1 s after iperf3's omitted
# seconds (slow start is not the steady state a queue settles to).
LOAD_INTERVAL_S = 0.1
LOAD_SKIP_S = 1.0


class IdlePing(Probe):
    """`count` pings `interval` apart before the window; its first reply apart from the rest
    (with a controller, the first packet crosses it)."""

    phase = "idle_ping"

    def __init__(self, count: int, interval: float):
        self.count, self.interval = count, interval
        self.result: PingResult | None = None

    def before(self, rep: Repetition) -> None:
        ping = Ping(target=rep.target, count=self.count, interval=self.interval, family=rep.family)
        res = runner.run(ping.argv(), netns=rep.client_ns, timeout=self.count * self.interval + 15, check=False)
        rep.raw["ping.txt"] = res.stdout + res.stderr
        self.result = ping.parse_result(res)

    def row(self, rep: Repetition) -> dict[str, Any]:
        if self.result is None:
            return {}
        return {**self.result.row("ping_"), **switch_evidence.first_packet_row(self.result.rtts_ms)}


class LoadPing(Probe):
    """A ping through the whole window; the row keeps the replies past slow start, beside the
    idle RTT of `idle` (which runs before the window)."""

    phase = "window_tail"

    def __init__(self, idle: IdlePing, duration: float):
        self.idle, self.duration = idle, duration
        self.proc: subprocess.Popen | None = None
        self.out = self.err = ""

    def start(self, rep: Repetition) -> None:
        ping = Ping(target=rep.target, count=max(int((self.duration + rep.omit) / LOAD_INTERVAL_S) - 1, 1),
                    interval=LOAD_INTERVAL_S, family=rep.family)
        self.proc = runner.start(ping.argv(), netns=rep.client_ns, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def finish(self, rep: Repetition) -> None:
        if self.proc is None:
            return
        out, err = procs.communicate(self.proc, timeout=15)
        self.out, self.err = out.decode(errors="replace"), err.decode(errors="replace")
        rep.raw["ping-load.txt"] = self.out + self.err

    def row(self, rep: Repetition) -> dict[str, Any]:
        if self.proc is None:
            return {}
        return under_load_row(Ping.parse(self.out, self.err), LOAD_INTERVAL_S, rep.omit + LOAD_SKIP_S, self.idle.result)
