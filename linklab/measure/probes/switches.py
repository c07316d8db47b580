"""What the window did inside the lab's switches (packet-ins, datapath misses, port drops,
over-MTU drops: linklab/measure/switch_evidence.py), from the backend's switch counters before
and after. Learned forwarding is forgotten first, so the idle ping's first packet crosses the
controller again."""

from __future__ import annotations

import json
from typing import Any

from linklab.measure import switch_evidence
from linklab.measure.probes.base import Probe, Repetition


class SwitchCounters(Probe):
    phase = "switch_counters"

    def __init__(self) -> None:
        self.at_open: dict[str, Any] = {}

    def before(self, rep: Repetition) -> None:
        rep.handle.backend.reset_forwarding(rep.lab)
        self.at_open = rep.handle.backend.switch_counters(rep.lab)

    def row(self, rep: Repetition) -> dict[str, Any]:
        after = rep.handle.backend.switch_counters(rep.lab)
        rep.raw["switch_counters.json"] = json.dumps({"before": self.at_open, "after": after}, indent=1)
        return switch_evidence.row(self.at_open, after)
