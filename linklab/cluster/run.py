"""The driver of a sweep on a Ray cluster: units of work out, repetitions back into the store.

Scheduling is the driver's: each unit (a group of points sharing the outermost axes,
linklab/sweep/shard.py) is a Ray generator task asking for {"linklab": 1}, so a node measures
one unit at a time, alone. Each repetition is recorded in the driver's results store as it
arrives (atomically, raw files included: the same command resumes). Ray's own retries are off:
a unit whose worker died is submitted again by the driver, without what it had recorded, and
the death is written into the evidence of the point it was measuring; a point whose unit dies
MAX_TRIES times is recorded failed, with that evidence. Nothing is recorded twice.
"""

from __future__ import annotations

import collections
import contextlib
import os
import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from linklab.cluster import leftovers, session, worker
from linklab.cluster.address import Address, import_ray, parse, require_ray
from linklab.errors import UsageError
from linklab.results.manifest import placement_name
from linklab.results.store import ResultsStore
from linklab.sweep import dry
from linklab.sweep import session as sweep_session
from linklab.sweep.session import Options, load_for, open_results, select_points
from linklab.sweep.experiment import Experiment, topology_path
from linklab.sweep.matrix import Point
from linklab.sweep.progress import Progress
from linklab.sweep.shard import groups

MAX_TRIES = 3  # a point whose unit dies this many times is recorded failed
IN_FLIGHT_PER_SLOT = 2  # units submitted ahead, so a node that frees up starts the next at once
_DONE = object()
# A worker's manifest fields the cluster's run keeps its own of.
OWN_FIELDS = ("fingerprint", "fingerprint_parts", "run", "created_at", "complete", "finished_at", "command", "points",
              "point_ids", "points_total", "shard", "timing", "cluster", "workers", "format", "experiment_file")


@dataclass(frozen=True)
class _DriverFault:
    error: BaseException


@dataclass
class Unit:
    id: int
    todo: list[tuple[str, int]]  # (point id, rep), in matrix order
    worker: dict[str, Any] | None = None
    gen: Any = None
    last_event: float = field(default_factory=time.monotonic)


def run_on_cluster(exp_path: str | Path, opts: Options, cluster: str, allow: set[str], say=print,
                   loaded: Experiment | None = None) -> ResultsStore:
    """`loaded`: the experiment file as the caller loaded it (session.load_for)."""
    address = parse(cluster)  # bad input before anything starts
    require_ray()
    started = time.monotonic()
    exp = load_for(exp_path, opts, loaded)
    points = select_points(exp, opts)
    parts = _fingerprint_parts(exp_path, exp, opts)
    store, complete = open_results(exp, parts, lambda fp: _manifest(exp_path, exp, points, fp, opts, parts, address),
                                   opts, say)
    if complete:
        return store
    # A local cluster's driver records itself: killed, `linklab clean` finds its nodes' labs (leftovers.py).
    recorded = leftovers.driver_recorded(leftovers.cluster_dir()) if address.local_nodes else contextlib.nullcontext()
    with store.lock(), recorded, session.connect(address, say) as slots:
        say(f"linklab: {slots} nodes can host a lab; results stream into {store.path}")
        driver = Driver(exp, points, store, _spec(exp_path, opts, address), slots, allow, say)
        sweep_session.fill(store, exp, points, opts, driver, started, say)
    say(f"linklab: {exp.name}: {len(store.rows())} repetitions recorded ({len(store.failed())} failed) "
        f"by {len(driver.workers)} workers in {store.path}")
    return store


def _spec(exp_path, opts: Options, address: Address) -> dict[str, Any]:
    """What a worker needs to run its units (sent with each)."""
    local_state = leftovers.cluster_dir() if address.local_nodes else None
    return {"workload": "dry" if opts.dry_run is not None else "lab", "dry_run_s": opts.dry_run,
            "experiment": str(Path(exp_path).resolve()), "quick": opts.quick, "repetitions": opts.repetitions,
            "cwd": os.getcwd(), "state_root": str(local_state) if local_state else None}


