"""The client's and server's TCP/UDP stack counters over the window (what nstat prints, read
from each namespace's /proc/net: linklab/measure/nstat.py)."""

from __future__ import annotations

from typing import Any

from linklab import fsutil
from linklab.measure import nstat
from linklab.measure.probes.base import Probe, Repetition

SIDES = ("client", "server")


class StackCounters(Probe):
    phase = "counters"

    def __init__(self) -> None:
        self.at_open: dict[str, dict[str, int]] = {}

    def _read(self, rep: Repetition) -> dict[str, dict[str, int]]:
        return {"client": nstat.read_counters(rep.client_ns), "server": nstat.read_counters(rep.server_ns)}

    def before(self, rep: Repetition) -> None:
        self.at_open = self._read(rep)

    def row(self, rep: Repetition) -> dict[str, Any]:
        after = self._read(rep)
        row: dict[str, Any] = {}
        for side in SIDES:
            d = nstat.delta(self.at_open[side], after[side])
            rep.raw[f"nstat-{side}.json"] = fsutil.json_text(d)
            row.update(nstat.row(d, prefix=f"{side}_nstat_"))
        return row
