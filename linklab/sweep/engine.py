"""Run an experiment against its lab: for each point, reconfigure the lab, check it, measure
every missing repetition, record each atomically. Resumable: what is recorded is never redone.
"""

from __future__ import annotations

import platform
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable

from linklab import lab, runner, state
from linklab.errors import LinklabError, StateError
from linklab.handle import LabHandle
from linklab.linux import qdisc_report
from linklab.measure import flags
from linklab.measure.iperf3 import Iperf3Client
from linklab.measure.nstat import Nstat
from linklab.measure.ping import Ping
from linklab.measure.probes.base import Repetition
from linklab.measure.traffic import ServerPool  # noqa: F401 (the iperf3 kind's; tests reach it here)
from linklab.model.resolved import Lab
from linklab.results.store import ResultsStore
from linklab.sweep import build, measure_rep, preflight, session
from linklab.sweep.experiment import Experiment, file_sha256, raw_data, topology_path
from linklab.sweep.kinds import Kind, kind_for, kind_of
from linklab.sweep.matrix import Point, render_value
from linklab.sweep.session import Options, load_for, open_results, select_points
from linklab.sweep.session import refuse_mismatched_resume as refuse_mismatched_resume  # importable from here too
from linklab.sweep.phases import PhaseClock
from linklab.sweep.plan import PointPlan, plan_point
from linklab.sweep.progress import Progress
from linklab.sweep.recording import Recording

RECORDED_SYSCTLS = ("net.ipv4.tcp_congestion_control", "net.ipv4.tcp_reordering", "net.ipv4.tcp_rmem",
                    "net.ipv4.tcp_wmem", "net.core.rmem_max", "net.core.wmem_max", "net.core.netdev_max_backlog",
                    "net.ipv4.tcp_sack", "net.ipv4.tcp_timestamps")


def run(exp_path: str | Path, opts: Options, say=print, order: Order | None = None,
        loaded: Experiment | None = None) -> ResultsStore:
    """Run (or resume) the experiment; returns its results. The caller writes the report.
    `order`: in what order the lab measures the missing repetitions (default: every point in turn);
    `loaded`: the experiment file as the caller loaded it with opts.quick (session.load_for)."""
    started = time.monotonic()
    if opts.dry_run is not None:
        from linklab.sweep import dry
        return dry.run(exp_path, opts, say, loaded)
    exp = load_for(exp_path, opts, loaded)
    tpath = topology_path(exp_path, exp)
    topo_raw = raw_data(tpath)
    lab_name = opts.lab_name or topo_raw["name"]
    record = _lab_for(lab_name, tpath, exp_path, opts, say)
    handle = LabHandle.from_record(record)  # the sweep's one backend, and its one view of the lab
    points = select_points(exp, opts)
    parts = fingerprint_parts(exp_path, tpath, opts, lab.base_overrides(handle.record), handle.record)
    store, complete = open_results(
        exp, parts, lambda fp: session.manifest(exp_path, exp, points, fp, opts, parts, _lab_manifest(exp, tpath, handle, opts, parts)),
        opts, say)
    if complete:
        return store
    workdir = Path(exp_path).resolve().parent
    with store.lock(), state.locked(lab_name):
        # The program the experiment runs, built as this tree has it: once, before any point.
        build.run(exp.build, workdir, store.path / "build", say)
        sweep = Sweep(exp, topo_raw, handle, lab.remember_base_overrides(lab_name), store, Progress(0), say,
                      rerun_disturbed=opts.rerun_disturbed, overrides=tuple(opts.overrides), workdir=workdir)
        session.fill(store, exp, points, opts, LabExecutor(sweep, order or in_turn, started), started, say)
    rows = store.rows()
    failed = sum(1 for r in rows if not r.get("preflight_ok", True) or r.get("error"))
    say(f"linklab: {exp.name}: {len(rows)} repetitions recorded ({failed} failed) in {store.path}")
    failed_reps = store.failed()
    if failed_reps and opts.retry_failed:
        say(f"  the run stays incomplete: rerun the same sweep to retry the {len(failed_reps)} failed "
            "repetitions (--no-retry accepts them as they are)")
    say(f"  table: {store.path / 'results.csv'}")
    return store


