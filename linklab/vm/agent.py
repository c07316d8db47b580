"""Guest-side daemon of the lab VM: runs host-sent commands and streams their output back.

Started as the VM's only program (virtme's --script-sh), so when it exits the guest powers off.
It serves several virtio-serial ports at once, one thread each, so concurrent host commands
(`linklab exec` while a sweep runs) do not queue behind each other.

    python -m linklab.vm.agent --ports linklab0,linklab1 --modules bonding,sch_netem
"""

from __future__ import annotations

import argparse
import collections
import faulthandler
import logging
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from linklab import extras
from linklab.kernel import LAB_MODULES, load_modules
from linklab.vm import nsenter, pylibs
from linklab.vm import protocol as P
from linklab.vm.zygote import PRELOAD, Zygote

log = logging.getLogger("linklab.vm.agent")

SYS_PORTS = Path("/sys/class/virtio-ports")
IDLE_SLEEP = 0.05  # a port with no host attached reads EOF at once; this keeps the idle loop cheap
# The guest hears of host disconnects/connects asynchronously, and a "disconnected" can arrive after
# the next client's first bytes. So only a disconnect that lasts this long counts as the client gone.
HUP_GRACE = 2.0
POLL_MS = 100  # how often a running command's loop looks at its exit and deadline
EXIT_POLL_FIRST_MS = 5
GRACE_AFTER_EXIT = 1.0  # a daemon the command left behind may hold its pipes open; don't wait on it
KILL_GRACE = 3.0
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class NamespaceGone(Exception):
    """A command was asked to run in a network namespace that does not exist."""


class HostGone(Exception):
    """The host end of the port stayed closed for HUP_GRACE (its client exited or was killed)."""


def find_ports(names: list[str], *, timeout: float = 30.0, sys_ports: Path = SYS_PORTS) -> dict[str, str]:
    """Map port names to /dev/vportNpM via sysfs; udev may not run in the guest, so
    /dev/virtio-ports/<name> symlinks cannot be relied upon."""
    deadline = time.monotonic() + timeout
    while True:
        found = {}
        for entry in sys_ports.glob("*"):
            try:
                name = (entry / "name").read_text().strip()
            except OSError:
                continue
            if name in names and Path("/dev", entry.name).exists():
                found[name] = f"/dev/{entry.name}"
        if len(found) == len(names) or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def guest_info(modules_failed: list[str], cached_libs: list[str] = ()) -> dict:
    mem_kb = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    except (OSError, ValueError):
        pass
    try:
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        uptime = None
    return {
        "kernel_release": os.uname().release,
        "cpus": os.cpu_count(),
        "mem_total_kb": mem_kb,
        "modules_failed": modules_failed,
        "cached_libs": list(cached_libs),  # mounted read-only with 9p's cache (linklab/vm/pylibs.py)
        "uptime_s": uptime,
        "agent_pid": os.getpid(),
        "python": sys.version.split()[0],
        # os.access reports EROFS, so these say whether the overlay makes them writable.
        "etc_writable": os.access("/etc", os.W_OK),
        "run_writable": os.access("/run", os.W_OK),
    }


class Port:
    """One virtio-serial port, non-blocking, so a vanished host never wedges a read or a write."""

    def __init__(self, path: str | None = None, *, fd: int | None = None):
        self.path = path or f"fd {fd}"
        self.fd = fd if fd is not None else os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        self.absent_since: float | None = None  # when the host was first seen missing, if it is

    def host_absent(self) -> bool:
        """Record that the host looked absent; True once it has been absent for HUP_GRACE."""
        now = time.monotonic()
        if self.absent_since is None:
            self.absent_since = now
        return now - self.absent_since > HUP_GRACE

    def read(self, timeout: float) -> bytes | None:
        """Data; b"" when no host is attached; None when nothing arrived within timeout."""
        p = select.poll()
        p.register(self.fd, select.POLLIN)
        if not p.poll(timeout * 1000):
            return None
        return self.read_now()

    def read_now(self) -> bytes | None:
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return None
        if data:
            self.absent_since = None
        return data

    def send(self, frame: dict) -> None:
        log.debug("%s: send %s", self.path, frame["t"])
        data = memoryview(P.encode(frame))
        p = select.poll()
        p.register(self.fd, select.POLLOUT)
        while data:
            try:
                n = os.write(self.fd, data)
                data = data[n:]
                self.absent_since = None
                continue
            except BlockingIOError:
                pass
            except OSError as e:
                raise HostGone(str(e)) from None
            # Not writable: the host is not reading (backpressure: wait) or not attached (POLLHUP:
            # wait out HUP_GRACE, it may be a reconnect the guest has not heard of yet).
            events = p.poll(200)
            hup = any(ev & select.POLLHUP and not ev & select.POLLOUT for _, ev in events)
            if hup and self.host_absent():
                raise HostGone("host closed the port")
            if not hup and not events:
                self.absent_since = None