def _fingerprint_parts(exp_path, exp: Experiment, opts: Options) -> dict[str, Any]:
    if opts.dry_run is not None:
        return {**dry.fingerprint_parts(exp_path, exp, opts), "cluster": True}
    # The workers' placement and scale are known once they report (Driver._check_lab).
    return sweep_session.fingerprint_parts(exp_path, topology_path(exp_path, exp), opts, {"overrides": [], "cluster": True})


def _manifest(exp_path, exp: Experiment, points: list[Point], fingerprint: str, opts: Options, parts: dict,
              address: Address) -> dict[str, Any]:
    dry_run = opts.dry_run is not None
    return sweep_session.manifest(exp_path, exp, points, fingerprint, opts, parts, {
        "scale": None, "placement": dry.PLACEMENT if dry_run else None, "dry_run_s": opts.dry_run,
        "cluster": {"address": str(address), "engine": "ray"}, "workers": []})


class Driver:
    """The session's executor (session.Executor) on a Ray cluster: units of points sent to the
    nodes that can host a lab, up to IN_FLIGHT_PER_SLOT each, their repetitions recorded as they
    stream back; a unit a worker lost is sent again (at most MAX_TRIES per point)."""

    def __init__(self, exp: Experiment, points: list[Point], store: ResultsStore, spec: dict[str, Any], slots: int,
                 allow: set[str], say):
        self.exp, self.store, self.spec, self.slots, self.allow, self.say = exp, store, spec, slots, allow, say
        self.at_once = slots
        self.points = points
        self.by_id = {p.id: p for p in points}
        self.events: queue.Queue = queue.Queue()
        self.evidence: dict[str, list[str]] = collections.defaultdict(list)
        self.tries: dict[str, int] = collections.Counter()
        self.workers: dict[str, dict[str, Any]] = {w["node_id"]: w for w in store.manifest.get("workers") or []}
        self.lab: dict[str, Any] | None = None
        self.progress: Progress | None = None
        self._next_id = 0
        self._task = None
        self._streams = True
        self._shown: tuple = ()

    def measure(self, points: list[Point], todo: dict[str, list[int]], progress: Progress) -> None:
        self.progress = progress
        pending = collections.deque(u for u in (self._unit([(p.id, r) for p in g for r in todo[p.id]])
                                                for g in groups(points, self.slots)) if u.todo)
        running: dict[int, Unit] = {}
        try:
            while pending or running:
                while pending and len(running) < IN_FLIGHT_PER_SLOT * self.slots:
                    unit = pending.popleft()
                    running[unit.id] = self._submit(unit)
                unit_id, msg = self.events.get()
                if isinstance(msg, _DriverFault):
                    raise msg.error
                unit = running[unit_id]
                if msg is _DONE or isinstance(msg, BaseException):
                    del running[unit_id]
                    again = self._ended(unit, None if msg is _DONE else msg)
                    if again is not None:
                        pending.appendleft(again)
                else:
                    self._handle(unit, msg)
        finally:
            self._cancel(running.values())

    def finish(self) -> dict[str, Any]:
        workers = sorted(self.workers.values(), key=lambda w: w["node_id"])
        self.teardown()  # whatever happened: no node keeps a lab (or a lab VM) for nothing
        return {"workers": workers}

    # -- units out -----------------------------------------------------------------------

    def _unit(self, todo: list[tuple[str, int]]) -> Unit:
        self._next_id += 1
        return Unit(self._next_id, todo)

    def _submit(self, unit: Unit) -> Unit:
        ray = import_ray()
        if self._task is None:
            # Through Ray Client (ray://) a generator task cannot stream: the unit's messages come
            # back together when it ends.
            self._streams = not ray.util.client.ray.is_connected()
            fn = worker.run_unit if self._streams else worker.run_unit_whole
            # No CPU asked (a node's CPUs are the lab's), one lab per node; Ray's retries off: the
            # driver resubmits, so that it knows which point a dead worker was measuring.
            self._task = ray.remote(fn).options(num_cpus=0, resources={worker.RESOURCE: 1}, max_retries=0,
                                                retry_exceptions=False)
        unit.gen = self._task.remote(self.spec, unit.todo, {pid: self.by_id[pid] for pid, _ in unit.todo})
        threading.Thread(target=self._pump, args=(unit,), daemon=True, name=f"unit-{unit.id}").start()
        return unit

    def _pump(self, unit: Unit) -> None:
        """One unit's messages into the driver's queue, in order; its end (or its error) last."""
        ray = import_ray()
        try:
            if self._streams:
                for ref in unit.gen:
                    self.events.put((unit.id, ray.get(ref)))
            else:
                for msg in ray.get(unit.gen):
                    self.events.put((unit.id, msg))
            self.events.put((unit.id, _DONE))
        except ray.exceptions.RayError as e:  # the worker died, or the unit raised: the driver decides
            self.events.put((unit.id, e))
        except BaseException as e:  # the driver's own fault: not a unit's, raised in the driver
            self.events.put((unit.id, _DriverFault(e)))

    def _cancel(self, units) -> None:
        ray = import_ray()
        for unit in units:
            try:
                ray.cancel(unit.gen, force=True)
            except Exception:  # already ended, or the cluster is gone: nothing left to stop
                pass

    # -- messages back -------------------------------------------------------------------

    def _handle(self, unit: Unit, msg: dict[str, Any]) -> None:
        kind = msg.get("kind")
        now = time.monotonic()
        if kind == "hello":
            unit.worker = msg["worker"]
            self.workers.setdefault(unit.worker["node_id"], {**unit.worker, "placement": None, "scale": None})
            if self.spec["workload"] == "dry":
                self._check_lab(unit, {"placement": dry.PLACEMENT, "scale": None})
            unit.last_event = now
        elif kind == "lab":
            self._check_lab(unit, msg)
        elif kind == "rep":
            self._record(unit, msg)
            self.progress.finish_unit(now - unit.last_event)
            unit.last_event = now
        self._show_running(unit)

    def _show_running(self, unit: Unit) -> None:
        left = self._left(unit)
        who = _worker_name(unit.worker) if unit.worker else None
        if who:
            self.progress.set_running(who, self.by_id[left[0][0]].key if left else None)
            shown = (self.progress.done, tuple(sorted(self.progress.running.items())))
            if shown != self._shown:  # a line when something changed, not per message
                self._shown = shown
                self.progress.refresh()

    def _check_lab(self, unit: Unit, msg: dict[str, Any]) -> None:
        """Provenance of the worker's lab, and one placement and scale for the whole run unless
        --allow-different says otherwise (compare refuses runs that differ in them too)."""
        info = self.workers[unit.worker["node_id"]]
        info.update(placement=msg.get("placement"), scale=msg.get("scale"))
        if self.lab is None:
            self.lab = {"placement": msg.get("placement"), "scale": msg.get("scale")}
            if self.spec["workload"] != "dry":
                # What the first worker's sweep says of its lab and tools (what report and compare
                # read, as of a run on one machine); this run's own identity and selection stay.
                theirs = {k: v for k, v in (msg.get("manifest") or {}).items() if k not in OWN_FIELDS}
                self.store.update_manifest(**{**theirs, **self.lab})
            return
        diff = []
        if placement_name(self.lab["placement"]) != placement_name(msg.get("placement")) and "placement" not in self.allow:
            diff.append(f"placement {placement_name(self.lab['placement'])} vs {placement_name(msg.get('placement'))}")
        if self.lab["scale"] != msg.get("scale") and "scale" not in self.allow:
            diff.append(f"scale {self.lab['scale']} vs {msg.get('scale')}")
        if diff:
            raise UsageError(f"worker {_worker_name(unit.worker)}'s lab differs from the first worker's: {'; '.join(diff)}",
                             hint="give every worker the same placement and scale, or accept it with "
                                  "--allow-different " + ",".join(d.split()[0] for d in diff))

    def _left(self, unit: Unit) -> list[tuple[str, int]]:
        done = self.store.completed()
        return [t for t in unit.todo if t not in done]

    def _record(self, unit: Unit, msg: dict[str, Any], error: str | None = None) -> None:
        pid, rep = msg["point"], msg["rep"]
        if self.store.done(pid, rep):  # never twice, whatever a worker sends
            self.progress.log(f"  {self.by_id[pid].key} rep {rep} is recorded already: not again")
            return
        raw, row = dict(msg.get("raw") or {}), dict(msg.get("row") or {})
        if unit.worker:
            row.update(worker_node=unit.worker["node_id"], worker_host=unit.worker["hostname"])
        if error:
            row["error"] = error
        if self.evidence[pid]:
            row.update(worker_failures=len(self.evidence[pid]), worker_failure_evidence=" | ".join(self.evidence[pid]))
            raw["worker_failures.txt"] = "\n".join(self.evidence[pid]) + "\n"
        self.store.record(self.by_id[pid], rep, raw, row, msg.get("tool") or {})
        self.store.write_table()
        w = self.workers.get(row.get("worker_node"))
        if w is not None:
            w["repetitions"] = w.get("repetitions", 0) + 1

    # -- a unit's end --------------------------------------------------------------------

    def _ended(self, unit: Unit, error: BaseException | None) -> Unit | None:
        """The unit to submit again, if it left work undone."""
        if unit.worker:
            self.progress.set_running(_worker_name(unit.worker), None)
        left = self._left(unit)
        if not left:
            return None
        point = left[0][0]  # units measure in order: the first point not recorded was running
        where = _worker_name(unit.worker) if unit.worker else "a worker not yet started"
        what = _describe(error) if error is not None else "the unit ended without measuring it"
        self.evidence[point].append(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} try {self.tries[point] + 1} on {where}: {what}")
        self.tries[point] += 1
        self.progress.log(f"  {self.by_id[point].key}: {what} on {where}; "
                          + ("measuring it again" if self.tries[point] < MAX_TRIES else f"recorded failed after {MAX_TRIES} tries"))
        if self.tries[point] >= MAX_TRIES:
            for pid, rep in [t for t in left if t[0] == point]:
                self._record(unit, {"point": pid, "rep": rep, "row": {"point_key": self.by_id[pid].key}},
                             error=f"failed on each of {MAX_TRIES} tries: {what}")
                self.progress.finish_unit(0.0)
            left = [t for t in left if t[0] != point]
        return self._unit(left) if left else None

    def teardown(self) -> None:
        """Each node's lab taken down (its lab VM stopped) once the sweep is over."""
        if self.spec["workload"] == "dry" or not self.workers:
            return
        ray = import_ray()
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # late: start-up cost (import_ray)
        task = ray.remote(worker.teardown)
        alive = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}  # a resumed run's earlier workers may be gone
        refs = [task.options(num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False)).remote(self.spec)
                for node_id in self.workers if node_id in alive]
        for ref in refs:
            try:
                self.say(f"  {ray.get(ref, timeout=360)}")
            except Exception as e:  # the node is gone; its lab went with it or waits for `linklab down`
                self.say(f"  a worker's lab was not taken down: {_describe(e)}")


def _worker_name(info: dict[str, Any]) -> str:
    return f"{info['hostname']}/{info['node_id'][:8]}"


def _describe(error: BaseException) -> str:
    """One line on why a unit ended: the Ray exception's kind, and its first line."""
    text = str(error).strip().splitlines()
    cause = getattr(error, "cause", None)
    kind = type(error).__name__ if cause is None else f"{type(error).__name__}: {type(cause).__name__}"
    first = next((t for t in text if t.strip()), "")
    return f"{kind}: {first[:300]}"
