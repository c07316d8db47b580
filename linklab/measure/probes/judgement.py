"""The last step of a repetition: was it measuring the link, or the emulator and its neighbours?
And what held a TCP flow below what its path carries? Flags with their evidence
(linklab/measure/disturbance.py), from the row the probes before it filled (per-core CPU, the
host's other work, the idle RTT, the sender's tcp_info) and the queues' drops; beside them, the
round trip the path asks for, the goodput its links allow, and the queues the sender's traffic
first meets."""

from __future__ import annotations

from typing import Any

from linklab.measure import disturbance
from linklab.measure.probes.base import Probe, Repetition
from linklab.measure.probes.counters import QueueCounters
from linklab.model import paths
from linklab.model.resolved import Lab


class Disturbance(Probe):
    phase = "parse"

    def __init__(self, queues: QueueCounters, mss: int | None = None):
        self.queues, self.mss = queues, mss  # mss: iperf3's -M, when the point sets one

    def row(self, rep: Repetition) -> dict[str, Any]:
        asked = paths.asked_rtt_s(rep.lab, rep.client, rep.server)
        asked_ms = None if asked is None else round(asked * 1e3, 4)
        # What TCP could deliver if only the links bounded it; the bond counters, when measured,
        # say how many members of the sender's and receiver's bonds carried the flows.
        active = {k: v for k in ("client_member_tx_active", "server_member_rx_active")
                  if isinstance(v := rep.row.get(k), int)}
        theory = paths.tcp_goodput_bps(rep.lab, rep.client, rep.server, rep.family, self.mss,
                                       active.get("client_member_tx_active"), active.get("server_member_rx_active"))
        row: dict[str, Any] = {"path_asked_rtt_ms": asked_ms,
                               "path_goodput_bps": None if theory is None else round(theory)}
        row.update(disturbance.flags({**rep.row, **row}, self.queues.drops, lossy_ifaces(rep.lab),
                                     sent=self.queues.sent, asked_rtt_ms=asked_ms,
                                     beyond=paths.beyond_bottleneck(rep.lab, rep.client, rep.server),
                                     theory_bps=theory))
        row.update(queue_row(rep.lab, rep.client))
        return row


def lossy_ifaces(lab: Lab) -> set[str]:
    """Interfaces whose impairment asks for loss: their drops are the experiment, not a flag."""
    return {f"{e.end.node}/{e.end.ifname}" for e in lab.egress_queues() if e.queue is not None and e.queue.loss_pct}


def queue_row(lab: Lab, node: str, prefix: str = "client_") -> dict[str, Any]:
    """The queues the sender's traffic first meets (its own egress), as resolved: bound in ms,
    which qdisc holds it, and what decided it (linklab/model/queues.py)."""
    qs = [e.queue for e in lab.egress_queues(node) if e.queue is not None and e.queue.queue_s is not None]
    uniq = lambda xs: ";".join(sorted({str(x) for x in xs}))  # noqa: E731 -- one value per member, usually equal
    return {f"{prefix}queue_ms": uniq(round(q.queue_s * 1e3, 3) for q in qs) or None,
            f"{prefix}queue_holder": uniq(q.queue_holder for q in qs) or None,
            f"{prefix}queue_source": uniq(q.queue_source for q in qs) or None}