def _interrupts_ignored() -> bool:
    return any(signal.getsignal(s) == signal.SIG_IGN for s in (signal.SIGINT, signal.SIGQUIT))


def _default_interrupts() -> None:
    """In the forked child, before exec: a command gets Ctrl-C's default meaning even when the
    agent was started with SIGINT ignored (as under `nohup ... &`, which exec would pass on),
    so a forwarded Ctrl-C reaches it and the command decides. Only signal(2): safe after fork."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def _spawn(argv: list[str], cwd: str, env: dict[str, str], netns: str | None) -> subprocess.Popen:
    """Start a command in its own session (signals go to the whole command, a sweep and its
    iperf3s, like a terminal's Ctrl-C), inside `netns` when given: the forked child enters it
    (nsenter.enter: system calls only, safe after fork in this threaded agent) and execs the
    command itself, one process image fewer than `ip netns exec`."""
    try:
        entry = nsenter.prepare(netns) if netns else None
    except FileNotFoundError:
        raise NamespaceGone(f"no network namespace {netns} (was its lab taken down?)") from None
    ignored = _interrupts_ignored()

    def before_exec() -> None:
        if ignored:
            _default_interrupts()
        if entry is not None:
            nsenter.enter(entry)
    try:
        return subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True,
                                preexec_fn=before_exec if ignored or entry is not None else None)
    finally:
        if entry is not None:
            nsenter.close(entry)


def kill_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def terminate(proc: subprocess.Popen) -> None:
    """TERM the command's whole process group (we made it), KILL it if it lingers, and reap it."""
    from linklab import procs
    procs.stop([proc.pid], grace=KILL_GRACE, group=proc.pid, group_is_ours=True)
    try:
        proc.wait(KILL_GRACE)
    except subprocess.TimeoutExpired:
        log.warning("pid %d survived SIGKILL", proc.pid)


class Agent:
    def __init__(self, info: dict, zygote: Zygote | None = None):
        self.info = info
        self.zygote = zygote
        self.stopping = threading.Event()
        self.children: set[subprocess.Popen] = set()
        self.lock = threading.Lock()

    def ready_info(self) -> dict:
        """The boot facts plus what may change: whether warm runs are fully warm yet."""
        z = self.zygote
        state = "off" if z is None else "gone" if z.gone else "ready" if z.ready.is_set() else "preloading"
        return {**self.info, "zygote": state}

    def track(self, proc: subprocess.Popen | None, add: bool) -> None:
        with self.lock:
            (self.children.add if add else self.children.discard)(proc)

    def kill_all(self) -> None:
        with self.lock:
            procs = list(self.children)
        for proc in procs:
            terminate(proc)


class PortServer:
    """Serves one port: hello -> ready, req -> stream -> exit, shutdown -> bye."""

    def __init__(self, name: str, port: Port, agent: Agent):
        self.name, self.agent, self.port = name, agent, port
        self.reader = P.FrameReader()
        self.pending: collections.deque[dict] = collections.deque()
        self.session: str | None = None  # nonce of the attached client's hello

    def serve_forever(self) -> None:
        while not self.agent.stopping.is_set():
            try:
                frame = self.next_frame(1.0)
                if frame is not None:
                    self.handle(frame)
            except HostGone:
                self.detached()
            except Exception as e:  # one bad request must not take the port down
                log.exception("%s: unexpected error", self.name)
                if self.session is not None:  # a waiting host hears of it instead of waiting forever
                    try:
                        self.port.send(P.error(f"agent failed: {type(e).__name__}: {e}"))
                        self.port.send(P.exit_(P.EXIT_CANNOT_RUN))
                    except Exception:
                        pass
                self.detached()
                time.sleep(IDLE_SLEEP)

    def detached(self) -> None:
        if self.session is not None:
            log.info("%s: host detached", self.name)
        self.pending.clear()
        self.session = None

    def next_frame(self, timeout: float) -> dict | None:
        if self.pending:
            return self.pending.popleft()
        data = self.port.read(timeout)
        if data == b"":
            if self.port.host_absent():
                self.detached()
            time.sleep(IDLE_SLEEP)
        elif data:
            self.feed(data)
        return self.pending.popleft() if self.pending else None

    def feed(self, data: bytes) -> None:
        self.pending.extend(self.reader.feed(data))
        for problem in self.reader.take_dropped():
            log.warning("%s: dropped input: %s", self.name, problem)

    def handle(self, frame: dict) -> None:
        t = frame["t"]
        log.debug("%s: frame %s (session %s)", self.name, t, self.session)
        if t == "hello":
            self.session = str(frame.get("nonce", ""))
            self.port.send(P.ready(self.session, self.agent.ready_info()))
        elif self.session is None:
            log.info("%s: dropped %r frame sent before hello (left by a previous client)", self.name, t)
        elif t == "req":
            self.run_command(frame)
        elif t == "shutdown":
            log.info("%s: shutdown requested", self.name)
            self.port.send(P.bye())
            self.agent.stopping.set()
        elif t == "sig":
            pass  # the command it was meant for has already finished
        else:
            self.port.send(P.error(f"unexpected frame type {t!r}"))

    def run_command(self, frame: dict) -> None:
        try:
            req = P.parse_request(frame)
        except P.ProtocolError as e:
            self.port.send(P.error(str(e)))
            self.port.send(P.exit_(P.EXIT_CANNOT_RUN))
            return
        argv, cwd = req.argv, req.cwd
        child_env = {"PATH": DEFAULT_PATH, **os.environ, **req.env, "LINKLAB_IN_VM": "1"}
        proc = self.agent.zygote.spawn(argv[2], argv[3:], cwd, child_env) if req.warm and self.agent.zygote else None
        log.info("%s: run%s %s (cwd %s%s)", self.name, " warm" if proc else "", argv, cwd,
                 f", netns {req.netns}" if req.netns else "")
        if proc is None:
            try:
                proc = _spawn(argv, cwd, child_env, req.netns)
            except (OSError, subprocess.SubprocessError, NamespaceGone) as e:
                code = P.EXIT_NOT_FOUND if isinstance(e, FileNotFoundError) else P.EXIT_CANNOT_RUN
                # SubprocessError: raised in the child before exec, where only entering the namespace runs.
                why = f"entering network namespace {req.netns} failed" if isinstance(e, subprocess.SubprocessError) else e
                self.port.send(P.output("err", f"linklab agent: cannot run {argv[0]}: {why}\n".encode()))
                self.port.send(P.exit_(code))
                return
        self.agent.track(proc, True)
        try:
            code = self.stream(proc, req.timeout)
        except HostGone:
            log.info("%s: host detached while %s ran; stopping it", self.name, argv[0])
            terminate(proc)
            raise
        finally:
            for f in (proc.stdout, proc.stderr):
                f.close()
            self.agent.track(proc, False)
        if code is not None:
            self.port.send(P.exit_(code))

    def stream(self, proc: subprocess.Popen, timeout: float | None) -> int | None:
        """Relay output and signals until the command ends. None: preempted by a new client."""
        streams = {proc.stdout.fileno(): "out", proc.stderr.fileno(): "err"}
        poller = select.poll()
        poller.register(self.port.fd, select.POLLIN)
        for fd in streams:
            poller.register(fd, select.POLLIN)
        deadline = time.monotonic() + timeout if timeout else None
        exited_at = None
        timed_out = False
        # Once the command has closed its output, only its exit is awaited, and nothing wakes the
        # poll for it: look again after 5 ms, 10, 20... up to the usual 100 (at a steady 100 ms,
        # a short command's exit would wait up to that long).
        exit_wait_ms = EXIT_POLL_FIRST_MS
        while True:
            while self.pending:  # frames that arrived together with the request
                if self.control(proc, self.pending.popleft()):
                    return None
            if streams:
                wait_ms = POLL_MS
            else:
                wait_ms, exit_wait_ms = exit_wait_ms, min(2 * exit_wait_ms, POLL_MS)
            for fd, ev in poller.poll(wait_ms):
                if fd == self.port.fd:
                    data = self.port.read_now()
                    if data == b"":
                        if self.port.host_absent():
                            raise HostGone("host detached")
                        time.sleep(IDLE_SLEEP)  # absent host: the port polls readable (EOF) at once
                    elif data:
                        self.feed(data)
                    continue
                chunk = os.read(fd, P.CHUNK)
                if chunk:
                    for f in P.output_frames(streams[fd], chunk):
                        self.port.send(f)
                else:
                    poller.unregister(fd)
                    del streams[fd]
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and (not streams or now - exited_at > GRACE_AFTER_EXIT):
                break
            if deadline and now > deadline and not timed_out:
                timed_out = True
                self.port.send(P.output("err", f"linklab agent: timed out after {timeout:g} s\n".encode()))
                terminate(proc)
        if timed_out:
            return P.EXIT_TIMEOUT
        return P.returncode_to_exit(proc.returncode)

    def control(self, proc: subprocess.Popen, frame: dict) -> bool:
        """Handle a frame arriving mid-command. True: a new client took over the port."""
        t = frame["t"]
        if t == "sig":
            name = frame.get("sig")
            if name in P.SIGNALS:
                log.info("%s: SIG%s to pid %d", self.name, name, proc.pid)
                kill_group(proc, getattr(signal, f"SIG{name}"))
        elif t == "hello":
            # The previous client vanished without us seeing it detach; its command has no reader.
            log.info("%s: new client while a command ran; stopping the old command", self.name)
            terminate(proc)
            self.pending.appendleft(frame)
            return True
        elif t == "shutdown":
            self.pending.appendleft(frame)
            terminate(proc)
            return True
        else:
            self.port.send(P.error(f"unexpected {t!r} frame while a command runs"))
        return False


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="linklab.vm.agent", description=__doc__)
    ap.add_argument("--ports", required=True, help="comma-separated virtio-serial port names")
    ap.add_argument("--modules", default=",".join(LAB_MODULES), help="comma-separated modules to load first")
    ap.add_argument("--debug", action="store_true", help="log every frame")
    ap.add_argument("--no-zygote", action="store_true", help="run warm requests cold too")
    ap.add_argument("--preload", default=",".join(PRELOAD), help="comma-separated modules the zygote imports")
    ap.add_argument("--cached-libs", default="", help="tag=path,...: Python's library dirs to mount cached")
    ap.add_argument("--no-warm-osken", action="store_true", help="start every OpenFlow controller cold")
    args = ap.parse_args(argv)

    # Only the stdout port reaches the host's agent log; two QEMU file chardevs on one file would overwrite each other.
    os.dup2(1, 2)
    sys.stderr = sys.stdout
    # `kill -USR1 <agent pid>` (run through another port) dumps every thread's stack to the agent log.
    faulthandler.register(signal.SIGUSR1, file=sys.stdout, all_threads=True)
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.INFO, stream=sys.stdout, format="%(asctime)s agent: %(message)s")
    sys.stdout.reconfigure(line_buffering=True)

    # Before anything imports more: every later Python start reads its libraries from the cache.
    cached = pylibs.mount(args.cached_libs)
    log.info("cached read-only: %s", ", ".join(cached) or "none")
    # First, so its imports overlap module loading; until it is ready, warm requests run cold.
    preload = tuple(m for m in args.preload.split(",") if m)
    zygote = None if args.no_zygote else Zygote(sys.executable, preload_modules=preload, cwd=os.getcwd())
    # Forks the labs' controllers; it imports os-ken only when a lab first asks for one. Without
    # the [sdn] extra there is nothing to warm: a controller then fails cold, naming the extra.
    osken = None if args.no_warm_osken or not extras.present("sdn") else subprocess.Popen(
        [sys.executable, "-m", "linklab.osken_warm"], stdin=subprocess.DEVNULL, cwd=os.getcwd())
    names = [n for n in args.ports.split(",") if n]
    modules = [m for m in args.modules.split(",") if m]
    t0 = time.monotonic()
    failed = load_modules(modules)
    log.info("modprobe %s in %.1f s; failed: %s", " ".join(modules), time.monotonic() - t0, failed or "none")

    ports = find_ports(names)
    if len(ports) != len(names):
        log.error("virtio-serial ports missing: %s", sorted(set(names) - set(ports)))
        return 1
    agent = Agent(guest_info(failed, cached), zygote)
    signal.signal(signal.SIGTERM, lambda *_: agent.stopping.set())
    for name, path in sorted(ports.items()):
        server = PortServer(name, Port(path), agent)
        threading.Thread(target=server.serve_forever, name=name, daemon=True).start()
    log.info("ready on %s: %s", ", ".join(f"{n}={p}" for n, p in sorted(ports.items())), agent.info)

    while not agent.stopping.wait(1.0):  # a timed wait keeps the SIGTERM handler responsive
        pass
    agent.kill_all()
    if zygote:
        zygote.close()
    if osken:
        from linklab import procs
        procs.stop_popen([osken])
    os.sync()
    time.sleep(0.2)  # let the bye frame leave the port before the guest powers off
    log.info("shutting down")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
