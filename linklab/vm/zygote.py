"""A pre-imported Python in the guest that forks `python -m <module>` runs ("warm" runs).

Under software emulation a cold `python -c "import pydantic, pyroute2"` takes ~12 s in the guest
(the interpreter is ~20x slower and every import stats files over 9p); forking an interpreter that
imported them once at boot takes a fraction of a second.

Differences from a cold `python -m`: modules imported at preload keep whatever they computed at
import time (so module-level code must not read the environment or cwd), and threads started at
import are not copied. When a loaded linklab source file changes, the zygote re-executes itself
(fresh imports) and that one run goes cold.

The agent starts it as `python -m linklab.vm.zygote --fd N` with one end of a SOCK_SEQPACKET
socketpair. Messages are JSON; a spawn carries the command's stdout and stderr pipe ends as fds.
  agent -> zygote  {"t":"spawn","id":n,"module":m,"args":[...],"cwd":c,"env":{...}} + [out_fd, err_fd]
  zygote -> agent  {"t":"ready","failed":[...]}   once, after preloading
                   {"t":"spawned","id":n,"pid":p} | {"t":"spawned","id":n,"stale":true}
                   {"t":"exit","pid":p,"code":c}  shell convention: 128+N for signal N
"""

from __future__ import annotations

import argparse
import atexit
import gc
import hashlib
import importlib
import io
import json
import logging
import os
import runpy
import select
import signal
import socket
import sys
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

log = logging.getLogger("linklab.vm.zygote")

# A module that does not exist only means a colder run.
# linklab.backends.linux.backend: every lab command reaches the backend, and importing it (with its
# kinds, tc, bond and netlink modules) in each forked run cost ~1 s under TCG.
# "module:function" imports the module and calls the function once: linklab.cli:warm builds the
# command-line parser, 0.25 s of every forked run under TCG.
PRELOAD = ("linklab.cli", "yaml", "pydantic", "pyroute2", "linklab.lab", "linklab.backends.linux.backend", "linklab.cli:warm")
# The host puts a digest of linklab's sources in a warm run's environment (tree_digest: ~10 ms
# on the host). The zygote compares it with the digest it took before importing, instead of stat'ing
# its loaded files over 9p before every run (0.17 s under TCG).
SOURCES_ENV = "LINKLAB_SOURCES"
# The longest a command waits for the first preload (~30 s alone in a software-emulated VM,
# minutes under heavy contention); past it, it runs cold.
FIRST_PRELOAD_WAIT_S = 120.0
REAP_TICK_S = 1.0  # a missed wakeup (none known) costs at most this
STAT_THREADS = 16
MAX_MSG = 1 << 20


def send_msg(sock: socket.socket, msg: dict, fds: list[int] = ()) -> None:
    data = json.dumps(msg).encode()
    if fds:
        socket.send_fds(sock, [data], list(fds))
    else:
        sock.send(data)


def recv_msg(sock: socket.socket) -> tuple[dict | None, list[int]]:
    data, fds, _flags, _addr = socket.recv_fds(sock, MAX_MSG, 4)
    if not data:
        for fd in fds:
            os.close(fd)
        return None, []
    return json.loads(data), fds


# -- zygote side ------------------------------------------------------------------------------------


def preload(modules: list[str]) -> list[str]:
    failed = []
    for name in modules:
        try:
            module, _, function = name.partition(":")
            loaded = importlib.import_module(module)
            if function:
                getattr(loaded, function)()
        except Exception as e:  # a missing optional module only means a colder run
            failed.append(f"{name}: {type(e).__name__}: {e}")
    # What is loaded now stays: the collector no longer walks it, so a forked run neither pays
    # for a full collection over the preloaded modules (0.13 s under TCG) nor copies every page
    # it would touch doing so.
    gc.freeze()
    return failed


