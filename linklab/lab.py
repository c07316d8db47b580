"""Lab lifecycle on the kernel we are running on: up, set, down, status, clean.

The staged pipeline: load (validate) -> override -> resolve -> backend checks -> state file
('building') -> backend apply -> state file ('up'). Bad input stops before anything changes.
Where the kernel lacks features, linklab/placement.py runs these same functions inside the VM.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
import os
import platform
import time
import uuid
from pathlib import Path
from typing import Any

from linklab import __version__, state
from linklab.backends import get_backend
from linklab.backends.base import Backend, NodeCommandsFailed
from linklab.errors import LinklabError, StateError, UsageError
from linklab.handle import LabHandle
from linklab.model import Context, load_topology, resolve, topology_sha256
from linklab.model.overrides import split_assignment
from linklab.model.resolved import Lab, Service


def context() -> Context:
    """Where this lab runs decides `scale: auto`: a software-emulated VM moves ~700 Mbit/s on a
    plain veth, so 1 Gbit/s links are run at a tenth there and the emulator never binds."""
    accel = os.environ.get("LINKLAB_VM_ACCEL_USED")
    if accel == "tcg":
        return Context(auto_scale=0.1, auto_scale_reason="software-emulated VM (TCG): veth ~700 Mbit/s")
    if accel:
        return Context(auto_scale=1.0, auto_scale_reason=f"VM with {accel}")
    return Context()


def placement() -> dict[str, Any]:
    info = os.environ.get("LINKLAB_VM_INFO")
    if os.environ.get("LINKLAB_IN_VM") == "1":
        return {"kind": "vm", "vm": json.loads(info) if info else {}}
    return {"kind": "native"}


def build_lab(topo_path: str | Path, overrides: list[tuple[str, Any]], name: str | None = None,
              scale: float | None = None, seed: str | None = None) -> Lab:
    """`seed`: the variant of a topology with `vars:` (a student's id; None: the defaults)."""
    topo = load_topology(topo_path, overrides, name=name, seed=seed)
    ctx = context()
    if scale is not None:
        ctx = Context(ctx.auto_scale, ctx.auto_scale_reason, scale_override=scale)
    return resolve(topo, ctx)


def parse_overrides(texts: list[str]) -> list[tuple[str, Any]]:
    return [split_assignment(t) for t in texts]


def up(topo_path: str | Path, *, name: str | None = None, overrides: list[tuple[str, Any]] = (),
       scale: float | None = None, seed: str | None = None, backend: str = "linux", say=print) -> dict[str, Any]:
    lab = build_lab(topo_path, list(overrides), name=name, scale=scale, seed=seed)
    with state.locked(lab.name):
        old = state.load(lab.name)
        if old and Path(old["topology"]["path"]).resolve() != Path(topo_path).resolve():
            raise StateError(f"lab {lab.name!r} is already up from {old['topology']['path']}",
                             hint=f"`linklab down {lab.name}` first, or give this one another name with --name")
        if old and seed is not None and old["topology"].get("seed") != seed:
            raise StateError(f"lab {lab.name!r} is up as the variant of seed {old['topology'].get('seed')!r}, not {seed!r}",
                             hint=f"`linklab down {lab.name}` first, or give this one another name with --name")
        if old and seed is None and old["topology"].get("seed") is not None:
            seed = old["topology"]["seed"]  # a lab stays the variant it was built as
            lab = build_lab(topo_path, list(overrides), name=name, scale=scale, seed=seed)
        if old and not overrides and scale is None:
            # Re-running `up` keeps what `set` changed since: up is idempotent, not a reset.
            overrides = [tuple(o) for o in old["topology"].get("overrides", [])]
            scale = old["topology"].get("scale_override")
            lab = build_lab(topo_path, list(overrides), name=name, scale=scale, seed=seed)
        return _apply(lab, topo_path, list(overrides), scale, old, get_backend(backend), say, seed)


def set_params(lab_name: str, overrides: list[tuple[str, Any]], say=print, replace: bool = False,
               lock: bool = True, backend: Backend | None = None, restart: list[str] = ()) -> dict[str, Any]:
    """Change a running lab: overrides (added to earlier ones, or replacing them) are
    re-validated like a file and reconciled; only what differs is touched. `backend`: the lab's
    backend already in hand (a sweep's, kept across its points). `restart`: services to start
    again ("NODE/NAME"), whether or not anything changed."""
    with state.locked(lab_name) if lock else _nolock():
        old = state.require(lab_name)
        topo = old["topology"]
        merged = ([] if replace else [tuple(o) for o in topo.get("overrides", [])]) + list(overrides)
        lab = build_lab(topo["path"], merged, name=lab_name, scale=topo.get("scale_override"), seed=topo.get("seed"))
        return _apply(lab, topo["path"], merged, topo.get("scale_override"), old,
                      backend or get_backend(old.get("backend", "linux")), say, topo.get("seed"),
                      restart=service_names(lab, restart))


def service_names(lab: Lab, names: list[str]) -> set[tuple[str, str]]:
    """"NODE/NAME" -> (node, name), each a background service of `lab`; a UsageError (exit 2,
    nothing changed) names every one that is not, with the valid ones."""
    valid = [f"{n.name}/{s.name}" for n in lab.nodes for s in n.exec if isinstance(s, Service)]
    wrong = [x for x in names if x not in valid]
    if wrong:
        raise UsageError(f"no service {', '.join(map(repr, wrong))} in lab {lab.name} "
                         f"(valid: {', '.join(valid) or 'none: no node has an exec: item with background: true'})",
                         hint="write NODE/NAME, e.g. --restart h1/web")
    return {tuple(x.split("/", 1)) for x in names}


def preview(record: dict[str, Any], overrides: list[tuple[str, Any]]) -> Lab:
    """The lab a state record describes, as it would be resolved with `overrides` added, without
    touching it (an event's target state, worked out before the measurement window starts)."""
    topo = record["topology"]
    merged = [tuple(o) for o in topo.get("overrides", [])] + list(overrides)
    return build_lab(topo["path"], merged, name=record["lab"], scale=topo.get("scale_override"), seed=topo.get("seed"))


@contextmanager
def _nolock():
    yield  # the caller (a sweep) already holds the lab's lock


def _apply(lab: Lab, topo_path, overrides, scale, old, backend: Backend, say, seed: str | None = None,
           restart: set[tuple[str, str]] = frozenset()) -> dict[str, Any]:
    problems = backend.problems(lab)
    if problems:
        from linklab.errors import ValidationFailed
        raise ValidationFailed(str(topo_path), problems)
    owned = dict(old["owned"]) if old else {"id": uuid.uuid4().hex[:8]}
    # Ownership first (nothing recorded or changed if something is not ours), then record intent:
    # a crash during apply leaves a state file naming what may exist, and only that.
    planned = backend.claim(lab, owned)
    record = {
        "lab": lab.name, "backend": backend.name, "status": "building",
        "created_at": old["created_at"] if old else time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "topology": {"path": str(topo_path), "sha256": topology_sha256(topo_path),
                     "overrides": [list(o) for o in overrides], "scale_override": scale,
                     **({"seed": seed} if seed is not None else {})},
        "placement": placement(), "kernel": platform.release(), "linklab": __version__,
        "resolved": lab.model_dump(mode="json"), "owned": planned,
        # Where each node's commands run, for `linklab exec` forwarded from the host (state.node_netns).
        "netns": {n.name: backend.node_netns(lab, n.name) for n in lab.nodes},
    }
    if old and "sweep_base_overrides" in old:
        record["sweep_base_overrides"] = old["sweep_base_overrides"]  # a sweep is changing this lab
    state.save(record)
    t0 = time.monotonic()
    try:
        record["owned"] = backend.apply(lab, owned, say=say, restart=restart)
    except NodeCommandsFailed as e:
        # Built, but a node's command failed: the lab stays `building`, as after any failed `up`,
        # knowing what it owns and which commands ran (`up` again runs the rest; `exec` reaches
        # the nodes to look).
        record["owned"] = e.owned
        record["netns"] = {n.name: backend.node_netns(lab, n.name) for n in lab.nodes}
        state.save(record)
        raise
    # Asked again now that every node exists: a container node's commands enter its first process.
    record["netns"] = {n.name: backend.node_netns(lab, n.name) for n in lab.nodes}
    record["status"] = "up"
    record["apply_seconds"] = round(time.monotonic() - t0, 3)
    state.save(record)
    return record


def base_overrides(st: dict[str, Any]) -> list[tuple[str, Any]]:
    """The overrides the lab had before a sweep started changing it (its current ones if no
    sweep is under way)."""
    return [tuple(o) for o in st.get("sweep_base_overrides", st["topology"].get("overrides", []))]


def remember_base_overrides(lab_name: str) -> list[tuple[str, Any]]:
    """Keep the pre-sweep overrides in the state file until the sweep puts them back, so a
    sweep killed mid-way resumes (and restores) from the user's settings, not the last point's."""
    st = state.require(lab_name)
    if "sweep_base_overrides" not in st:
        st["sweep_base_overrides"] = st["topology"].get("overrides", [])
        state.save(st)
    return base_overrides(st)


def forget_base_overrides(lab_name: str) -> None:
    st = state.load(lab_name)
    if st and st.pop("sweep_base_overrides", None) is not None:
        state.save(st)


def down(lab_name: str, say=print) -> list[str]:
    with state.locked(lab_name):
        old = state.require(lab_name)
        backend = get_backend(old.get("backend", "linux"))
        removed = backend.destroy(lab_name, old["owned"], say=say)
        # Anything else carrying this very lab's mark (its name, id and checkout) goes too; a
        # same-named lab of another checkout, or an older lab of that name, is not this one.
        removed += backend.remove_orphans(backend.orphans(lab_name, old["owned"].get("id"), state.home()), say=say)
        state.remove(lab_name)
        state.remove_lock(lab_name)
        return removed


def clean(lab_name: str | None, say=print, *, dry_run: bool = False, other_checkouts: bool = False) -> list[str]:
    """Remove what is provably abandoned, and only that; returns what was (or, with dry_run,
    would be) removed, each with the reason.

    Abandoned: a namespace whose mark names this checkout but no live lab of it (no state file,
    or one with another id), or any lab of a state file whose owner is gone (crashed while
    building and no command holds its lock; a VM lab whose VM is gone; a native lab none of
    whose namespaces exist). A live lab is never touched; another checkout's labs only with
    `other_checkouts` (they cannot be judged from here).
    """
    backend = get_backend("linux")
    home = state.home()
    # Namespaces are listed before state files are read: a lab coming up meanwhile saved its
    # state before making any namespace, so it is seen as live.
    marked = backend.marked()
    out: list[str] = []
    live: dict[str, str | None] = {}
    for name in state.all_labs():
        if lab_name not in (None, name):
            continue
        with state.try_locked(name) as got:
            if not got:
                live[name] = _state_id(name)  # a command is changing it right now
                continue
            why, st = _abandoned(name)
            if why is None:
                live[name] = (st.get("owned") or {}).get("id")
                continue
            owned = (st or {}).get("owned") or {}
            if st is not None and st.get("placement", {}).get("kind") == placement()["kind"]:
                out += [f"{r} (lab {name}: {why})" for r in
                        ([] if dry_run else backend.destroy(name, owned, say=say))]
            out.append(f"state {name} ({why})")
            if not dry_run:
                state.remove(name)
    for ns, m in sorted(marked.items()):
        if lab_name not in (None, m.lab):
            continue
        if m.home == home or (m.home is None and m.lab in live):
            if m.lab in live and live[m.lab] == m.id:
                continue
            why = f"lab {m.lab} id {m.id}: no live lab of this checkout has that id"
        elif other_checkouts:
            why = f"lab {m.lab} of another checkout ({m.home or 'unrecorded'}), named by --all-checkouts"
        else:
            say(f"  leaving {ns}: lab {m.lab} of another checkout ({m.home or 'unrecorded'}); "
                "--all-checkouts removes those too")
            continue
        out.append(f"{ns if ' ' in ns else 'netns ' + ns} ({why})")  # "container ll-...": named by its kind
        if not dry_run:
            backend.remove_orphans([ns], say=say)
    if not dry_run:
        state.remove_stale_locks()
        if lab_name is None:  # cleaning everything: helpers no lab uses go too (cleaning one lab keeps them)
            out += backend.release_idle()
    return out


def _state_id(name: str) -> str | None:
    try:
        return ((state.load(name) or {}).get("owned") or {}).get("id")
    except LinklabError:
        return None


def _abandoned(name: str) -> tuple[str | None, dict[str, Any] | None]:
    """(why the lab's owner is gone, its state) or (None, state) for a live lab. Called holding its lock."""
    try:
        st = state.load(name)
    except LinklabError as e:
        return f"unreadable state file: {e}", None
    if st is None:
        return "state file vanished", None
    kind = st.get("placement", {}).get("kind")
    if st.get("status") != "up":
        return f"crashed while {st.get('status')} and no command holds it", st
    if kind == "vm" and placement()["kind"] != "vm":
        from linklab import placement as where
        if not where.lab_vm().running():
            return "its lab VM is gone", st
        return None, st
    if kind == placement()["kind"]:
        from pyroute2 import netns as _netns
        listed = set((st.get("owned") or {}).get("namespaces", []))
        if listed and not listed & set(_netns.listnetns()):
            return "none of its namespaces exist (the machine restarted?)", st
    return None, st


def handle(lab_name: str) -> LabHandle:
    """The running lab's handle (model, backend, namespaces), from its state record."""
    return LabHandle.from_record(state.require(lab_name))


def load_lab(lab_name: str) -> tuple[dict[str, Any], Lab]:
    st = state.require(lab_name)
    return st, Lab.model_validate(st["resolved"])


def status(lab_name: str) -> dict[str, Any]:
    st, lab = load_lab(lab_name)
    backend = get_backend(st.get("backend", "linux"))
    return {"state": st, "live": backend.inspect(lab), "services": backend.services(lab, st.get("owned") or {})}


def exec_argv(lab_name: str, node: str, argv: list[str]) -> list[str]:
    st, lab = load_lab(lab_name)
    try:
        return get_backend(st.get("backend", "linux")).exec_argv(lab, node, argv)
    except KeyError:
        raise state.unknown_node(lab_name, node, [n.name for n in lab.nodes]) from None


def switch_tool_argv(lab_name: str, node: str, argv: list[str]) -> list[str]:
    st, lab = load_lab(lab_name)
    try:
        return get_backend(st.get("backend", "linux")).switch_tool_argv(lab, node, argv)
    except KeyError:
        raise state.unknown_node(lab_name, node, [n.name for n in lab.nodes]) from None


default_lab = state.default_lab  # kept here too: callers name it as part of the lab lifecycle