@dataclass
class Sweep:
    """What every point of one sweep shares: the experiment, the running lab (a handle
    replaced after each reconfiguration), where results go, and what times and reports them."""

    exp: Experiment
    topo_raw: dict[str, Any]
    handle: LabHandle
    base_overrides: list[tuple[str, Any]]  # the lab's own settings, restored at the end
    store: ResultsStore
    progress: Progress
    say: Any = print
    # Time outside the repetitions' rows (start-up, recording, restoring the lab), kept in the
    # manifest's `timing` so the whole wall time is accounted for.
    totals: PhaseClock = field(default_factory=PhaseClock)
    kind: Kind = field(init=False)  # the tool's kind (linklab/sweep/kinds/): the traffic and its servers
    recording: Recording = field(init=False)  # writes each repetition in the background
    applied: list[tuple[str, Any]] | None = None  # the overrides the lab has now (None: not set yet)
    rerun_disturbed: bool = False  # Options.rerun_disturbed
    overrides: tuple[tuple[str, Any], ...] = ()  # Options.overrides: on top of every point's
    # The path the last passing pre-flight proved (preflight.path_signature): a point whose lab
    # has the same need not prove it again (preflight.run).
    proved: str | None = None
    workdir: Path = field(default_factory=Path.cwd)  # the experiment's directory: a command tool runs there

    def __post_init__(self) -> None:
        self.recording = Recording(self.totals)
        self.kind = kind_for(kind_of(self.exp))(self.workdir, getattr(self.exp, "tool", None))


def _lab_for(lab_name: str, tpath: Path, exp_path, opts: Options, say) -> dict[str, Any]:
    """The state record of the lab the experiment runs against, brought up if it is not: with
    the sweep's --set overrides (placement judged that lab, plan.point_labs: the topology as
    written may need what this kernel lacks, a bond that --set takes out), which stay its own
    settings, the ones the sweep puts it back to."""
    record = state.load(lab_name)
    if record is None:
        shown = "".join(f" --set {path}={render_value(value)}" for path, value in opts.overrides)
        say(f"linklab: lab {lab_name} is not up; building it from {tpath}{shown}")
        lab.up(tpath, name=opts.lab_name, overrides=list(opts.overrides), say=say)
        return state.require(lab_name)
    if Path(record["topology"]["path"]).resolve() != tpath.resolve():
        raise StateError(f"lab {lab_name} is up from {record['topology']['path']}, but {exp_path} needs {tpath}",
                         hint=f"`linklab down {lab_name}` first, or run the sweep against another lab with --lab")
    return record


# In what order the lab measures a session's missing repetitions: given the sweep, its points and
# what each still lacks ({point id: [rep, ...]}), it prepares points (prepare_point) and measures
# repetitions (measure_point_rep) as it chooses. in_turn is the default; `linklab ab`'s arms take
# their steps from stdin (linklab/sweep/stepwise.py).
Order = Callable[["Sweep", list[Point], dict[str, list[int]]], None]


def in_turn(sweep: Sweep, points: list[Point], todo: dict[str, list[int]]) -> None:
    """Every point in matrix order, its repetitions one after another."""
    for point in points:
        if todo[point.id]:
            _run_point(sweep, point, todo[point.id])


@dataclass
class LabExecutor:
    """The session's executor (session.Executor) where the lab is: its points measured in `order`;
    after them the lab put back as the user left it."""

    sweep: Sweep
    order: Order
    started: float  # when the session began: what came before the first repetition is its start-up
    at_once: int = 1

    def measure(self, points: list[Point], todo: dict[str, list[int]], progress: Progress) -> None:
        sweep = self.sweep
        sweep.progress = progress
        for what in sweep.kind.clean(sweep.handle):
            sweep.say(f"  stopped {what} left running by an interrupted sweep")
        sweep.totals.add("startup", time.monotonic() - self.started)
        self.order(sweep, points, todo)

    def finish(self) -> dict[str, Any]:
        sweep = self.sweep
        try:
            sweep.recording.close()  # the last repetition written whole, whatever stopped the loop
        finally:
            sweep.kind.close()
        with sweep.totals.phase("restore"):
            # Put the lab back the way the user left it, whatever happened.
            lab.set_params(sweep.handle.name, sweep.base_overrides, replace=True, lock=False, say=lambda *_: None,
                           backend=sweep.handle.backend)
            lab.forget_base_overrides(sweep.handle.name)
        return {"timing": {"seconds": {k: round(v, 3) for k, v in sweep.totals.seconds.items()},
                           "record_background_s": round(sweep.recording.background_s, 3)}}