def _stats(files: list) -> list[os.stat_result | None]:
    """os.stat of each file (None: gone), side by side: a stat over the VM's shared directory is
    a round trip to the host, ~6 ms under TCG."""
    def stat(f) -> os.stat_result | None:
        try:
            return os.stat(f)
        except OSError:
            return None

    with ThreadPoolExecutor(STAT_THREADS) as pool:
        return list(pool.map(stat, files))


def tree_digest(roots: list[Path]) -> str:
    """Names, sizes and mtimes of every .py file under roots, hashed: the same on the host and in
    the guest (one filesystem, shared), and different once any source is edited."""
    files = sorted(f for r in roots for f in Path(r).rglob("*.py"))
    entries = (f"{f} {st.st_size} {st.st_mtime_ns}" if st else f"{f} -" for f, st in zip(files, _stats(files)))
    return hashlib.sha256("\n".join(entries).encode()).hexdigest()


def package_root() -> Path:
    """linklab's own sources: what the zygote watches unless told otherwise."""
    return Path(__file__).resolve().parent.parent


def source_snapshot(roots: list[Path]) -> dict[str, int]:
    """mtimes of loaded module files under roots: what a warm run would otherwise run stale."""
    files = [f for mod in list(sys.modules.values()) if (f := getattr(mod, "__file__", None))
             and any(Path(f).is_relative_to(r) for r in roots)]
    return {f: st.st_mtime_ns if st else -1 for f, st in zip(files, _stats(files))}


def exit_code(status: int) -> int:
    return 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def serve(sock: socket.socket, modules: list[str], roots: list[Path]) -> None:
    # After a re-exec, commands forked by the previous image may end while this one imports.
    signal.signal(signal.SIGCHLD, lambda *_: reap(sock))
    tree = tree_digest(roots)  # before importing: a file edited meanwhile then shows as stale
    failed = preload(modules)
    # From here the loop reaps. A child's exit wakes it at once (waiting for a 0.2 s tick would be
    # the largest part of a short forwarded command): SIGCHLD gets a handler that does nothing, so
    # Python writes to the wakeup pipe for it.
    wake_r, wake_w = os.pipe()
    for fd in (wake_r, wake_w):
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    snapshot = source_snapshot(roots)
    send_msg(sock, {"t": "ready", "failed": failed, "pid": os.getpid()})
    while True:
        reap(sock)
        ready = select.select([sock, wake_r], [], [], REAP_TICK_S)[0]
        if wake_r in ready:
            while _drained(wake_r):
                pass
        if sock not in ready:
            continue
        msg, fds = recv_msg(sock)
        if msg is None:  # the agent is gone
            return
        if msg.get("t") != "spawn" or len(fds) != 2:
            for fd in fds:
                os.close(fd)
            continue
        given = (msg.get("env") or {}).get(SOURCES_ENV)
        if (given != tree) if given else (source_snapshot(roots) != snapshot):
            for fd in fds:
                os.close(fd)
            send_msg(sock, {"t": "spawned", "id": msg.get("id"), "stale": True})
            reexec(sock, modules, roots)
        pid = os.fork()
        if pid == 0:
            sock.close()
            signal.set_wakeup_fd(-1)
            os.close(wake_r)
            os.close(wake_w)
            child(msg, fds[0], fds[1])  # never returns
        for fd in fds:
            os.close(fd)
        send_msg(sock, {"t": "spawned", "id": msg.get("id"), "pid": pid})


def _drained(fd: int) -> bool:
    """Read what the wakeup pipe holds; False once it is empty."""
    try:
        return bool(os.read(fd, 512))
    except BlockingIOError:
        return False


