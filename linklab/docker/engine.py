"""linklab's own Docker engine, started where the lab runs, the first time a lab needs it.

Its own dockerd (Debian's docker.io) on its own socket, never the machine's Docker: linklab sees
only the containers it made, and a user's containers are never in its reach. It adds nothing to
the machine's network (no docker0 bridge, no iptables rules: container nodes have no Docker
network, linklab joins their namespaces to the lab), and its containerd objects live in a
namespace of their own.

Its storage (images, container layers) is a tmpfs at STORAGE (RAM): inside the lab VM, whose
root is the host's filesystem shared read-only over 9p, overlay layers cannot live on it; and
a lab's containers, like its namespaces, do not outlive the machine. Images come back from
the tarballs `make images` left (linklab/docker/images.py) when the engine starts afresh.
The engine keeps running after `down` (starting it costs seconds); `linklab clean` stops it,
and frees its tmpfs, when no container is left; it goes with the lab VM.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import socket
import time
from pathlib import Path

from linklab import kernel, procs, runner, setup_groups
from linklab.docker.api import Api
from linklab.errors import EnvironmentProblem, LinklabError

ROOT = Path("/run/linklab/docker")
SOCKET = ROOT / "docker.sock"
STORAGE = ROOT / "storage"  # the tmpfs
PIDFILE = ROOT / "dockerd.pid"
LOG = ROOT / "dockerd.log"
# containerd is started by linklab, not by dockerd: dockerd gives the containerd it starts a
# fixed 15 s (libcontainerd/supervisor: startupTimeout), which a loaded emulated machine missed.
CONTAINERD_SOCKET = ROOT / "containerd.sock"
CONTAINERD_CONFIG = ROOT / "containerd.toml"
# No CRI plugin (Kubernetes'): nothing here uses it, and it costs seconds to start.
CONTAINERD_TOML = 'version = 2\ndisabled_plugins = ["io.containerd.grpc.v1.cri"]\n'
# Generous for a loaded emulated machine (dockerd's start: bench/README.md#start-up-times).
# dockerd that exits meanwhile is reported at once with its log.
START_DEADLINE_S = 240.0
# How long a dockerd of ours, on its storage, may go without answering before it is taken for
# dead: under software emulation one that imports an image or starts containers can miss a 5 s
# ping, and stopping it stops every container it runs.
BUSY_PATIENCE_S = 60.0
INSTALL_HINT = f"install Docker (Debian's docker.io): {setup_groups.install_command('containers')}"
MS_NOSUID, MS_NODEV = 0x2, 0x4
MNT_DETACH = 2


def containerd_argv() -> list[str]:
    return ["containerd", f"--config={CONTAINERD_CONFIG}", f"--address={CONTAINERD_SOCKET}",
            f"--root={STORAGE / 'containerd'}", f"--state={ROOT / 'containerd-state'}"]


def argv() -> list[str]:
    return ["dockerd", f"--host=unix://{SOCKET}", f"--containerd={CONTAINERD_SOCKET}", f"--data-root={STORAGE / 'data'}", f"--exec-root={ROOT / 'exec'}",
            f"--pidfile={PIDFILE}", "--bridge=none", "--iptables=false", "--ip-masq=false", "--ip-forward=false",
            "--storage-driver=overlay2", "--containerd-namespace=linklab", "--containerd-plugins-namespace=linklab-plugins",
            "--exec-opt=native.cgroupdriver=cgroupfs", "--log-driver=json-file", "--live-restore=false",
            "--userland-proxy=false"]


def running() -> Api | None:
    """The engine if it answers with its storage in place (never starts it)."""
    api = Api(SOCKET)
    return api if SOCKET.exists() and os.path.ismount(STORAGE) and api.ping() else None


def connect(say=print) -> Api:
    """The engine, started if it is not running (EnvironmentProblem, exit 4: no Docker here)."""
    api = running() or _busy()
    if api is not None:
        return api
    if not shutil.which("dockerd"):
        raise EnvironmentProblem("container nodes need Docker, and dockerd is not installed here", hint=INSTALL_HINT)
    say("linklab: starting linklab's Docker engine (its storage on a tmpfs at " + str(STORAGE) + ")")
    _stop_daemons()  # ours, no longer answering (or left running on storage no longer there)
    _storage()
    kernel.load_modules(["overlay"])  # overlay2 layers; a failure shows in dockerd's log
    ROOT.mkdir(parents=True, exist_ok=True)
    CONTAINERD_CONFIG.write_text(CONTAINERD_TOML)
    _start(containerd_argv(), "containerd", lambda: _answers(CONTAINERD_SOCKET))
    api = Api(SOCKET)
    _start(argv(), "dockerd", api.ping)
    return api


def _busy(patience: float = BUSY_PATIENCE_S) -> Api | None:
    """A dockerd of ours that runs on its storage but did not answer: waited for up to
    `patience` seconds (None at once when there is none, or its storage is gone)."""
    api, deadline = Api(SOCKET), time.monotonic() + patience
    while daemons()["dockerd"] and os.path.ismount(STORAGE) and time.monotonic() < deadline:
        if api.ping():
            return api
        time.sleep(1)
    return None


def daemons() -> dict[str, list[int]]:
    """This engine's running daemons, found by the socket each one's command line names: no
    other dockerd or containerd uses those paths. Not by a record of what was started: a command
    killed between starting a daemon and recording it left one that a record would not know, and
    the storage was then released under it (its images gone from under a running dockerd)."""
    return {"dockerd": procs.carrying(f"--host=unix://{SOCKET}", "dockerd"),
            "containerd": procs.carrying(f"--address={CONTAINERD_SOCKET}", "containerd")}


def _stop_daemons(grace: float = procs.GRACE_S) -> bool:
    """Stop the engine's daemons, dockerd first (on TERM it stops its containers, through
    containerd); whether a dockerd was among them."""
    found = daemons()
    for name in ("dockerd", "containerd"):
        procs.stop(found[name], grace=grace)
    return bool(found["dockerd"])


def _start(cmd: list[str], name: str, ready) -> None:
    """Start one of the engine's daemons and wait until it answers (or exits: its log in the
    error)."""
    with open(LOG, "ab") as log:
        proc = runner.start(cmd, stdout=log, stderr=log)
    deadline = time.monotonic() + START_DEADLINE_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise EnvironmentProblem(f"{name} exited ({proc.returncode}) while starting", hint=f"its log {LOG}:\n" + tail())
        if ready():
            return
        time.sleep(0.2)
    raise LinklabError(f"{name} did not answer within {START_DEADLINE_S:.0f} s", hint=tail())


def _answers(path: Path) -> bool:
    """Whether a unix socket accepts connections."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(2)
        s.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        s.close()


def stop(release_storage: bool = False) -> bool:
    """Stop linklab's engine (its containers go with it), and with `release_storage` free its
    tmpfs (images are imported again on next use); False: it was not running."""
    stopped = _stop_daemons(grace=15.0)
    # Never under a daemon still running (one the kernel could not kill): it would go on with
    # its images in a detached tmpfs that the next engine cannot see.
    if release_storage and os.path.ismount(STORAGE) and not any(daemons().values()):
        ctypes.CDLL(None, use_errno=True).umount2(str(STORAGE).encode(), MNT_DETACH)
    return stopped


def tail(n: int = 15) -> str:
    try:
        return "\n".join(LOG.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


def _storage() -> None:
    """A tmpfs at STORAGE, mounted once (mount(2) through libc: Python has no call for it)."""
    STORAGE.mkdir(parents=True, exist_ok=True)
    if os.path.ismount(STORAGE):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(b"linklab-docker", str(STORAGE).encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=0711") != 0:
        err = ctypes.get_errno()
        raise EnvironmentProblem(f"cannot mount a tmpfs for Docker's storage at {STORAGE}: {os.strerror(err)}",
                                 hint="linklab needs root")
