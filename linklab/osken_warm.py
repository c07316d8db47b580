"""A warm os-ken: one process that imported os-ken once and forks each controller from there.

Under software emulation an `osken-manager` spends most of an SDN lab's `up` importing
(eventlet, oslo.config, os-ken's OpenFlow parsers) before it listens
(bench/README.md#start-up-times). A fork of a process that did those imports listens within
seconds.

The lab VM's agent starts this server in the guest (`python -m linklab.osken_warm`);
it imports nothing heavy until the first request, so a VM that runs no controller pays nothing.
Elsewhere nothing starts it: `start` finds no server and the controller kind starts
`osken-manager` cold, as before (natively os-ken imports in ~2 s).

What a forked controller is: `osken-manager ARGS` (its os_ken.cmd.manager.main, run in the
child), in the namespace asked for, with the environment asked for, its own session, stdout and
stderr on the file passed, named `osken-manager` (/proc/<pid>/comm, what a cold one is called).
Its command line is the server's: a lab cannot tell its app and port from it, so an unrecorded
warm controller (an `up` killed after the fork) is stopped, never adopted. Its parent is the
server, which reaps it.

Protocol: an abstract unix SOCK_SEQPACKET socket (per network namespace: the guest's root one),
one request per connection, JSON, the log file's descriptor passed along:
  client -> server  {"args": [...], "env": {...}, "netns": name|null, "cwd": dir} + [log_fd]
  server -> client  {"pid": n} once the child runs in its namespace under its name | {"error": text}
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import importlib
import json
import logging
import os
import signal
import socket
import sys
import traceback
# Bound now, before preload: os-ken's import monkey-patches os, select and socket with eventlet's
# green versions, which need a hub. The server keeps to these originals (blocking, hub-free): a
# hub made in the server would be inherited by every controller forked from it.
from os import fork, read, waitpid, write
from select import select
from socket import socket as _ORIGINAL_SOCKET

from linklab import controllers, kernel

log = logging.getLogger("linklab.osken_warm")

ADDRESS = "linklab-osken-warm"  # an abstract socket name: bound as "\0" + it
PROCESS_NAME = "osken-manager"  # what a cold one is called (its console script's name)
SERVER_NAME = "osken-warm"  # how the server shows in ps
# What the bundled apps load (the OpenFlow handler and parsers, packet and LACP libraries), imported
# after osken-manager's own import and thread patch (preload()).
PRELOAD = ("os_ken.controller.ofp_handler", "os_ken.ofproto.ofproto_v1_3_parser", "os_ken.lib.packet.packet",
           "os_ken.lib.lacplib")
# The longest a client waits for its answer: the first request waits for the preload (~20 s in a
# quiet VM, minutes on a contended host). Past it, the client starts the controller cold.
ANSWER_WAIT_S = 300.0
CHILD_READY_WAIT_S = 30.0
REAP_TICK_S = 1.0
MAX_MSG = 1 << 20
CLONE_NEWNET = 0x40000000


# -- client side (the controller kind) ---------------------------------------------------------------


def start(args: list[str], env: dict[str, str], netns: str | None, log_fd: int,
          address: str = ADDRESS, wait_s: float = ANSWER_WAIT_S) -> int | None:
    """The pid of `osken-manager args` forked by the warm server, or None: no server here (not
    in the lab VM, or it failed), no answer within `wait_s`, or the fork failed. None means
    "start it cold"; what went wrong is logged."""
    if address == ADDRESS and not kernel.in_lab_vm():
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.connect("\0" + address)
        request = {"args": args, "env": env, "netns": netns, "cwd": os.getcwd()}
        socket.send_fds(sock, [json.dumps(request).encode()], [log_fd])
        sock.settimeout(wait_s)
        answer = json.loads(sock.recv(MAX_MSG) or b"{}")
    except (OSError, ValueError) as e:
        log.debug("warm os-ken not used: %s", e)
        return None
    finally:
        sock.close()
    if "pid" not in answer:
        log.warning("warm os-ken could not start a controller (starting it cold): %s", answer.get("error", "no answer"))
        return None
    return int(answer["pid"])


# -- server side (in the lab VM) ----------------------------------------------------------------------


def preload(modules: tuple[str, ...] = PRELOAD) -> list[str]:
    """What a cold osken-manager does before it loads its app, in its order: its import (which
    patches all but threads), then its main()'s thread patch (eventlet's walk over every lock,
    done once here); then `modules`. Returns what failed (a child imports it itself)."""
    failed = []
    try:
        import os_ken.cmd.manager  # noqa: F401
        from os_ken.lib import hub
        hub.patch(thread=True)
    except Exception as e:
        failed.append(f"os_ken.cmd.manager: {type(e).__name__}: {e}")
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as e:
            failed.append(f"{name}: {type(e).__name__}: {e}")
    # What is loaded now stays: a controller's collections do not walk it, nor copy its pages.
    gc.freeze()
    return failed


def _set_name(name: str) -> None:
    with open("/proc/self/comm", "w") as f:
        f.write(name)


def _enter_netns(name: str) -> None:
    # setns(2): os.setns is Python 3.12+. `ip netns exec` would also remount /sys and bind
    # /etc/netns/<ns>; a controller reads neither (it listens on 127.0.0.1, resolves no names).
    fd = os.open(f"/var/run/netns/{name}", os.O_RDONLY | os.O_CLOEXEC)
    try:
        if ctypes.CDLL(None, use_errno=True).setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns {name}: {os.strerror(err)}")
    finally:
        os.close(fd)


def child(request: dict, log_fd: int, ready_w: int) -> None:
    """The forked controller: its session, namespace, files, environment and name; then say so
    on `ready_w` and run osken-manager's main(). Never returns."""
    code, told = 1, False
    try:
        os.setsid()
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        if request.get("netns"):
            _enter_netns(request["netns"])
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        for fd in {devnull, log_fd} - {0, 1, 2}:
            os.close(fd)
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in request.get("env", {}).items()})
        os.chdir(request.get("cwd") or "/")
        _set_name(PROCESS_NAME)
        sys.argv = [PROCESS_NAME, *request.get("args", [])]
        write(ready_w, b"ok")
        os.close(ready_w)
        told = True  # from here its number may be another file's
        from os_ken.cmd.manager import main as manager_main
        code = manager_main() or 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException as e:
        traceback.print_exc()
        if not told:  # the server answers with this instead of a pid
            write(ready_w, f"{type(e).__name__}: {e}".encode()[:4000])
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)