@dataclass
class Prepared:
    """A point made ready to measure: the lab set to it and checked, its servers up. Its one-off
    phases sit in `clock` until the first repetition measured after it takes them (phases.py)."""

    point: Point
    plan: PointPlan
    preflight: preflight.Preflight
    info: dict[str, Any]  # the point's columns in every repetition's row
    dumps: str  # the lab's qdiscs as the point found them
    fault_targets: dict[int, Lab]
    clock: PhaseClock


def prepare_point(sweep: Sweep, point: Point) -> Prepared:
    """Set the lab to the point (the sweep's own overrides on top of the point's), check it
    (pre-flight) and read its queues while it settles, then start the servers it wants."""
    exp = sweep.exp
    clock = PhaseClock()
    with clock.phase("reconfigure"):
        plan = plan_point(exp, sweep.topo_raw, point.axes)
        _reconfigure(sweep, sweep.base_overrides + list(plan.overrides) + list(sweep.overrides))
        fault_targets = _fault_targets(sweep, plan.events)
    # The settle is the least time between the lab's change and the window. The pre-flight and
    # the qdisc dump send nothing that is still queued when it ends (a few pings, then reads):
    # they run inside it, and only what is left of it is slept (phases.breakdown counts the three
    # together against the asked settle). Pre-flight polls the bonds until LACP converges anyway.
    settled_at = time.monotonic() + exp.settle
    # Events change the lab during a window: after them the path is proved again (no signature).
    seen = None if plan.events else preflight.path_signature(sweep.handle.lab, plan.client, plan.server, plan.tool.ip)
    with clock.phase("preflight"):
        pf = preflight.run(sweep.handle, plan.client, plan.server, plan.tool.ip,
                           path_proved=seen is not None and sweep.proved == seen)
    sweep.proved = seen if pf.ok else None
    info = {"point_key": point.key, "mtu_varied": plan.mtu_varied, "client": plan.client,
            "server": plan.server, "scale": sweep.handle.lab.scale, "repetitions": exp.repetitions}
    with clock.phase("qdisc_dump"):
        dumps = _qdisc_dumps(sweep.handle)
    sweep.recording.wait()  # the previous point's last repetition: nothing writes while anything measures
    with clock.phase("settle"):
        time.sleep(max(0.0, settled_at - time.monotonic()))
    with clock.phase("server_start"):
        if pf.ok:  # kept up from the previous point when it wants the same servers
            sweep.kind.serve(sweep.handle, plan, plan.events)
    return Prepared(point, plan, pf, info, dumps, fault_targets, clock)


def measure_point_rep(sweep: Sweep, prep: Prepared, rep: int, attempt: int = 1) -> dict[str, Any]:
    """Measure one repetition of a prepared point and record it (in the background); its row.
    `attempt` > 1: a repetition measured again after a disturbed one (its first attempt set aside)."""
    sweep.recording.wait()  # written during the pause
    raw = {"qdisc.txt": prep.dumps, "preflight.json": _json(prep.preflight.__dict__)}
    row: dict[str, Any] = {**prep.info, **prep.preflight.row(), "started_at": time.strftime("%Y-%m-%dT%H:%M:%S")}
    if attempt > 1:
        row["disturbed_attempts"] = attempt - 1
    if not prep.preflight.ok:
        row["error"] = "pre-flight failed: " + "; ".join(prep.preflight.problems)
        sweep.progress.log(f"  pre-flight failed, not measured: {row['error']}")
    else:
        _measure_rep(sweep, prep.plan, prep.fault_targets, prep.clock, raw, row)
    if row.get("error"):
        raw["error.txt"] = row["error"] + "\n"
    # Recording is timed too, but lands in the sweep's totals (manifest `timing`): a row
    # cannot hold the time it takes to write itself. It runs behind the pause, the next
    # point's reconfiguration and settle (linklab/sweep/recording.py).
    raw["timings.json"] = prep.clock.raw()
    row.update(prep.clock.row())
    prep.clock = PhaseClock()
    sweep.recording.submit(partial(_record, sweep.store, prep.point, rep, raw, row, tool_columns(prep.plan, sweep.kind)))
    return row


