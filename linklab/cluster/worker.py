"""What runs on a Ray node: one unit of work (a group of points), streamed back to the driver.

A unit is a Ray generator task: it yields a message as each thing happens, so the driver
records each repetition as soon as it is measured (and knows which point runs where):
  {"kind": "hello", "worker": {...}}                   first: who and where (provenance)
  {"kind": "lab", "placement": {...}, "scale": x, "manifest": {...}}   the worker's lab and its
                                                       sweep's manifest (not for dry runs)
  {"kind": "rep", "point": id, "rep": k, "raw": {...}, "row": {...}, "tool": {...}}

Workloads: "dry" sleeps in this process (linklab/sweep/dry.py); "lab" runs `linklab sweep
EXP --points …` as a child, the way it runs on any machine: natively, or forwarded into this
node's own lab VM when its kernel lacks bonding/netem/openvswitch (linklab/placement.py). Ray's
own agents do not start inside a software-emulated lab VM, so Ray stays on the host and the lab
goes into the VM. Each local node has its own state directory (LINKLAB_STATE_DIR): its own lab
and lab VM.
"""

from __future__ import annotations

import os
import platform
import socket
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from linklab import fsutil, procs, runner

if TYPE_CHECKING:
    from linklab.results.store import ResultsStore

RESOURCE = "linklab"  # each node that may host a lab advertises {"linklab": 1}; a unit asks for it
CHILD_FILE = "cluster-child.json"  # the sweep a unit started on this node (stopped by the next unit)
POLL_S = 0.5


def worker_info() -> dict[str, Any]:
    from linklab.cluster.address import import_ray
    ray = import_ray()  # present: a Ray worker runs this
    return {"node_id": ray.get_runtime_context().get_node_id(), "hostname": socket.gethostname(),
            "kernel": platform.release(), "pid": os.getpid()}


def run_unit(spec: dict[str, Any], todo: list[tuple[str, int]], points: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The generator a Ray task runs for one unit: `todo` is [(point id, rep)] in matrix order,
    `points` the unit's points by id (linklab/sweep/matrix.py: Point)."""
    info = worker_info()
    yield {"kind": "hello", "worker": info}
    if spec["workload"] == "dry":
        yield from _dry_unit(spec, todo, points)
    else:
        yield from _lab_unit(spec, todo, info)


def run_unit_whole(spec: dict[str, Any], todo: list[tuple[str, int]], points: dict[str, Any]) -> list[dict[str, Any]]:
    """run_unit's messages all at once, when the unit ends: for a driver connected through Ray
    Client (ray://), which cannot stream a generator task's results (Ray 2.60)."""
    return list(run_unit(spec, todo, points))


def _dry_unit(spec: dict[str, Any], todo: list[tuple[str, int]], points: dict[str, Any]) -> Iterator[dict[str, Any]]:
    from linklab.sweep import dry
    for pid, rep in todo:
        raw, row = dry.measure(points[pid], rep, spec["dry_run_s"])
        yield {"kind": "rep", "point": pid, "rep": rep, "raw": raw, "row": row, "tool": {}}


def node_state_dir(spec: dict[str, Any], node_id: str) -> Path | None:
    """This node's own state directory on a local cluster (one lab and lab VM per node); None on
    a real one, where each machine has its own checkout and its own ./.linklab."""
    root = spec.get("state_root")
    return Path(root) / f"node-{node_id[:12]}" if root else None


def _node_env(spec: dict[str, Any], info: dict[str, Any]) -> dict[str, str]:
    """Where this node's linklab runs: in the checkout (the same path on every machine:
    docs/scale-out.md, the cluster recipe), with this node's state directory."""
    os.chdir(spec["cwd"])
    sd = node_state_dir(spec, info["node_id"]) or Path(os.environ.get("LINKLAB_STATE_DIR") or Path(spec["cwd"]) / ".linklab")
    return {"LINKLAB_STATE_DIR": str(sd)}


def _lab_unit(spec: dict[str, Any], todo: list[tuple[str, int]], info: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """`linklab sweep EXP --points …` in a child, its run read as it fills."""
    env = _node_env(spec, info)
    state = Path(env["LINKLAB_STATE_DIR"])
    state.mkdir(parents=True, exist_ok=True)
    _stop_previous_child(state)
    results = state / "cluster-results" / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    ids = sorted({pid for pid, _ in todo})
    argv = [sys.executable, "-m", "linklab", "sweep", spec["experiment"], "--points", ",".join(ids),
            "--results", str(results), "--force"] + (["--quick"] if spec["quick"] else [])
    if spec.get("repetitions"):
        argv += ["--repetitions", str(spec["repetitions"])]
    results.mkdir(parents=True)
    with open(results / "sweep.log", "wb") as log:
        # Its own session (runner.start): the lab it brings up outlives nothing but this sweep.
        child = runner.start(argv, stdout=log, stderr=log, env=env)
    fsutil.write_json_atomic(state / CHILD_FILE, procs.identity(child.pid) or {"pid": child.pid})
    want = set(todo)
    sent: set[tuple[str, int]] = set()
    lab_said = False
    while True:
        finished = child.poll() is not None
        run = _run_dir(results)
        if run is not None:
            if not lab_said:
                lab_said = True
                yield {"kind": "lab", "placement": run.manifest.get("placement"), "scale": run.manifest.get("scale"),
                       "manifest": run.manifest}
            yield from _new_reps(run, want, sent)
        if finished:
            break
        time.sleep(POLL_S)
    if child.returncode != 0 and want - sent:
        tail = (results / "sweep.log").read_text(errors="replace")[-2000:]
        raise RuntimeError(f"`linklab sweep` on {info['hostname']} exited {child.returncode} with "
                           f"{len(want - sent)} repetitions unmeasured:\n{tail}")


def _stop_previous_child(state: Path) -> None:
    """A sweep left running by a unit whose worker was killed holds this node's lab: stopped."""
    record = fsutil.read_json_record(state / CHILD_FILE)
    if record is not None:
        procs.stop_recorded([record])


def _run_dir(results: Path) -> ResultsStore | None:
    from linklab.results.store import ResultsStore
    runs = [d for d in results.glob("*/*") if d.is_dir() and (d / "manifest.json").is_file()]
    return ResultsStore.open(runs[0]) if runs else None


def _new_reps(run: ResultsStore, want: set, sent: set) -> Iterator[dict[str, Any]]:
    """Repetitions recorded since the last look (a rep's directory appears whole: store.record)."""
    for pid, rep in sorted(run.completed()):
        if (pid, rep) in want and (pid, rep) not in sent:
            sent.add((pid, rep))
            raw, row, tool = run.read_rep(pid, rep)
            yield {"kind": "rep", "point": pid, "rep": rep, "raw": raw, "row": row, "tool": tool}


def teardown(spec: dict[str, Any]) -> str:
    """The lab this node brought up, taken down (its lab VM stopped): the task run on each node
    that measured, at the end of the sweep."""
    info = worker_info()
    env = _node_env(spec, info)
    _stop_previous_child(Path(env["LINKLAB_STATE_DIR"]))  # a killed unit's sweep would hold the lab
    res = runner.run([sys.executable, "-m", "linklab", "down"], check=False, timeout=300, env=env)
    return f"{info['hostname']}: {(res.stdout + res.stderr).strip()[-300:]}"
