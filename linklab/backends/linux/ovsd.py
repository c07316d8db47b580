"""One lab switch's own Open vSwitch: ovsdb-server and ovs-vswitchd inside the switch's
namespace, with a private database, run directory and logs (OVS's sandbox pattern:
OVS_RUNDIR / OVS_DBDIR / OVS_LOGDIR / OVS_SYSCONFDIR).

The kernel datapath allows one ovs-vswitchd per network namespace, so each OVS switch runs
its own pair in its own namespace: two labs (or a user's OVS on the host) never meet. The
ovs-* programs have no library equivalent, so they go through linklab/runner.py (argv lists,
with the environment passed by `env` so the argv alone says which OVS it talks to).
"""

from __future__ import annotations

import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from linklab import runner, setup_groups, state
from linklab.backends.linux import daemons
from linklab.procs import alive as _alive
from linklab.errors import LinklabError, EnvironmentProblem

RUN_ROOT = Path("/run/linklab-ovs")  # sockets and the database: local tmpfs (not the shared project dir)
SCHEMA = Path("/usr/share/openvswitch/vswitch.ovsschema")
START_DEADLINE_S = 60.0
SOCKET_TOOLS = ("ovs-vsctl", "ovs-ofctl", "ovs-appctl")  # clients of the daemons' unix sockets


@dataclass(frozen=True)
class OvsDirs:
    """One OVS instance: in a lab switch's namespace, or (ns None) in the root namespace, where an
    exported Mininet script's OVSSwitch puts its bridges (the kernel tier and bench start one)."""

    ns: str | None
    lab: str
    node: str

    @property
    def run(self) -> Path:
        return RUN_ROOT / (self.ns or f"root-{self.lab}-{self.node}")

    @property
    def logs(self) -> Path:
        return state.state_dir() / "logs" / self.lab / self.node

    @property
    def db(self) -> Path:
        return self.run / "conf.db"

    def env(self) -> dict[str, str]:
        return {"OVS_RUNDIR": str(self.run), "OVS_DBDIR": str(self.run), "OVS_LOGDIR": str(self.logs),
                "OVS_SYSCONFDIR": str(self.run)}

    def tool_argv(self, tool: str, *args: str) -> list[str]:
        """argv of an ovs-* tool, to run with env() in its environment."""
        return [tool, *(["--timeout=15"] if tool == "ovs-vsctl" else []), *args]

    def argv(self, tool: str, *args: str) -> list[str]:
        """argv running an ovs-* tool against this switch's OVS from anywhere (its environment
        given by `env`): what `linklab ovs` runs."""
        return ["env", *(f"{k}={v}" for k, v in sorted(self.env().items())), *self.tool_argv(tool, *args)]

    def where(self, tool: str) -> str | None:
        """The namespace `tool` runs in: the daemons (and ovs-dpctl, which speaks netlink to the
        datapath) in the switch's; the tools that reach the daemons over their unix sockets in
        the run directory anywhere, so they skip `ip netns exec` (~0.2 s a call in the lab VM,
        where a sweep of an OpenFlow lab makes hundreds of them)."""
        return None if tool in SOCKET_TOOLS else self.ns

    def run_tool(self, tool: str, *args: str, check: bool = True, timeout: float = 30) -> runner.Result:
        # The environment given directly, not by `env`: one process start less (~0.1-0.3 s in the lab VM).
        return runner.run(self.tool_argv(tool, *args), netns=self.where(tool), check=check, timeout=timeout,
                          env=self.env())


def tools_at_once(d: OvsDirs, calls: list[tuple[str, ...]]) -> list[runner.Result]:
    """Run independent reads (`(tool, *args)`, never checked) side by side: each is a process
    start of ~0.3-0.5 s in the lab VM, mostly waiting on the emulator, so a switch's snapshot
    takes about the longest of them instead of their sum."""
    with ThreadPoolExecutor(max_workers=len(calls) or 1) as pool:
        return list(pool.map(lambda call: d.run_tool(*call, check=False), calls))


def vsctl(d: OvsDirs, *args: str, check: bool = True) -> runner.Result:
    return d.run_tool("ovs-vsctl", *args, check=check)


OFCTL = ("ovs-ofctl", "-O", "OpenFlow13")  # OpenFlow 1.3, the only version lab bridges accept (protocols=OpenFlow13)


def ofctl(d: OvsDirs, *args: str, check: bool = True) -> runner.Result:
    return d.run_tool(*OFCTL, *args, check=check)