def _child_ready(ready_r: int) -> str:
    """What the child wrote before its main(): "ok", or why it failed ("" if it died silently)."""
    got = b""
    while select([ready_r], [], [], CHILD_READY_WAIT_S)[0]:
        chunk = read(ready_r, 4096)
        if not chunk:
            break
        got += chunk
        if got == b"ok":
            break
    return got.decode(errors="replace")


class Server:
    """Forks controllers on request; imports os-ken at the first one; reaps what it forked."""

    def __init__(self, address: str):
        self.listener = _ORIGINAL_SOCKET(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.listener.bind("\0" + address)
        self.listener.listen(16)
        self.preloaded = False
        self.uid = os.getuid()
        # A child's exit wakes the loop (SIGCHLD writes to the wakeup pipe): none stays a zombie.
        self.wake_r, self.wake_w = os.pipe()
        for fd in (self.wake_r, self.wake_w):
            os.set_blocking(fd, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)

    def serve_forever(self) -> None:
        while True:
            reap()
            ready = select([self.listener, self.wake_r], [], [], REAP_TICK_S)[0]
            if self.wake_r in ready:
                while _drained(self.wake_r):
                    pass
            if self.listener in ready:
                # not accept(): it builds the socket class named in the socket module, green
                # once os-ken is imported
                fd, _addr = self.listener._accept()
                with _ORIGINAL_SOCKET(fileno=fd) as conn:
                    try:
                        self.handle(conn)
                    except OSError as e:
                        log.warning("request failed: %s", e)

    def handle(self, conn: socket.socket) -> None:
        """One request: fork, answer with the pid (or why not)."""
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)  # struct ucred: pid, uid, gid
        if int.from_bytes(creds[4:8], sys.byteorder) != self.uid:
            return  # only the user the agent runs as (root) starts controllers
        data, fds, _flags, _addr = socket.recv_fds(conn, MAX_MSG, 1)
        try:
            request = json.loads(data) if data else None
        except ValueError:
            request = None
        if not isinstance(request, dict) or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            return
        if not self.preloaded:
            failed = preload()
            self.preloaded = True
            log.info("os-ken imported%s", f"; could not: {'; '.join(failed)}" if failed else "")
        ready_r, ready_w = os.pipe()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()  # or the child would write what is buffered here a second time
        pid = fork()
        if pid == 0:
            for fd in (self.listener.fileno(), conn.fileno(), self.wake_r, self.wake_w, ready_r):
                os.close(fd)
            child(request, fds[0], ready_w)
        os.close(fds[0])
        os.close(ready_w)
        said = _child_ready(ready_r)
        os.close(ready_r)
        if said != "ok":  # failed, or silent for CHILD_READY_WAIT_S: it must not live on unrecorded
            os.kill(pid, signal.SIGKILL)
        answer = {"pid": pid} if said == "ok" else {"error": said or "the controller exited before it started"}
        try:
            conn.send(json.dumps(answer).encode())
        except OSError:  # the client gave up waiting and starts one cold: this one would hold its port
            if "pid" in answer:
                os.kill(pid, signal.SIGKILL)


def reap() -> None:
    while True:
        try:
            pid, _status = waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _drained(fd: int) -> bool:
    try:
        return bool(read(fd, 512))
    except BlockingIOError:
        return False


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="linklab.osken_warm", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--address", default=ADDRESS, help=argparse.SUPPRESS)  # tests run their own
    args = ap.parse_args(argv)
    # Its own handler, not the root logger's: a forked controller keeps the root logger, which
    # os-ken's import set up for it.
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s osken-warm: %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    # eventlet reads this when imported (by the preload): as for every controller (MANAGER_ENV).
    os.environ.update(dict(v.split("=", 1) for v in controllers.MANAGER_ENV))
    _set_name(SERVER_NAME)
    server = Server(args.address)
    log.info("listening; os-ken is imported at the first request")
    server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
