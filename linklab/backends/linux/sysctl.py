"""Per-host sysctls, written inside the host's namespace.

Most net.* sysctls are per network namespace. Some are not on every kernel (net.core.rmem_max
became per-namespace only in recent kernels; net.core.netdev_max_backlog is global): those
would change the whole machine, so linklab sets them only on a kernel the lab owns (the lab
VM) and refuses natively, saying which keys and why.
"""

from __future__ import annotations

import ctypes
import functools
import os
from pathlib import Path

from pyroute2.netns import popns, pushns

from linklab.errors import LinklabError, UsageError
from linklab.kernel import in_lab_vm
from linklab.model.resolved import Lab

CLONE_NEWNET = 0x40000000


def proc_path(key: str) -> Path:
    return Path("/proc/sys") / key.replace(".", "/")


def classify(keys: list[str]) -> dict[str, str]:
    """key -> 'netns' (exists in a fresh namespace), 'global' (only in the root one), 'unknown'
    (in neither) or 'unsure' (no namespace could be made to look from: not root).

    Looks from a throwaway namespace in a child process, so nothing of the lab exists yet
    when a bad key is reported. Once per process for the same keys: a kernel's sysctls do not
    come and go under it, and `up` asks twice (where the lab runs, then what it cannot set).
    """
    return dict(_looked(tuple(sorted(set(keys)))))


@functools.lru_cache(maxsize=64)
def _looked(keys: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    if not keys:
        return ()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: own network namespace, look, report, exit
        os.close(r)
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            ok = libc.unshare(CLONE_NEWNET) == 0
            found = "".join(("1" if proc_path(k).exists() else "0") if ok else "?" for k in keys)
            os.write(w, found.encode())
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 4096):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    out = {}
    for k, flag in zip(keys, data.decode().ljust(len(keys), "0")):
        out[k] = ("netns" if flag == "1" else "unknown" if not proc_path(k).exists()
                  else "unsure" if flag == "?" else "global")
    return tuple(out.items())


def _where(node) -> str:
    """A node's sysctls as the topology file names them: "hosts.h1.sysctls"."""
    return f"{'routers' if node.kind == 'router' else 'hosts'}.{node.name}.sysctls"


def _asked(labs: list[Lab]) -> dict[str, str]:
    """Every sysctl key the labs' nodes set -> the first node setting that asks for it."""
    out: dict[str, str] = {}
    for lab in labs:
        for n in lab.nodes:
            for k in n.sysctls:
                out.setdefault(k, _where(n))
    return out


def machine_wide(labs: list[Lab]) -> dict[str, str]:
    """The sysctls the labs set that this kernel keeps for the whole machine (classify: global)
    -> who asks for it. One look for all of them (a sweep's every point)."""
    asked = _asked(labs)
    where = classify(sorted(asked))
    return {k: asked[k] for k in sorted(asked) if where[k] == "global"}


def problems(lab: Lab) -> list[str]:
    keys = sorted({k for n in lab.nodes for k in n.sysctls})
    where = classify(keys)
    out = []
    for n in lab.nodes:
        for k in n.sysctls:
            if where[k] == "unknown":
                out.append(f"{_where(n)}.{k}: no such sysctl on this kernel ({proc_path(k)})")
            elif where[k] == "global" and not in_lab_vm():
                out.append(f"{_where(n)}.{k}: not per-namespace on this kernel, so setting it "
                           "would change the host itself; run the lab in the VM (`linklab up --vm`)")
    # Global keys are one value for the whole (VM) kernel: two hosts cannot disagree on them.
    for k in keys:
        if where[k] == "global":
            values = {n.sysctls[k] for n in lab.nodes if k in n.sysctls}
            if len(values) > 1:
                out.append(f"sysctl {k} is global on this kernel; hosts ask for different values {sorted(values)}")
    return out


def _write(key: str, value: str) -> None:
    path = proc_path(key)
    try:
        path.write_text(str(value))
    except OSError as e:
        hint = None
        if key.endswith("tcp_congestion_control"):
            avail = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
            hint = f"available here: {avail.read_text().strip() if avail.exists() else '?'}"
        raise LinklabError(f"sysctl {key}={value}: {e.strerror}", hint=hint) from None


def write_all(values: dict[str, str]) -> None:
    """Write every key. A sysctl bounded by another (net.ipv4.tcp_reordering by
    tcp_max_reordering) is refused until that one is written, and which must go first depends on
    which way both move: what the kernel refused is tried again after the rest, as long as each
    pass writes something."""
    pending = list(values.items())
    while pending:
        refused = []
        for k, v in pending:
            try:
                _write(k, v)
            except LinklabError as e:
                refused.append((k, v, e))
        if len(refused) == len(pending):
            raise refused[0][2]
        pending = [(k, v) for k, v, _ in refused]


def set_in_netns(ns: str, values: dict[str, str]) -> None:
    pushns(ns)
    try:
        write_all(values)
    finally:
        popns()


def apply(lab: Lab, namespaces: dict[str, str], originals: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """Write every host's sysctls and put back the original value of any key the lab set
    before but no longer wants (a sweep moving from a tuned profile back to the default).

    `originals` maps a namespace (or "global") to {key: value before linklab first wrote it};
    the updated map is returned for the state file.
    """
    keys = sorted({k for n in lab.nodes for k in n.sysctls} | {k for o in originals.values() for k in o})
    where = classify(keys)
    out = {ns: dict(o) for ns, o in originals.items()}
    wanted: dict[str, dict[str, str]] = {}
    for n in lab.nodes:
        for k, v in n.sysctls.items():
            scope = namespaces[n.name] if where.get(k) == "netns" else "global"
            wanted.setdefault(scope, {})[k] = v
    if wanted.get("global") and not in_lab_vm():
        raise UsageError(f"sysctls {', '.join(sorted(wanted['global']))} are global on this kernel; "
                         "refusing to change the host")
    for scope in sorted(set(wanted) | set(out)):
        want = wanted.get(scope, {})
        orig = out.setdefault(scope, {})
        restore = {k: v for k, v in orig.items() if k not in want}
        if scope == "global":
            for k in want:
                orig.setdefault(k, proc_path(k).read_text().strip())
            write_all({**restore, **want})
        elif scope in namespaces.values():
            orig.update({k: v for k, v in read(scope, [k for k in want if k not in orig]).items()})
            set_in_netns(scope, {**restore, **want})
        for k in restore:
            del orig[k]
    return {scope: o for scope, o in out.items() if o}


def read(ns: str, keys: list[str]) -> dict[str, str]:
    """Current values as seen from inside `ns` (for status and results manifests)."""
    pushns(ns)
    try:
        return {k: proc_path(k).read_text().strip() if proc_path(k).exists() else "" for k in keys}
    finally:
        popns()
