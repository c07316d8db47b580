"""Run an experiment against its lab: for each point, reconfigure the lab, check it, measure
every missing repetition, record each atomically. Resumable: what is recorded is never redone.
"""

from __future__ import annotations

import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from linklab import __version__, lab as labmod, runner, state
from linklab.backends.linux import sysctl
from linklab.backends.linux.names import netns_name
from linklab.errors import LinklabError, StateError
from linklab.measure.iperf3 import Iperf3Client
from linklab.measure.nstat import Nstat
from linklab.measure.ping import Ping
from linklab.model.resolved import Lab
from linklab.sweep import measure_rep, preflight
from linklab.sweep.experiment import Experiment, file_sha256, load_experiment, raw_data, topology_path
from linklab.sweep.matrix import Point, expand
from linklab.sweep.plan import plan_point
from linklab.sweep.progress import Progress
from linklab.sweep.store import ResultsStore

RECORDED_SYSCTLS = ("net.ipv4.tcp_congestion_control", "net.ipv4.tcp_reordering", "net.ipv4.tcp_rmem",
                    "net.ipv4.tcp_wmem", "net.core.rmem_max", "net.core.wmem_max", "net.core.netdev_max_backlog",
                    "net.ipv4.tcp_sack", "net.ipv4.tcp_timestamps")


@dataclass
class Options:
    quick: bool = False
    force: bool = False
    results: Path = Path("results")
    lab_name: str | None = None


def run(exp_path: str | Path, opts: Options, say=print) -> ResultsStore:
    exp = load_experiment(exp_path, quick=opts.quick)
    tpath = topology_path(exp_path, exp)
    topo_raw = raw_data(tpath)
    lab_name = opts.lab_name or topo_raw["name"]
    st = state.load(lab_name)
    if st is None:
        say(f"linklab: lab {lab_name} is not up; building it from {tpath}")
        labmod.up(tpath, name=opts.lab_name, say=say)
        st = state.require(lab_name)
    elif Path(st["topology"]["path"]).resolve() != tpath.resolve():
        raise StateError(f"lab {lab_name} is up from {st['topology']['path']}, but {exp_path} needs {tpath}",
                         hint=f"`linklab down {lab_name}` first, or run the sweep against another lab with --lab")
    base_overrides = labmod.base_overrides(st)

    points = expand(exp.matrix, exclude=exp.exclude)
    fingerprint = "|".join([file_sha256(exp_path), file_sha256(tpath), f"quick={opts.quick}",
                            f"overrides={base_overrides}"])
    store = None if opts.force else ResultsStore.find_resumable(opts.results, exp.name, fingerprint)
    if store is None and not opts.force:
        latest = ResultsStore.latest(opts.results, exp.name)
        if latest and latest.manifest.get("fingerprint") == fingerprint and latest.manifest.get("complete"):
            say(f"linklab: {exp.name} is already complete in {latest.path} (--force runs it again into a new directory)")
            return latest
    if store is None:
        store = ResultsStore.create(opts.results, exp.name, _manifest(exp_path, exp, tpath, st, points, fingerprint, opts))
        say(f"linklab: results go to {store.path}")
    else:
        say(f"linklab: resuming {store.path} ({len(store.completed())} repetitions already recorded)")

    with store.lock(), state.locked(lab_name):
        base_overrides = labmod.remember_base_overrides(lab_name)
        for leftover in store.clean_partial():
            say(f"  removed partial result {leftover}")
        done = store.completed()
        todo = [(p, r) for p in points for r in range(1, exp.repetitions + 1) if (p.id, r) not in done]
        progress = Progress(len(points) * exp.repetitions, already_done=len(points) * exp.repetitions - len(todo))
        try:
            for point in points:
                reps = [r for r in range(1, exp.repetitions + 1) if (point.id, r) not in done]
                if reps:
                    _run_point(exp, topo_raw, lab_name, base_overrides, point, reps, store, progress, say)
        finally:
            progress.close()
            # Put the lab back the way the user left it, whatever happened.
            labmod.set_params(lab_name, base_overrides, replace=True, lock=False, say=lambda *_: None)
            labmod.forget_base_overrides(lab_name)
            store.write_table()
        store.mark_complete()
    rows = store.rows()
    failed = sum(1 for r in rows if not r.get("preflight_ok", True) or r.get("error"))
    say(f"linklab: {exp.name}: {len(rows)} repetitions recorded ({failed} failed) in {store.path}")
    say(f"  table: {store.path / 'results.csv'}")
    from linklab.sweep.report import write_report
    try:
        say(f"  report: {write_report(store.path)[0]} (`linklab report` prints it)")
    except Exception as e:  # the results are safe on disk; a report can be made later
        say(f"  (no report: {e}; `linklab report {store.path}` retries)")
    return store


