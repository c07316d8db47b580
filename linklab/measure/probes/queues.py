"""Queue evidence through the window (`measure: [queue]`): every shaped direction's queue
sampled ten times a second, over raw netlink in a thread (one qdisc dump per namespace per
sample, no process), into queues.json; the row keeps the bottleneck's summary
(linklab/measure/queue_evidence.py)."""

from __future__ import annotations

import threading
import time
from typing import Any

from linklab import fsutil
from linklab.linux import netlink, xstats
from linklab.measure import queue_evidence
from linklab.measure.probes.base import Probe, Repetition
from linklab.measure.probes.ping import LOAD_SKIP_S


class QueueSampler(Probe):
    phase = "counters"

    def __init__(self, interval: float = queue_evidence.SAMPLE_INTERVAL_S):
        self.interval = interval
        # "node/ifname" -> (namespace, ifindex, the kind of qdisc that holds its queue, rate as run)
        self.directions: dict[str, tuple[str, int, str, float]] = {}
        self.samples: dict[str, list[queue_evidence.Sample]] = {}
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None
        self.opened = 0.0

    def before(self, rep: Repetition) -> None:
        index: dict[str, dict[str, int]] = {}
        for e in rep.lab.egress_queues():
            q = e.queue
            if q is None or not q.rate_bps or not q.queue_holder:
                continue
            ns = rep.handle.ns(e.end.node)
            if ns not in index:
                index[ns] = {x["ifname"]: x["index"] for x in netlink.links(ns)}
            self.directions[f"{e.end.node}/{e.end.ifname}"] = (ns, index[ns][e.end.ifname], q.queue_holder, q.rate_bps)
        self.samples = {key: [] for key in self.directions}

    def start(self, rep: Repetition) -> None:
        if not self.directions:
            return
        self.opened = rep.opened
        self.thread = threading.Thread(target=self._run, name="queue-sampler", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        namespaces = sorted({d[0] for d in self.directions.values()})
        next_at = time.monotonic()
        while not self.stop.is_set():
            for ns in namespaces:
                try:
                    dump = netlink.qdiscs(ns)
                except OSError as e:  # kept, and the row says how many samples there are
                    self.errors.append(f"{ns}: {e}")
                    continue
                t = round(time.monotonic() - self.opened, 3)
                for key, (where, ifindex, holder, _) in self.directions.items():
                    if where != ns:
                        continue
                    q = next((x for x in dump if x["ifindex"] == ifindex and x["kind"] == holder and x["stats"]), None)
                    if q is not None:
                        marks, delay = xstats.decode(holder, q["stats"].get("xstats"))
                        self.samples[key].append(queue_evidence.Sample(
                            t=t, backlog_bytes=q["stats"].get("backlog", 0), backlog_pkts=q["stats"].get("qlen", 0),
                            drops=q["stats"].get("drops", 0), marks=marks, delay_s=delay))
            # A late sample is not caught up with a burst of others: the series stays evenly spaced.
            next_at += self.interval
            if next_at <= time.monotonic():
                next_at = time.monotonic() + self.interval
            self.stop.wait(max(0.0, next_at - time.monotonic()))

    def finish(self, rep: Repetition) -> None:
        if self.thread is None:
            return
        self.stop.set()
        self.thread.join(timeout=5)
        rep.raw["queues.json"] = fsutil.json_text({
            "interval_s": self.interval, "errors": self.errors[:20],
            "directions": {key: {"holder": holder, "rate_bps": rate,
                                 "summary": queue_evidence.direction(self.samples[key], rate, rep.omit + LOAD_SKIP_S),
                                 "series": [[s.t, s.backlog_bytes, s.backlog_pkts, s.drops, s.marks, s.delay_s]
                                            for s in self.samples[key]]}
                           for key, (_, _, holder, rate) in self.directions.items()},
            "series_columns": ["t_s", "backlog_bytes", "backlog_pkts", "drops", "marks", "delay_s"]})

    def row(self, rep: Repetition) -> dict[str, Any]:
        if self.thread is None:
            return {}
        return queue_evidence.row({key: queue_evidence.direction(self.samples[key], rate, rep.omit + LOAD_SKIP_S)
                                   for key, (_, _, _, rate) in self.directions.items()})