def reap(sock: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        send_msg(sock, {"t": "exit", "pid": pid, "code": exit_code(status)})


def reexec(sock: socket.socket, modules: list[str], roots: list[Path]) -> None:
    """Start over with fresh imports; same pid, so running children stay ours to reap."""
    os.set_inheritable(sock.fileno(), True)
    argv = [sys.executable, "-m", "linklab.vm.zygote", "--fd", str(sock.fileno()),
            "--preload", ",".join(modules), *[a for r in roots for a in ("--watch", str(r))]]
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os.execv(sys.executable, argv)


def child(msg: dict, out_fd: int, err_fd: int) -> None:
    """The forked command: make the process look like a fresh `python -m module args`, run, exit."""
    code = 1
    try:
        os.setsid()  # own process group: the agent signals the whole command, as for cold runs
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGUSR1):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        for fd in {devnull, out_fd, err_fd} - {0, 1, 2}:
            os.close(fd)
        env = {str(k): str(v) for k, v in (msg.get("env") or {}).items()}
        os.environ.clear()
        os.environ.update(env)
        unbuffered = bool(env.get("PYTHONUNBUFFERED"))
        sys.stdin = open(0, "r", closefd=False)
        sys.stdout = io.TextIOWrapper(open(1, "wb", closefd=False, buffering=0 if unbuffered else -1),
                                      write_through=unbuffered, line_buffering=False)
        sys.stderr = io.TextIOWrapper(open(2, "wb", closefd=False, buffering=0 if unbuffered else -1),
                                      errors="backslashreplace", write_through=True, line_buffering=True)
        try:
            os.chdir(msg["cwd"])
        except OSError as e:
            sys.stderr.write(f"linklab agent: cannot run {msg.get('module')}: {e}\n")
            os._exit(127)
        sys.path[0] = msg["cwd"]  # what `python -m` puts first
        sys.argv = ["-m", *msg.get("args", [])]
        code = run_module(msg["module"])
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)


def run_module(module: str) -> int:
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code & 0xFF
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        finish()
        # Like the interpreter: die of SIGINT so the caller sees 130.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        code = 130
    except BaseException:
        traceback.print_exc()
        code = 1
    finish()
    return code


def finish() -> None:
    """What interpreter shutdown would do: wait for non-daemon threads, run atexit, flush."""
    for t in threading.enumerate():
        if t is not threading.main_thread() and not t.daemon:
            t.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="linklab.vm.zygote")
    ap.add_argument("--fd", type=int, required=True, help="this end of the agent's SOCK_SEQPACKET socketpair")
    ap.add_argument("--preload", default=",".join(PRELOAD))
    ap.add_argument("--watch", action="append", type=Path,
                    help="re-exec when a loaded module under this directory changes (default: linklab's)")
    args = ap.parse_args(argv)
    sock = socket.socket(fileno=args.fd)
    os.set_inheritable(sock.fileno(), False)  # commands must not hold the agent's socket
    roots = args.watch or [package_root()]
    serve(sock, [m for m in args.preload.split(",") if m], [r.resolve() for r in roots])
    return 0


# -- agent side -------------------------------------------------------------------------------------


class WarmChild:
    """A zygote-forked command, shaped like the parts of subprocess.Popen the agent uses."""

    def __init__(self, pid: int, stdout, stderr):
        self.pid, self.stdout, self.stderr = pid, stdout, stderr
        self.returncode: int | None = None
        self._done = threading.Event()

    def _exited(self, code: int) -> None:
        # Popen convention (the agent turns -N back into 128+N)
        self.returncode = -(code - 128) if code > 128 else code
        self._done.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        import subprocess
        if not self._done.wait(timeout):
            raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout)
        return self.returncode