def _run_point(exp: Experiment, topo_raw: dict, lab_name: str, base_overrides, point: Point, reps: list[int],
               store: ResultsStore, progress: Progress, say) -> None:
    plan = plan_point(exp, topo_raw, point.axes)
    rec = labmod.set_params(lab_name, base_overrides + list(plan.overrides), replace=True, lock=False,
                            say=lambda *_: None)
    lab = Lab.model_validate(rec["resolved"])
    time.sleep(exp.settle)
    pf = preflight.run(lab, plan.client, plan.server, plan.tool.ip)
    point_info = {"point_key": point.key, "mtu_varied": plan.mtu_varied, "client": plan.client,
                  "server": plan.server, "scale": lab.scale, "repetitions": exp.repetitions,
                  "duration_s": plan.tool.duration, "cc": plan.cc, "protocol": plan.tool.protocol,
                  "ip": plan.tool.ip, "streams": plan.tool.streams, "parallel": plan.tool.parallel,
                  "mss": plan.tool.mss, "length": plan.tool.length}
    dumps = _qdisc_dumps(lab)
    servers = measure_rep.start_servers(lab, plan) if pf.ok else None
    try:
        for rep in reps:
            progress.start_unit(f"{point.key} rep {rep}/{exp.repetitions}")
            t0 = time.monotonic()
            raw = {"qdisc.txt": dumps, "preflight.json": _json(pf.__dict__)}
            row: dict[str, Any] = {**point.axes, **point_info, **pf.row(), "started_at": time.strftime("%Y-%m-%dT%H:%M:%S")}
            if not pf.ok:
                row["error"] = "pre-flight failed: " + "; ".join(pf.problems)
                progress.log(f"  pre-flight failed, not measured: {row['error']}")
            else:
                try:
                    m_raw, m_row = measure_rep.measure(lab, plan, exp.measure, omit=exp.warmup, events=exp.events)
                    raw.update(m_raw)
                    row.update(m_row)
                    if row.get("flags"):  # say it now: a disturbed point is worth rerunning
                        progress.log(f"  warning: {row['flags']}: {row['flag_evidence']}")
                except LinklabError as e:
                    row["error"] = str(e)
                    progress.log(f"  measurement failed: {e}")
            store.record(point, rep, raw, row)
            store.write_table()
            progress.finish_unit(time.monotonic() - t0)
            if rep != reps[-1]:
                time.sleep(exp.pause)
    finally:
        if servers:
            servers.stop()


def _qdisc_dumps(lab: Lab) -> str:
    out = []
    for node in lab.nodes:
        res = runner.run(["tc", "-s", "-d", "qdisc", "show"], netns=netns_name(lab.name, node.name), check=False,
                         timeout=10)
        out.append(f"### {node.name}\n{res.stdout}")
    return "\n".join(out)


def _json(obj) -> str:
    import json
    return json.dumps(obj, indent=1, default=str)


def _tool_versions() -> dict[str, str]:
    out = {}
    for name, tool in (("iperf3", Iperf3Client), ("ping", Ping), ("nstat", Nstat)):
        try:
            out[name] = tool.version()
        except Exception as e:  # a missing tool shows up as a failed measurement, with its reason
            out[name] = f"unknown ({e})"
    return out


def _manifest(exp_path, exp: Experiment, tpath: Path, st: dict, points: list[Point], fingerprint: str,
              opts: Options) -> dict[str, Any]:
    res = st["resolved"]
    hosts = [n["name"] for n in res["nodes"] if n["kind"] == "host"]
    sysctls = {}
    for h in hosts:
        ns = netns_name(res["name"], h)
        sysctls[h] = sysctl.read(ns, list(RECORDED_SYSCTLS))
    versions = _tool_versions()
    return {
        "fingerprint": fingerprint, "linklab": __version__, "command": sys.argv,
        "experiment_file": str(exp_path), "experiment_sha256": file_sha256(exp_path),
        "experiment": exp.name, "description": exp.description, "source": exp.source,
        "quick": opts.quick, "matrix": exp.matrix, "repetitions": exp.repetitions, "points": len(points),
        "tool": exp.tool.model_dump(), "measure": exp.measure, "warmup_s": exp.warmup, "settle_s": exp.settle,
        "reference": exp.reference, "notes": exp.notes,
        "topology_file": str(tpath), "topology_sha256": file_sha256(tpath), "lab": res["name"],
        "lab_overrides": st["topology"].get("overrides", []),
        "scale": res["scale"], "scale_source": res["scale_source"],
        "placement": st.get("placement"), "kernel": platform.release(), "machine": platform.machine(),
        "tool_versions": versions,
        "streams_note": ("iperf3 {} sends all -P streams from one thread (3.16+ uses one thread per stream); "
                         "`parallel: processes` runs one iperf3 per stream instead".format(versions.get("iperf3"))),
        "sysctls_at_start": sysctls,
        "qdiscs_at_start": _qdisc_dumps(Lab.model_validate(res)),
        "resolved_lab": res,
    }