def measure_settled(sweep: Sweep, prep: Prepared, rep: int) -> dict[str, Any]:
    """One repetition, measured once more if the policy for a busy host says so (linklab/measure/
    flags.py: flagged host_disturbed) and the sweep does (rerun_disturbed: the disturbed attempt
    is kept aside as rep<k>.disturbed-1, a second disturbed attempt stays); the row that stands."""
    row = measure_point_rep(sweep, prep, rep)
    if sweep.rerun_disturbed and flags.measure_again(row):
        sweep.recording.wait()  # moved aside once it is written
        aside = sweep.store.set_aside_failed(prep.point.id, rep, why="disturbed")
        sweep.progress.log(f"  measuring rep {rep} once more: the host was busy ({aside.name} kept)")
        with prep.clock.phase("pause"):
            time.sleep(sweep.exp.pause)
        row = measure_point_rep(sweep, prep, rep, attempt=2)
    return row


def _run_point(sweep: Sweep, point: Point, reps: list[int]) -> None:
    """The local executor's point: prepared, then its repetitions one after another, a pause
    between them."""
    exp = sweep.exp
    prep = prepare_point(sweep, point)
    for i, rep in enumerate(reps):
        if i:
            with prep.clock.phase("pause"):
                time.sleep(exp.pause)
        sweep.progress.start_unit(f"{point.key} rep {rep}/{exp.repetitions}")
        t0 = time.monotonic()
        measure_settled(sweep, prep, rep)
        sweep.progress.finish_unit(time.monotonic() - t0)


def _record(store: ResultsStore, point: Point, rep: int, raw: dict[str, str], row: dict[str, Any],
            tool: dict[str, Any]) -> None:
    store.record(point, rep, raw, row, tool=tool)
    store.write_table()


def _reconfigure(sweep: Sweep, overrides: list[tuple[str, Any]]) -> None:
    """The lab set to `overrides`, unless it has them already (a point that changes only tool
    settings, such as streams or cc, leaves the lab as it is)."""
    if sweep.applied != overrides:
        record = lab.set_params(sweep.handle.name, overrides, replace=True, lock=False, say=lambda *_: None,
                                backend=sweep.handle.backend)
        sweep.handle = sweep.handle.with_record(record)
        sweep.applied = overrides


def _fault_targets(sweep: Sweep, events) -> dict[int, Lab]:
    """For each event that changes an impairment, the point's lab with it and every earlier one
    applied, resolved once for all the point's repetitions (linklab/measure/probes/faults.py)."""
    targets, applied = {}, []
    for i, ev in enumerate(sorted(events, key=lambda e: e.at)):
        if ev.kind == "impair":
            applied.append(ev.override())
            targets[i] = lab.preview(sweep.handle.record, applied)
    return targets


def _measure_rep(sweep: Sweep, plan: PointPlan, fault_targets: dict[int, Lab], clock: PhaseClock,
                 raw: dict[str, str], row: dict[str, Any]) -> None:
    """One repetition measured into `raw` and `row`; a failure is recorded in the row, with what
    the tools printed before it (the raw output explains the error)."""
    exp = sweep.exp
    rep = Repetition(sweep.handle, plan.client, plan.server, plan.tool.ip, omit=exp.warmup)
    try:
        m_raw, m_row = measure_rep.measure(
            rep, sweep.kind.traffic(sweep.handle, plan, exp.warmup, plan.events),
            measure_rep.probes_for(plan, exp.measure, sweep.handle, plan.events, fault_targets, sweep.kind,
                                   exp.counted_links), clock)
        raw.update(m_raw)
        row.update(m_row)
        if row.get("flags"):  # say it now: a disturbed point is worth rerunning
            sweep.progress.log(f"  warning: {row['flags']}: {row['flag_evidence']}")
    except LinklabError as e:
        raw.update(getattr(e, "raw", None) or {})
        row["error"] = str(e)
        sweep.progress.log(f"  measurement failed: {e}")


