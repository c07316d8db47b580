"""One lab router's own FRR: zebra, ospfd and ospf6d inside the router's namespace.

Each daemon is started with FRR's path space option (`-N <namespace>`), FRR's own way of running
one instance per network namespace: its vty sockets, zserv socket, pid files and OSPF graceful-
restart state all go to /var/run/frr/<namespace>/ (so two routers, two labs or the machine's own
FRR never meet), and `vtysh -N <namespace>` reaches exactly that instance. The daemons start
without configuration; the router's frr.conf (generated, or the user's) is then loaded by vtysh,
which hands each command to the daemon that knows it (FRR's integrated configuration). They run
as FRR's own user `frr` (FRR refuses root unless it is in the frrvty group), log to files linklab
opened for them under the lab's logs directory, and stay in the foreground: a record of each
(linklab/backends/linux/daemons.py) is what `down` stops.
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from linklab import fsutil, runner, setup_groups, state
from linklab.backends.linux import daemons
from linklab.errors import EnvironmentProblem, LinklabError
from linklab.model.frr import DAEMONS

PROGRAM_DIR = Path("/usr/lib/frr")  # Debian's frr puts its daemons here, off PATH
RUN_ROOT = Path("/var/run/frr")  # FRR's compiled-in state directory: -N puts each instance under it
CRASH_ROOT = Path("/var/tmp/frr")  # FRR's per-process crash log directory (<daemon>.<pid>), not movable
USER = "frr"
ZSERV = "zserv.api"  # zebra's socket for the routing daemons, in the router's FRR directory
START_DEADLINE_S = 60.0  # sockets appear in ~0.1 s natively, seconds under software emulation


@dataclass(frozen=True)
class FrrDirs:
    ns: str
    lab: str
    node: str

    @property
    def run(self) -> Path:
        return RUN_ROOT / self.ns

    @property
    def logs(self) -> Path:
        return state.state_dir() / "logs" / self.lab / self.node

    @property
    def config(self) -> Path:
        return self.run / "frr.conf"

    def vtysh(self, *commands: str) -> list[str]:
        """argv of vtysh running `commands` against this router's FRR (from any namespace: it
        reaches the daemons over their sockets)."""
        return ["vtysh", "-N", self.ns, *(x for c in commands for x in ("-c", c))]


def argv(d: FrrDirs, daemon: str) -> list[str]:
    # -f /dev/null: no configuration file of its own (vtysh loads frr.conf); -P 0: no TCP vty
    # (vtysh uses the unix socket); --log stdout: into the file linklab opened for it.
    return [str(PROGRAM_DIR / daemon), "-N", d.ns, "-f", "/dev/null", "-P", "0", "--log", "stdout"]


def installed() -> bool:
    return all((PROGRAM_DIR / daemon).exists() for daemon in DAEMONS) and shutil.which("vtysh") is not None


def checksum(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def start(d: FrrDirs, config: str) -> list[dict[str, Any]]:
    """Start the router's daemons, wait for their sockets, load `config`; their records."""
    if not installed():
        raise EnvironmentProblem("FRR is not installed (routing: ospf runs zebra, ospfd and ospf6d in each router)",
                                 hint=f"install it: {setup_groups.install_command('frr')}")
    remove_rundir(d.ns)  # a dead instance's sockets and pid files
    for directory in (RUN_ROOT, d.run):  # FRR's own, where the package's service never ran (the lab VM's /run)
        if not directory.is_dir():
            directory.mkdir(parents=True)
            shutil.chown(directory, USER, USER)
    shutil.chown(d.run, USER, USER)
    d.logs.mkdir(parents=True, exist_ok=True)
    fsutil.write_atomic(d.config, config)
    recs: list[dict[str, Any]] = []
    try:
        for daemon in DAEMONS:
            with open(d.logs / f"{daemon}.log", "ab") as log:
                proc = runner.start(argv(d, daemon), netns=d.ns, names=False, stdout=log, stderr=log)
            recs.append({**daemons.record(d.node, daemon, proc.pid), "config": checksum(config)})
            if daemon == "zebra":
                # The others connect to zebra's socket once it exists: one that finds none yet
                # retries only ~10 s later (measured: OSPF routes 15 s after start, else 3 s).
                wait_for_sockets(d, recs, [ZSERV])
        wait_for_sockets(d, recs, [f"{daemon}.vty" for daemon in DAEMONS])
        res = runner.run([*d.vtysh()[:3], "-f", str(d.config)], check=False, timeout=60)
        if not res.ok:
            raise LinklabError(f"{d.node}: FRR refused its configuration {d.config}",
                               hint=(res.stdout + res.stderr).strip()[-1500:] or None)
    except BaseException:
        stop(recs)
        raise
    return recs


def wait_for_sockets(d: FrrDirs, recs: list[dict[str, Any]], sockets: list[str]) -> None:
    """Until the sockets (names in the router's FRR directory) exist; a daemon that exits
    meanwhile fails the wait with its log's last lines."""
    def ready() -> bool:
        for r in recs:
            if not daemons.alive(r):
                raise LinklabError(f"{d.node}: FRR's {r['role']} exited at start",
                                   hint=f"its log: {d.logs / (r['role'] + '.log')}\n" + tail(d.logs / f"{r['role']}.log"))
        return all((d.run / name).exists() for name in sockets)

    from linklab.backends.linux.ovsd import wait_for
    wait_for(ready, START_DEADLINE_S, f"{d.node}: FRR's daemons listening", interval=0.05)


def tail(path: Path, n: int = 8) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


def stop(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stop a router's daemons (zebra last: on its way out it removes the routes the others gave
    it); a daemon killed before it could clean up leaves its crash log directory: removed."""
    order = sorted(recs, key=lambda r: r["role"] == "zebra")
    stopped = daemons.stop([r for r in order if r["role"] != "zebra"]) + daemons.stop(
        [r for r in order if r["role"] == "zebra"])
    remove_crash_dirs([r["pid"] for r in recs if isinstance(r.get("pid"), int)])
    return stopped


def remove_crash_dirs(pids: list[int]) -> None:
    """/var/tmp/frr/<daemon>.<pid> of these pids (FRR removes its own on a clean exit)."""
    for pid in pids:
        for daemon in DAEMONS:
            shutil.rmtree(CRASH_ROOT / f"{daemon}.{pid}", ignore_errors=True)


def remove_rundir(ns: str) -> bool:
    """Delete a router's FRR directory (its daemons stopped first); `ns`: its namespace's name."""
    d = RUN_ROOT / ns
    if d.is_dir():
        shutil.rmtree(d, ignore_errors=True)
        return True
    return False