def running(d: OvsDirs, owned: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """This switch's live ovsdb-server/ovs-vswitchd: as recorded, or (after an interrupted
    `up` that recorded nothing) as their pidfiles in the lab's private run directory say."""
    recs = [r for r in owned if r["node"] == d.node and r["role"] in ("ovsdb-server", "ovs-vswitchd")
            and daemons.alive(r)]
    for role in ("ovsdb-server", "ovs-vswitchd"):
        if not any(r["role"] == role for r in recs):
            pid = daemons.read_pidfile(d.run / f"{role}.pid")
            if pid and _alive(pid) and pid in daemons.netns_pids_running(d.ns, role):
                recs.append(daemons.record(d.node, role, pid))
    return recs


def start(d: OvsDirs, datapath: str) -> list[dict[str, Any]]:
    """Start this switch's ovsdb-server and ovs-vswitchd (the recipe measured in the lab VM, ~4 s)."""
    for tool in ("ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovsdb-tool"):
        if shutil.which(tool) is None and not Path("/usr/sbin", tool).exists():
            raise EnvironmentProblem(f"{tool} not found", hint=f"install it: {setup_groups.install_command('ovs')}")
    _modprobe("openvswitch")
    if datapath == "netdev":
        _modprobe("tun")  # the userspace datapath's internal ports are tap devices
    d.run.mkdir(parents=True, exist_ok=True)
    d.logs.mkdir(parents=True, exist_ok=True)
    for stale in d.run.glob("*"):  # a previous, dead instance's sockets and pidfiles
        if stale.is_file() or stale.is_socket():
            stale.unlink()
    d.run_tool("ovsdb-tool", "create", str(d.db), str(SCHEMA))
    d.run_tool("ovsdb-server", str(d.db), f"--remote=punix:{d.run / 'db.sock'}",
               f"--pidfile={d.run / 'ovsdb-server.pid'}", "--detach", f"--log-file={d.logs / 'ovsdb-server.log'}")
    recs = [daemons.record(d.node, "ovsdb-server", _pid(d.run / "ovsdb-server.pid"))]
    vsctl(d, "--no-wait", "init")
    d.run_tool("ovs-vswitchd", f"unix:{d.run / 'db.sock'}", f"--pidfile={d.run / 'ovs-vswitchd.pid'}",
               "--detach", f"--log-file={d.logs / 'ovs-vswitchd.log'}")
    recs.append(daemons.record(d.node, "ovs-vswitchd", _pid(d.run / "ovs-vswitchd.pid")))
    return recs


def _pid(pidfile: Path) -> int:
    pid = daemons.read_pidfile(pidfile)
    if pid is None:
        raise LinklabError(f"{pidfile.name} was not written: the OVS daemon did not start",
                           hint=f"see the logs in {pidfile.parent}")
    return pid


def _modprobe(module: str) -> None:
    if not Path("/sys/module", module).exists():
        res = runner.run(["modprobe", module], check=False, timeout=30)
        if not res.ok and not Path("/sys/module", module).exists():
            raise EnvironmentProblem(f"kernel module {module} cannot be loaded: {res.stderr.strip()}",
                                    hint="run the lab in the lab VM (`linklab up --vm`)")


def remove_rundir(ns: str) -> bool:
    """Delete a switch's database and sockets (its daemons are stopped first); `ns`: the name of
    its directory (OvsDirs.run)."""
    d = RUN_ROOT / ns
    if d.is_dir():
        shutil.rmtree(d, ignore_errors=True)
        return True
    return False


def wait_for(pred, deadline_s: float, what: str, interval: float = 0.2, why=lambda: "") -> float:
    """Poll `pred` until it holds (an event we cannot subscribe to), else fail naming `what`."""
    t0 = time.monotonic()
    while True:
        if pred():
            return time.monotonic() - t0
        if time.monotonic() - t0 > deadline_s:
            raise LinklabError(f"{what}: not within {deadline_s:.0f} s", hint=why() or None)
        time.sleep(interval)



def stop(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stop one OVS instance's daemons (as start() recorded them); returns those stopped."""
    # ovs-vswitchd first: with ovsdb-server gone first it would retry its database for seconds.
    return daemons.stop([r for r in recs if r["role"] == "ovs-vswitchd"]) + daemons.stop(
        [r for r in recs if r["role"] == "ovsdb-server"])