def tool_columns(plan: PointPlan, kind: Kind | None = None) -> dict[str, Any]:
    """The tool settings a point asked for; stored as `tool.<name>`, apart from what was measured."""
    if kind is not None and kind.name != "iperf3":
        return kind.columns(plan)
    t = plan.tool
    return {"duration_s": t.duration, "cc": plan.cc, "protocol": t.protocol, "ip": t.ip, "streams": t.streams,
            "parallel": t.parallel, "mss": t.mss, "length": t.length}


def _qdisc_dumps(handle: LabHandle) -> str:
    """Every node's qdiscs as tc prints them (a raw file for people), one tc per node side by
    side: each is mostly its own start under software emulation."""
    def dump(node: str) -> str:
        res = runner.run(["tc", "-n", handle.ns(node), "-s", "-d", "qdisc", "show"],
                         check=False, timeout=10)  # tc's own -n: no `ip netns exec` process on top
        return f"### {node}\n{res.stdout}"

    with ThreadPoolExecutor(max_workers=4) as pool:
        return "\n".join(pool.map(dump, [n.name for n in handle.lab.nodes]))


def _json(obj) -> str:
    import json
    return json.dumps(obj, indent=1, default=str)


def _tool_versions() -> dict[str, str]:
    """Each tool asked side by side (three processes, each mostly its own start)."""
    def version(tool) -> str:
        try:
            return tool.version()
        except Exception as e:  # a missing tool shows up as a failed measurement, with its reason
            return f"unknown ({e})"

    tools = {"iperf3": Iperf3Client, "ping": Ping, "nstat": Nstat}
    with ThreadPoolExecutor(max_workers=len(tools)) as pool:
        return dict(zip(tools, pool.map(version, tools.values())))


def fingerprint_parts(exp_path, tpath: Path, opts: Options, base_overrides, st: dict) -> dict[str, Any]:
    """A lab's run: the lab's settings, its scale and placement, the kernel and the tools' versions."""
    return session.fingerprint_parts(exp_path, tpath, opts, {
        "overrides": base_overrides, "scale": st["resolved"].get("scale"),
        "placement": (st.get("placement") or {}).get("kind"), "kernel": platform.release(), "tools": _tool_versions()})


def _lab_manifest(exp: Experiment, tpath: Path, handle: LabHandle, opts: Options, parts: dict[str, Any]) -> dict[str, Any]:
    """What a run measured in a lab records beyond any run's manifest (session.manifest)."""
    st, res = handle.record, handle.record["resolved"]
    sysctls = {n.name: handle.backend.read_sysctls(handle.lab, n.name, list(RECORDED_SYSCTLS))
               for n in handle.lab.nodes if n.kind == "host"}
    versions = parts["tools"]
    return {
        "source": exp.source, "tool": exp.tool.model_dump(by_alias=True), "measure": exp.measure, "warmup_s": exp.warmup,
        "settle_s": exp.settle, "reference": exp.reference, "notes": exp.notes,
        "topology_sha256": file_sha256(tpath), "lab": res["name"],
        "lab_overrides": st["topology"].get("overrides", []),
        "sweep_overrides": [list(o) for o in opts.overrides],
        "scale": res["scale"], "scale_source": res["scale_source"], "placement": st.get("placement"),
        "tool_versions": versions,
        "streams_note": ("iperf3 {} sends all -P streams from one thread (3.16+ uses one thread per stream); "
                         "`parallel: processes` runs one iperf3 per stream instead".format(versions.get("iperf3"))),
        "sysctls_at_start": sysctls,
        "qdiscs_at_start": _qdisc_dumps(handle),
        **_disciplines_at_start(handle),
        "resolved_lab": res,
    }


def _disciplines_at_start(handle: LabHandle) -> dict[str, Any]:
    """The queue disciplines (impair.aqm) as the kernel reports them, per node and interface
    (linklab/linux/qdisc_report.py); nothing for a lab of FIFOs, whose manifest stays as it was."""
    nodes = sorted({e.end.node for e in handle.lab.egress_queues() if e.queue is not None and e.queue.aqm})
    if not nodes:
        return {}
    with ThreadPoolExecutor(max_workers=4) as pool:
        read = dict(zip(nodes, pool.map(lambda n: qdisc_report.read(handle.ns(n)), nodes)))
    return {"queue_disciplines_at_start": {n: [r for r in rs if r["kind"] in qdisc_report.AQM_KINDS]
                                           for n, rs in read.items()}}
