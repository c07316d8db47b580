"""The kernel's own counters around the window, one netlink socket per node: every qdisc's
(what each queue sent and dropped: the disturbance flags read them), with `members` the bond
members' link counters (how a bond spread its traffic), with `paths` named links' (how traffic
spread over parallel links: a bond's members, equal-cost routes)."""

from __future__ import annotations

import json
from typing import Any

from linklab import fsutil
from linklab.measure import counters, disturbance
from linklab.measure.probes.base import Probe, Repetition


class QueueCounters(Probe):
    phase = "counters"

    def __init__(self, members: dict[str, list[str]] | None = None, paths: dict[str, tuple[str, str]] | None = None):
        # node -> its bond members whose spread is measured (the client's and server's, usually)
        self.members = {node: m for node, m in (members or {}).items() if m}
        # path label -> (node, ifname): the end whose counters count the path (a link's first end)
        self.paths = dict(paths or {})
        self.links_before: dict[str, counters.Counters] = {}
        self.queues_before: dict[str, dict[str, int]] = {}
        self.drops: dict[str, int] = {}  # "node/dev kind handle" -> packets dropped in the window
        self.sent: dict[str, int] = {}  # ... and sent

    def snapshot(self, rep: Repetition) -> tuple[dict[str, counters.Counters], dict[str, dict[str, int]]]:
        """Every node's qdisc counters, keyed "node/dev kind handle", and the bond members' link
        counters of the nodes in `members` (the point's `qdisc.txt` keeps tc's own text of the
        same qdisc counters)."""
        links: dict[str, counters.Counters] = {}
        queues: dict[str, dict[str, int]] = {}
        for node in rep.lab.nodes:
            wanted = [*(self.members.get(node.name) or []),
                      *(ifname for n, ifname in self.paths.values() if n == node.name)]
            c, q = counters.snapshot(rep.handle.ns(node.name), dict.fromkeys(wanted))
            if wanted:
                links[node.name] = c
            queues.update((f"{node.name}/{key}", v) for key, v in q.items())
        return links, queues

    def before(self, rep: Repetition) -> None:
        self.links_before, self.queues_before = self.snapshot(rep)

    def row(self, rep: Repetition) -> dict[str, Any]:
        links_after, queues_after = self.snapshot(rep)
        self.drops = disturbance.drops_delta(self.queues_before, queues_after)
        self.sent = disturbance.sent_delta(self.queues_before, queues_after)
        rep.raw["qdisc-drops.json"] = fsutil.json_text({"dropped": self.drops, "after": queues_after})
        row: dict[str, Any] = {"qdisc_dropped_pkts": disturbance.leaf_drops(self.drops)}
        deltas = {node: counters.delta(self.links_before[node], links_after[node]) for node in links_after}
        if self.members:
            rep.raw["bond_counters.json"] = json.dumps({n: deltas[n] for n in self.members}, indent=1)
            for node in self.members:
                side = "client" if node == rep.client else "server"
                mine = {ifname: deltas[node][ifname] for ifname in self.members[node]}
                row.update(counters.spread_row(counters.spread(mine), prefix=f"{side}_member_"))
        if self.paths:
            # tx: from the link's first end toward its second; rx: back
            paths = {label: deltas[node][ifname] for label, (node, ifname) in self.paths.items()}
            rep.raw["link_counters.json"] = json.dumps(paths, indent=1)
            row.update(counters.spread_row(counters.spread(paths), prefix="path_"))
            row.update({f"path_tx_bytes_{label}": d["tx_bytes"] for label, d in paths.items()})
        return row