class Zygote:
    """The agent's handle on the zygote process; thread-safe."""

    def __init__(self, python: str = sys.executable, preload_modules: tuple[str, ...] = PRELOAD,
                 watch: list[Path] | None = None, cwd: str | None = None):
        import subprocess
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        argv = [python, "-m", "linklab.vm.zygote", "--fd", str(theirs.fileno()), "--preload", ",".join(preload_modules)]
        for w in watch or []:
            argv += ["--watch", str(w)]
        self.proc = subprocess.Popen(argv, pass_fds=[theirs.fileno()], cwd=cwd, stdin=subprocess.DEVNULL)
        theirs.close()
        self.sock = ours
        self.ready = threading.Event()  # preloaded and serving
        self.preloaded_once = False  # the first preload finished (later ones follow a source change)
        self.failed: list[str] = []
        self.gone = False
        self._lock = threading.Lock()
        self._next_id = 0
        self._waiting: dict[int, tuple[threading.Event, dict]] = {}
        self._children: dict[int, WarmChild] = {}
        self._early_exits: dict[int, int] = {}
        threading.Thread(target=self._read, name="zygote", daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                msg, fds = recv_msg(self.sock)
            except (OSError, ValueError):
                msg, fds = None, []
            for fd in fds:
                os.close(fd)
            if msg is None:
                break
            t = msg.get("t")
            if t == "ready":
                self.failed = msg.get("failed", [])
                self.preloaded_once = True
                self.ready.set()
                log.info("zygote ready: warm runs from now on%s",
                         f"; could not preload: {'; '.join(self.failed)}" if self.failed else "")
            elif t == "spawned":
                if msg.get("stale"):
                    self.ready.clear()  # it is re-executing; runs go cold until its next "ready"
                with self._lock:
                    event, slot = self._waiting.pop(msg.get("id"), (None, None))
                if event is not None:
                    slot.update(msg)
                    event.set()
            elif t == "exit":
                with self._lock:
                    child = self._children.pop(msg["pid"], None)
                    if child is None:  # exit reported before spawn() registered the child
                        self._early_exits[msg["pid"]] = msg["code"]
                if child is not None:
                    child._exited(msg["code"])
        # The zygote died: nobody will report the running commands' exits.
        self.gone = True
        self.ready.set()
        with self._lock:
            children, self._children = list(self._children.values()), {}
            waiting, self._waiting = list(self._waiting.values()), {}
        for child in children:
            child._exited(255)
        for event, _ in waiting:
            event.set()

    def spawn(self, module: str, args: list[str], cwd: str, env: dict[str, str]) -> WarmChild | None:
        """Fork the command in the zygote; None means "run it cold": sources changed (it is
        re-importing them), still preloading after FIRST_PRELOAD_WAIT_S, or zygote gone.

        A command that comes while the first preload runs waits for it: a cold run imports the
        same modules, and both importing at once on the VM's two vCPUs slow each other down
        (bench/README.md#start-up-times)."""
        if not self.preloaded_once:
            self.ready.wait(FIRST_PRELOAD_WAIT_S)
        if not self.ready.is_set() or self.gone:
            return None
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        event, slot = threading.Event(), {}
        with self._lock:
            self._next_id += 1
            rid = self._next_id
            self._waiting[rid] = (event, slot)
        try:
            send_msg(self.sock, {"t": "spawn", "id": rid, "module": module, "args": args, "cwd": cwd, "env": env},
                     [out_w, err_w])
            answered = event.wait(30)
        except OSError:
            answered = False
        finally:
            os.close(out_w)
            os.close(err_w)
        if not answered and not self.gone:
            # It would run the command late, after we ran it cold: make sure it cannot.
            log.warning("zygote did not answer; stopping it, runs are cold from now on")
            self.proc.kill()
            self.gone = True
        pid = slot.get("pid") if answered else None
        if not pid:
            with self._lock:
                self._waiting.pop(rid, None)
            os.close(out_r)
            os.close(err_r)
            if slot.get("stale"):
                log.info("zygote: linklab sources changed; it restarts, this run goes cold")
            return None
        child = WarmChild(pid, os.fdopen(out_r, "rb", buffering=0), os.fdopen(err_r, "rb", buffering=0))
        with self._lock:
            code = self._early_exits.pop(pid, None)
            if code is None:
                self._children[pid] = child
        if code is not None:
            child._exited(code)
        return child

    def close(self) -> None:
        # shutdown, not just close: the reader thread's blocked recv keeps the socket open otherwise.
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        try:
            self.proc.wait(5)
        except Exception:
            self.proc.kill()


if __name__ == "__main__":
    raise SystemExit(main())
