"""The one way linklab runs external programs: an argv list, an optional lab namespace, a timeout.

Never a shell string. Programs with no library equivalent (iperf3, ping, ovs-vsctl, ethtool) go
through here so that every call is logged, time-bounded and namespace-explicit.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import subprocess
from dataclasses import dataclass

from linklab.errors import CommandFailed

log = logging.getLogger("linklab.runner")

DEFAULT_TIMEOUT = 60.0


@dataclass(frozen=True)
class Result:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    netns: str | None = None

    @property
    def ok(self) -> bool:
        return self.returncode == 0


NETNS_DIR = "/var/run/netns"
# Where a container node's commands run: "<its netns name>@<the pid of its first process>". They
# enter all of the container's namespaces, so they see its own files (its iperf3, its /etc/hosts).
CONTAINER_SEP = "@"


def container_where(netns: str, pid: int) -> str:
    return f"{netns}{CONTAINER_SEP}{pid}"


def netns_of(where: str) -> str:
    """The network namespace name of a place commands run (a container's: the part before @)."""
    return where.split(CONTAINER_SEP, 1)[0]


def container_pid(where: str | None) -> int | None:
    """The pid whose namespaces a container node's commands enter (None: a plain namespace)."""
    if not where or CONTAINER_SEP not in where:
        return None
    return int(where.split(CONTAINER_SEP, 1)[1])


# Tools that enter a named namespace themselves (iproute2's netns_switch, the same work as
# `ip netns exec`): given their own flag, no `ip netns exec` process runs on top of them (~0.2 s
# apiece in the lab VM).
ENTERS_NETNS_ITSELF = {"ip": "-n", "ss": "-N"}


def is_address(text: str) -> bool:
    """Whether a command's target is an IP address, not a lab host name (a name needs the node's
    hosts file, which only `ip netns exec` puts in place). Pure."""
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False


def netns_argv(argv: list[str] | tuple[str, ...], netns: str | None, names: bool = True) -> list[str]:
    """Prefix argv so it runs inside `netns`. `ip netns exec` also bind-mounts
    /etc/netns/<ns>/hosts over /etc/hosts, which is how lab host names resolve. A command that
    resolves no lab names (`names=False`) is entered with `nsenter --net` instead: no new mount
    namespace, no /sys remount, no bind mounts — a noticeably cheaper start under emulation.
    A container node's (`ns@pid`) enters the container's mount, UTS, IPC and network namespaces,
    as `docker exec` would, but not its cgroup or pid namespace: nsenter, since a Docker API exec
    would need its streams relayed by us."""
    argv = [str(a) for a in argv]
    if not argv:
        raise ValueError("empty argv")
    if not netns:
        return argv
    pid = container_pid(netns)
    if pid is not None:
        # Not its pid namespace: nsenter would then fork, and stopping it would leave the command
        # running; without, nsenter execs the command, whose pid is the one the caller holds.
        return ["nsenter", f"--target={pid}", "--mount", "--uts", "--ipc", "--net", "--", *argv]
    flag = ENTERS_NETNS_ITSELF.get(argv[0])
    if flag:
        return [argv[0], flag, netns, *argv[1:]]
    if not names:
        return ["nsenter", f"--net={NETNS_DIR}/{netns}", "--", *argv]
    return ["ip", "netns", "exec", netns, *argv]


def run(
    argv: list[str] | tuple[str, ...],
    *,
    netns: str | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    check: bool = True,
    input: str | None = None,
    env: dict[str, str] | None = None,
    names: bool = True,
) -> Result:
    full = netns_argv(argv, netns, names)
    log.debug("run%s: %s", f" [{netns}]" if netns else "", full)
    try:
        cp = subprocess.run(
            full,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **env} if env else None,
        )
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        raise CommandFailed(list(argv), -1, out, err, netns=netns, timed_out=True) from None
    except FileNotFoundError:
        raise CommandFailed(list(argv), 127, "", f"{full[0]}: not found (run `make setup`)", netns=netns) from None
    res = Result(tuple(str(a) for a in argv), cp.returncode, cp.stdout, cp.stderr, netns)
    if check and not res.ok:
        raise CommandFailed(list(argv), cp.returncode, cp.stdout, cp.stderr, netns=netns)
    return res


def start(
    argv: list[str] | tuple[str, ...],
    *,
    netns: str | None = None,
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
    env: dict[str, str] | None = None,
    stdin=None,
    cwd: str | os.PathLike | None = None,
    names: bool = True,
) -> subprocess.Popen:
    """Start a long-running program (an iperf3 server, a controller) in the background.
    The caller owns the Popen and must stop it; lab teardown also kills every process
    left in a lab namespace. names=False: it resolves no lab host name (netns_argv)."""
    full = netns_argv(argv, netns, names)
    log.debug("start%s: %s", f" [{netns}]" if netns else "", full)
    return subprocess.Popen(full, stdin=stdin, stdout=stdout, stderr=stderr, start_new_session=True,
                            env={**os.environ, **env} if env else None, cwd=cwd)
