"""What a local cluster's sweep leaves when its driver is killed, and `linklab clean` removing it.

A local cluster gives each node its own state directory (`<state>/cluster/node-<id>/`: its own
lab and lab VM, worker.node_state_dir). A driver that ends normally takes those labs down
(worker.teardown); one killed with -9 leaves each node's lab up, its VM running and maybe a
unit's `linklab sweep` still measuring. The driver records itself (DRIVER_FILE, procs.identity)
while it runs; once that record names no running process, every node's sweep is stopped (its
record: worker.CHILD_FILE) and `linklab down` then `linklab vm stop` run with the node's state
directory — the same commands a user would type, so ownership rules stay in one place.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from linklab import fsutil, procs, runner, state
from linklab.cluster.worker import CHILD_FILE

DRIVER_FILE = "driver.json"
NODE_GLOB = "node-*"
COMMAND_TIMEOUT_S = 300  # `down` of a VM lab forwards into that node's VM


def cluster_dir() -> Path:
    return state.state_dir().resolve() / "cluster"


@contextmanager
def driver_recorded(root: Path) -> Iterator[None]:
    """While a local cluster's driver runs, its record in `root` (removed when it ends)."""
    root.mkdir(parents=True, exist_ok=True)
    fsutil.write_json_atomic(root / DRIVER_FILE, procs.identity(os.getpid()) or {"pid": os.getpid()})
    try:
        yield
    finally:
        (root / DRIVER_FILE).unlink(missing_ok=True)


def abandoned_nodes(root: Path) -> list[Path]:
    """Node state directories whose driver is gone (none while it runs)."""
    if not root.is_dir():
        return []
    driver = fsutil.read_json_record(root / DRIVER_FILE)
    if driver is not None and procs.is_same(driver):
        return []
    return sorted(d for d in root.glob(NODE_GLOB) if d.is_dir())


def clean(root: Path, say=print, dry_run: bool = False) -> list[str]:
    """Each abandoned node's sweep stopped, its lab taken down and its VM stopped; what went."""
    out: list[str] = []
    for node in abandoned_nodes(root):
        child = fsutil.read_json_record(node / CHILD_FILE)
        labs = sorted(p.stem for p in (node / "labs").glob("*.json")) if (node / "labs").is_dir() else []
        running_child = child is not None and procs.is_same(child)
        vm_up = _vm_running(node)
        if not labs and not running_child and not vm_up:
            continue
        what = f"cluster node {node.name}: " + ", ".join(
            [*([f"its unit's sweep (pid {child['pid']})"] if running_child else []),
             *(f"lab {name}" for name in labs), *(["its lab VM"] if vm_up else [])])
        out.append(what + " (the cluster's driver is gone)")
        if dry_run:
            continue
        if running_child:
            procs.stop_recorded([child])
        env = {"LINKLAB_STATE_DIR": str(node)}
        for argv in [*([["down"]] if labs else []), *([["vm", "stop"]] if vm_up or labs else [])]:
            res = runner.run([sys.executable, "-m", "linklab", *argv], check=False, timeout=COMMAND_TIMEOUT_S, env=env)
            if res.returncode:
                say(f"  cluster node {node.name}: `linklab {' '.join(argv)}` exited {res.returncode}: "
                    f"{(res.stdout + res.stderr).strip()[-300:]}")
    return out


def _vm_running(node: Path) -> bool:
    from linklab import placement
    return placement.vm_running_in(node)
