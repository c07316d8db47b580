"""The persistent lab VM: boot it once (QEMU via virtme-ng), run commands in it, stop it.

The VM outlives the CLI invocation that booted it; everything another invocation needs to find
it again lives in <state_dir>/vm/vm.json. QEMU carries an ownership mark (-name linklab-vm-<hash
of state_dir>) so a VM left behind by a crash can be found by exact match and stopped.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO, Callable

import linklab
from linklab import procs
from linklab.fsutil import read_json_record, write_json_atomic
from linklab.errors import EnvironmentProblem, NoLabUp, StateError, UsageError
from linklab.kernel import LAB_MODULES, lab_modules_present
from linklab.vm import hostcpu, pylibs
from linklab.vm import protocol as P
from linklab.vm.client import AgentGone, acquire_port, open_channel
from linklab.vm.host import alive as _alive
from linklab.vm.host import find_orphan_vms, kernel_release_of, kvm_usable, marker_for, newest_kernel
from linklab.vm.host import has_mark as _has_mark
from linklab.vm.zygote import PRELOAD

__all__ = ["LabVM", "VMConfig", "find_orphan_vms", "forwarded_env", "marker_for", "newest_kernel"]

ACCELS = ("auto", "kvm", "tcg")
ACCEL_ENV = "LINKLAB_VM_ACCEL"
PORT_NAME = "linklab{}"
# Host variables a command inside the VM should see; the rest (HOME, SSH_*, DISPLAY...) describe the host session.
FORWARD_ENV = ("PATH", "LANG", "LANGUAGE", "TERM", "COLUMNS", "LINES", "NO_COLOR", "TZ", "VIRTUAL_ENV")
FORWARD_PREFIXES = ("LINKLAB_", "LC_", "PYTHON")
# Characters safe in a QEMU option value and a virtme path argument (no ',', '=', spaces).
SAFE_PATH = re.compile(r"[A-Za-z0-9_./+@%:-]+")


@dataclass(frozen=True)
class VMConfig:
    cpus: int = 2
    memory: str = "2G"
    kernel: Path | None = None  # None: the newest /boot/vmlinuz-*
    accel: str = "auto"  # auto | kvm | tcg; env LINKLAB_VM_ACCEL overrides
    ports: int = 4  # concurrent host commands
    modules: tuple[str, ...] = LAB_MODULES
    boot_timeout: float = 240.0  # TCG boots in ~25 s on an idle 2-core host; leave room for a busy one
    kvm_timeout: float = 40.0  # the known KVM failure is a silent hang right after decompression
    kvm_stall: float = 15.0  # under KVM a healthy boot never goes this long without console output
    verbose_console: bool = True  # kernel messages in console.log, for diagnosing boots that fail
    qemu_args: tuple[str, ...] = ()  # extra QEMU arguments, appended last (so they override)
    # Guest kernel options (virtme-run --kopt) under software emulation. None by default:
    # bench/vm_kernel_args.py measured tsc=reliable, no5lvl, mitigations=off speeding up clock reads only.
    tcg_kernel_args: tuple[str, ...] = ()
    warm_preload: tuple[str, ...] = PRELOAD  # what the guest's zygote imports once for warm runs; () = none
    # The interpreter's stdlib and site-packages shared again read-only and cached in the guest
    # (linklab/vm/pylibs.py; what it saves: bench/README.md#start-up-times).
    cache_python_libs: bool = True
    # A warm os-ken in the guest forks the labs' OpenFlow controllers (linklab/osken_warm.py; what
    # it saves: bench/README.md#start-up-times); False: every controller starts cold.
    warm_osken: bool = True


def forwarded_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    environ = os.environ if environ is None else environ
    return {k: v for k, v in environ.items() if k in FORWARD_ENV or k.startswith(FORWARD_PREFIXES)}


def _tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_bytes()[-16384:].replace(b"\0", b"").decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


# A guest CPU stuck this long in its kernel is not coming back (software emulation can leave the
# vCPUs spinning: bench/README.md#the-lab-vm), and a command waiting on it would wait until its
# caller's own limit. The guest's watchdog reports every ~28 s; a host so loaded that the VM was
# descheduled can report tens of seconds, never minutes.
LOCKUP_LIMIT_S = 120
LOCKUP_CHECK_S = 10.0
LOCKUP_LINE = re.compile(r"watchdog: BUG: soft lockup - CPU#\d+ stuck for (\d+)s! \[[^\]\n]*\]")


def kernel_lockup(console: str, limit_s: int = LOCKUP_LIMIT_S) -> str | None:
    """The last soft-lockup report in console text whose CPU was stuck at least limit_s. Pure."""
    stuck = [m.group(0) for m in LOCKUP_LINE.finditer(console) if int(m.group(1)) >= limit_s]
    return stuck[-1] if stuck else None


def console_lockup(console_log: Path, since: int = 0) -> str | None:
    """kernel_lockup over what a console log gained after byte `since` (its last 64 KiB at most:
    a stuck guest keeps reporting, so the newest report is at the end); None if unreadable."""
    try:
        with open(console_log, "rb") as f:
            f.seek(max(since, f.seek(0, os.SEEK_END) - 65536))
            return kernel_lockup(f.read().decode(errors="replace"))
    except OSError:
        return None


class GuestLockedUp(AgentGone):
    """The guest kernel reported a CPU stuck for minutes: the VM will not answer again."""


MACHINE_CACHE_ENV = "LINKLAB_MACHINE_CACHE"


def machine_cache_dir() -> Path:
    """What linklab learned about this machine, shared by its checkouts and state directories:
    whether KVM boots a guest here (a failed try costs ~15-20 s), how long a boot took."""
    return Path(os.environ.get(MACHINE_CACHE_ENV) or "/var/cache/linklab")


class BootFailed(Exception):
    """One boot attempt failed; the caller decides between falling back and giving up."""


# -- the VM ---------------------------------------------------------------------------------------


class LabVM:
    def __init__(self, state_dir: Path, config: VMConfig = VMConfig(), rwdirs: list[Path] | None = None):
        self.state_dir = Path(state_dir).resolve()
        self.config = config
        self.rwdirs = [Path(d).resolve() for d in (rwdirs if rwdirs is not None else [Path.cwd()])]
        self.dir = self.state_dir / "vm"
        self.json_path = self.dir / "vm.json"
        self.console_log = self.dir / "console.log"
        self.agent_log = self.dir / "agent.log"
        self.accel_cache = machine_cache_dir() / "vm-accel.json"
        self.marker = marker_for(self.state_dir)
        self._proc: subprocess.Popen | None = None  # set only in the process that booted the VM

    # -- paths ------------------------------------------------------------------------------

    def _socket_dir(self) -> Path:
        # Unix socket paths are limited to 108 bytes, and QEMU option values must not contain ','.
        d = self.dir / "sock"
        longest = str(d / f"{PORT_NAME.format(self.config.ports - 1)}.sock")
        if len(longest) < 100 and SAFE_PATH.fullmatch(longest):
            return d
        return Path(tempfile.gettempdir()) / self.marker

    def _sockets(self, info: dict | None = None) -> list[Path]:
        if info and info.get("sockets"):
            return [Path(s) for s in info["sockets"]]
        d = self._socket_dir()
        return [d / f"{PORT_NAME.format(i)}.sock" for i in range(self.config.ports)]

    def _locks(self, n: int) -> list[Path]:
        return [self.dir / "locks" / f"port{i}.lock" for i in range(n)]

    @contextlib.contextmanager
    def _boot_lock(self):
        """Serialises up/down between concurrent CLI invocations on this state dir."""
        self.dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.dir / "boot.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    # -- state ------------------------------------------------------------------------------

    def info(self) -> dict | None:
        return read_json_record(self.json_path)

    def running(self) -> bool:
        info = self.info()
        pid = info.get("pid") if info else None
        return isinstance(pid, int) and _alive(pid) and _has_mark(pid, self.marker)

    def host_rss_kb(self) -> int | None:
        """QEMU's resident memory on the host (guest RAM is touched lazily, so this grows with use)."""
        info = self.info()
        try:
            for line in Path(f"/proc/{info['pid']}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        except (OSError, TypeError, KeyError, ValueError):
            pass
        return None

    # -- accel choice -----------------------------------------------------------------------

    def _kernel(self) -> Path:
        kernel = Path(self.config.kernel) if self.config.kernel else newest_kernel()
        if not kernel.is_file():
            raise EnvironmentProblem(f"lab VM kernel {kernel} does not exist")
        return kernel

    def _accel_key(self, kernel: Path) -> str:
        return f"{kernel}|host {os.uname().release}"

    def _write_accel_cache(self, cache: dict) -> None:
        self.accel_cache.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.accel_cache, cache)

    def _kvm_failed_before(self, kernel: Path) -> dict | None:
        return ((read_json_record(self.accel_cache) or {}).get("kvm_failed") or {}).get(self._accel_key(kernel))

    def _record_kvm_failure(self, kernel: Path, reason: str) -> None:
        cache = read_json_record(self.accel_cache) or {}
        cache.setdefault("kvm_failed", {})[self._accel_key(kernel)] = {
            "at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "reason": reason}
        self._write_accel_cache(cache)

    def _wanted_accel(self) -> str:
        accel = os.environ.get(ACCEL_ENV) or self.config.accel
        if accel not in ACCELS:
            raise UsageError(f"lab VM acceleration {accel!r} is not one of {', '.join(ACCELS)}",
                             hint=f"check {ACCEL_ENV}" if os.environ.get(ACCEL_ENV) else None)
        return accel

    # -- up ---------------------------------------------------------------------------------

    def ensure_running(self, say: Callable[[str], None] = print) -> dict:
        """Boot the VM unless it already runs; returns vm.json's content. Safe to call repeatedly."""
        with self._boot_lock():
            info = self.info()
            if info and self.running():
                self._say_if_python_libs_changed(info, say)
                return info
            self._clear_leftovers(say)
            kernel = self._kernel()
            accel = self._wanted_accel()
            if accel == "auto":
                accel = "kvm" if kvm_usable() and not self._kvm_failed_before(kernel) else "tcg"
                if accel == "kvm":
                    try:
                        return self._boot(kernel, "kvm", say)
                    except BootFailed as e:
                        self._record_kvm_failure(kernel, str(e))
                        say(f"lab VM: KVM did not boot ({e}); using software emulation from now on "
                            f"(forget this by deleting {self.accel_cache})")
                        accel = "tcg"
            try:
                return self._boot(kernel, accel, say)
            except BootFailed as e:
                raise EnvironmentProblem(
                    f"lab VM did not boot: {e}\n--- {self.console_log} (tail) ---\n{_tail(self.console_log)}"
                    f"\n--- {self.agent_log} (tail) ---\n{_tail(self.agent_log)}",
                    hint=f"retry with {ACCEL_ENV}=tcg" if accel == "kvm" else "check that qemu-system-x86 is installed",
                ) from None

    def _python_libs(self) -> list[Path]:
        if not self.config.cache_python_libs:
            return []
        return [d for d in pylibs.library_dirs() if SAFE_PATH.fullmatch(str(d))]

    def _say_if_python_libs_changed(self, info: dict, say: Callable[[str], None]) -> None:
        libs = info.get("python_libs") or {}
        if libs and pylibs.stamp() != libs.get("stamp"):
            say("lab VM: Python packages changed since it started, and it reads them as they were then "
                "(cached: linklab/vm/pylibs.py); `linklab vm stop` (labs in it go down) to start it anew")

    def _clear_leftovers(self, say: Callable[[str], None]) -> None:
        orphans = find_orphan_vms(self.state_dir)
        if orphans:
            say(f"lab VM: stopping a VM left over from an earlier run (pid {', '.join(map(str, orphans))})")
            self._kill(orphans, (read_json_record(self.json_path) or {}).get("pgid"))
        self._remove_runtime_files()

    # -- who uses it -------------------------------------------------------------------------

    @contextlib.contextmanager
    def session(self):
        """While this process runs a command in the VM (`linklab vm run`): recorded, so that an
        automatic stop (the last lab's `down` in another process, a `--stop-after`) leaves the VM
        to it. A crashed session's record names a process that is gone, and counts for nothing."""
        path = self.dir / "sessions" / str(os.getpid())
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, procs.identity(os.getpid()) or {"pid": os.getpid()})
        try:
            yield
        finally:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def sessions(self) -> list[int]:
        """The pids of other processes' `vm run` sessions still running; records of ended ones
        are removed."""
        out = []
        for path in sorted((self.dir / "sessions").glob("*")):
            record = read_json_record(path) or {}
            if record.get("pid") == os.getpid():
                continue
            if procs.is_same(record):
                out.append(record["pid"])
            else:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
        return out

    def _remove_runtime_files(self, info: dict | None = None) -> None:
        for sock in self._sockets(info):
            with contextlib.suppress(FileNotFoundError):
                sock.unlink()
        with contextlib.suppress(FileNotFoundError):
            self.json_path.unlink()

    def _command(self, kernel: Path, accel: str, sockets: list[Path], libs: list[Path]) -> list[str]:
        bindir = Path(sys.executable).parent
        virtme_run = bindir / "virtme-run"
        if not virtme_run.exists():
            raise EnvironmentProblem(f"{virtme_run} not found (virtme-ng is not installed in this environment)",
                                     hint="run scripts/setup.sh")
        for p in [*self.rwdirs, *sockets]:
            if not SAFE_PATH.fullmatch(str(p)):
                raise UsageError(f"path {str(p)!r} cannot be shared with the lab VM (use only letters, digits and _./+@%:-)")
        src_root = Path(linklab.__file__).resolve().parent.parent
        names = [PORT_NAME.format(i) for i in range(len(sockets))]
        # cd to the source root so `python -m` imports this very linklab, installed or not.
        script = shlex.join(["cd", str(src_root)]) + " && exec " + shlex.join([
            sys.executable, "-m", "linklab.vm.agent", "--ports", ",".join(names),
            "--modules", ",".join(self.config.modules),
            *(["--preload", ",".join(self.config.warm_preload)] if self.config.warm_preload else ["--no-zygote"]),
            *(["--cached-libs", pylibs.agent_arg(libs)] if libs else []),
            *([] if self.config.warm_osken else ["--no-warm-osken"]),
            *(["--debug"] if os.environ.get("LINKLAB_AGENT_DEBUG") == "1" else [])])
        qemu = ["-name", self.marker, "-device", "virtio-serial-pci,id=llserial", *pylibs.qemu_args(libs)]
        for i, (name, sock) in enumerate(zip(names, sockets)):
            qemu += ["-chardev", f"socket,id=ll{i},path={sock},server=on,wait=off",
                     "-device", f"virtserialport,bus=llserial.0,chardev=ll{i},name={name}"]
        # What `vng --run <kernel> --exec ...` hands to virtme-run (virtme-ng 1.42), but as an argv list:
        # vng joins it into an unquoted shell string. No --net: the guest gets no NIC at all (QEMU -net none).
        cmd = [str(virtme_run), "--name", "linklab", "--script-sh", script]
        for d in self.rwdirs:
            cmd += ["--rwdir", str(d)]
        for d in ("/etc", "/lib", "/home", "/opt", "/srv", "/usr", "/var", "/tmp"):
            cmd += ["--overlay-rwdir", d]
        cmd += ["--pwd", "--kimg", str(kernel), "--mods", "auto",
                "--cpus", str(self.config.cpus), "--memory", str(self.config.memory)]
        if accel == "tcg":
            cmd.append("--disable-kvm")
            for opt in self.config.tcg_kernel_args:
                cmd += ["--kopt", opt]
        if self.config.verbose_console:
            cmd += ["--show-boot-console", "--verbose"]
        return cmd + ["--qemu-opts", *qemu, *self.config.qemu_args]

    def _boot(self, kernel: Path, accel: str, say: Callable[[str], None]) -> dict:
        cfg = self.config
        release = kernel_release_of(kernel)
        how = "software emulation (TCG)" if accel == "tcg" else "hardware virtualization (KVM)"
        last = ((read_json_record(self.accel_cache) or {}).get("last_ready_s") or {}).get(accel)
        expect = f"about {last:.0f} s last time" if last else ("about 25 s" if accel == "tcg" else "a few seconds")
        say(f"starting lab VM: kernel {release}, {how}, {cfg.cpus} vCPUs, {cfg.memory} — {expect}")
        sock_dir = self._socket_dir()
        sock_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        sockets = self._sockets()
        self._remove_runtime_files()
        libs = self._python_libs()
        cmd = self._command(kernel, accel, sockets, libs)
        libs_stamp = pylibs.stamp()  # before the boot: what the guest's cache starts from
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        t0 = time.monotonic()
        with open(self.console_log, "wb") as console, open(self.agent_log, "wb") as agent:
            # Own session: the VM must survive this CLI process and its terminal's signals.
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=agent, stderr=console,
                                    cwd=self.rwdirs[0] if self.rwdirs else None, env=env, start_new_session=True)
        self._proc = proc
        try:
            with procs.terminate_raises():  # a `kill` mid-boot cleans up like Ctrl-C does
                qemu_pid, guest = self._await_ready(proc, sockets, accel, t0)
        except BaseException as e:  # including Ctrl-C: never leave a half-booted VM behind
            self._kill(find_orphan_vms(self.state_dir), proc.pid)
            if proc.poll() is None:  # QEMU not forked yet: virtme-run alone
                procs.stop([proc.pid], grace=0, group=proc.pid, group_is_ours=True)
            self._reap()
            if isinstance(e, (BootFailed, AgentGone)):
                raise BootFailed(str(e)) from None
            raise
        ready_s = round(time.monotonic() - t0, 1)
        info = {
            "pid": qemu_pid, "pgid": proc.pid, "marker": self.marker,
            "kernel": str(kernel), "kernel_release": guest.get("kernel_release", release),
            "accel": accel, "cpus": cfg.cpus, "memory": cfg.memory,
            "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "ready_s": ready_s, "sockets": [str(s) for s in sockets],
            "modules_failed": guest.get("modules_failed", []),
            "rwdirs": [str(d) for d in self.rwdirs], "guest": guest,
            # What the host's kernel has: a command inside may need to know what the host would
            # build natively (placement.host_has).
            "host_kernel": {"release": os.uname().release, "lab_modules": lab_modules_present()},
            "python_libs": {"dirs": [str(d) for d in libs], "stamp": libs_stamp} if libs else None,
            "console_log": str(self.console_log), "agent_log": str(self.agent_log),
        }
        write_json_atomic(self.json_path, info)
        cache = read_json_record(self.accel_cache) or {}
        cache.setdefault("last_ready_s", {})[accel] = ready_s
        self._write_accel_cache(cache)
        failed = info["modules_failed"]
        say(f"lab VM ready in {ready_s:.0f} s" + (f"; modules that failed to load: {' '.join(failed)}" if failed else ""))
        return info

    def _await_ready(self, proc: subprocess.Popen, sockets: list[Path], accel: str, t0: float) -> tuple[int, dict]:
        cfg = self.config
        deadline = t0 + (cfg.kvm_timeout if accel == "kvm" else cfg.boot_timeout)
        progress = {"size": -1, "at": t0}

        def alive() -> bool:
            if proc.poll() is not None:
                raise BootFailed(f"QEMU exited with code {proc.returncode} during boot")
            if accel == "kvm":  # the known KVM failure mode is silence, so fail fast on it
                size = sum(p.stat().st_size for p in (self.console_log, self.agent_log) if p.exists())
                now = time.monotonic()
                if size != progress["size"]:
                    progress.update(size=size, at=now)
                elif now - progress["at"] > cfg.kvm_stall:
                    raise BootFailed(f"no console output for {cfg.kvm_stall:.0f} s (hung)")
            if time.monotonic() > deadline:
                raise BootFailed(f"no answer from the guest agent within {deadline - t0:.0f} s")
            return True

        qemu_pid = None
        while qemu_pid is None:  # virtme-run forks QEMU after building the initramfs
            alive()
            pids = find_orphan_vms(self.state_dir)
            qemu_pid = pids[0] if pids else None
            if qemu_pid is None:
                time.sleep(0.2)
        ch, guest = open_channel(sockets[0], deadline, alive)
        ch.close()
        return qemu_pid, guest

    # -- commands ---------------------------------------------------------------------------

    def _require(self) -> dict:
        info = self.info()
        if not info or not self.running():
            raise NoLabUp("the lab VM is not running", hint="start it with `linklab up`")
        return info

    def _alive_check(self, info: dict) -> Callable[[], bool]:
        """Whether the VM still runs, asked while waiting on it; raises GuestLockedUp when its
        console reported a kernel lockup since this wait began (looked at every LOCKUP_CHECK_S)."""
        try:
            since = self.console_log.stat().st_size
        except OSError:
            since = 0
        next_look = [time.monotonic() + LOCKUP_CHECK_S]

        def alive() -> bool:
            if not _alive(info["pid"]):
                return False
            if time.monotonic() >= next_look[0]:
                next_look[0] = time.monotonic() + LOCKUP_CHECK_S
                line = console_lockup(self.console_log, since)
                if line:
                    raise GuestLockedUp(f"the lab VM's kernel locked up ({line.removeprefix('watchdog: ')})")
            return True
        return alive

    def run(self, argv: list[str], *, cwd: str | Path, env: dict[str, str] | None = None,
            timeout: float | None = None, stdout: BinaryIO | None = None, stderr: BinaryIO | None = None,
            port_wait: float = 600.0, warm: bool = False, netns: str | None = None) -> int:
        """Run argv inside the VM, streaming its output live; returns its exit code.
        env: variables layered over the guest's environment (default: forwarded_env()).
        timeout: the guest kills the command after this many seconds (exit code 124).
        warm: argv is `python -m <module> ...`; run it in the guest's pre-imported interpreter
        (see linklab.vm.zygote for what differs from a cold start).
        netns: run argv inside that named network namespace of the guest (linklab.vm.nsenter).
        Ctrl-C is forwarded to the guest command; the command's own exit code comes back."""
        stdout = stdout if stdout is not None else sys.stdout.buffer
        stderr = stderr if stderr is not None else sys.stderr.buffer
        info = self._require()
        sockets = self._sockets(info)
        sock, lock = acquire_port(sockets, self._locks(len(sockets)), wait=port_wait)
        alive = self._alive_check(info)
        try:
            for s in (sys.stdout, sys.stderr):  # keep text printed earlier ahead of the streamed bytes
                with contextlib.suppress(Exception):
                    s.flush()
            ch, _ = open_channel(sock, time.monotonic() + 60, alive)
            # Host CPU is sampled for sweeps (disturbance.host_disturbed). A user's command in a node
            # (`linklab exec`) has no measurement window, and a sample costs two fsyncs at its start.
            # The command is told where the samples are: it may run under another state directory.
            env = forwarded_env() if env is None else env
            recorder = contextlib.nullcontext()
            if netns is None:
                recorder = hostcpu.Recorder(self.dir / hostcpu.FILE, info["pid"])
                env = {**env, hostcpu.ENV: str(self.dir / hostcpu.FILE)}
            with ch, recorder:
                return ch.run([str(a) for a in argv], str(cwd), env, timeout, stdout, stderr, alive, warm, netns)
        except GuestLockedUp as e:
            tail = _tail(self.console_log, 10)
            self.stop(say=lambda _: None)  # a stuck kernel never recovers: nothing of it is worth keeping
            raise EnvironmentProblem(f"{e}: stopped it; the labs in it are gone\n--- {self.console_log} (tail) ---\n"
                                     f"{tail}", hint="`linklab up` boots a new one. A soft lockup of a vCPU under "
                                     "software emulation is the emulator's (QEMU TCG), not the lab's") from None
        except AgentGone as e:
            raise EnvironmentProblem(f"{e}\n--- {self.console_log} (tail) ---\n{_tail(self.console_log, 10)}",
                                     hint="`linklab down` then `linklab up` restarts the lab VM") from None
        finally:
            lock.release()

    def run_linklab(self, args: list[str], *, cwd: str | Path, env: dict[str, str] | None = None, **kw) -> int:
        """`python -m linklab <args>` in the guest, warm: ~1 s of start-up instead of 15 s or more under TCG."""
        from linklab.vm.zygote import SOURCES_ENV, package_root, tree_digest
        env = {**(env or {}), SOURCES_ENV: tree_digest([package_root()])}
        return self.run([sys.executable, "-m", "linklab", *args], cwd=cwd, env=env, warm=True, **kw)

    def ping(self, timeout: float = 30.0) -> dict:
        """Handshake with the agent on a free port; returns the guest info plus the round trip in ms."""
        info = self._require()
        sockets = self._sockets(info)
        sock, lock = acquire_port(sockets, self._locks(len(sockets)), wait=timeout)
        try:
            t0 = time.monotonic()
            ch, guest = open_channel(sock, t0 + timeout, self._alive_check(info))
            ch.close()
            return {**guest, "rtt_ms": round((time.monotonic() - t0) * 1000, 1)}
        except AgentGone as e:
            raise EnvironmentProblem(str(e)) from None
        finally:
            lock.release()

    # -- down -------------------------------------------------------------------------------

    def stop(self, say: Callable[[str], None] = print, timeout: float = 30.0) -> None:
        """Shut the VM down: ask the agent (clean guest poweroff), then signals. Idempotent."""
        with self._boot_lock():
            info = self.info() or {}
            pids = set(find_orphan_vms(self.state_dir))
            if not pids:
                self._remove_runtime_files(info)
                self._reap()
                return
            say("stopping lab VM")
            if self._ask_shutdown(info):
                end = time.monotonic() + timeout
                while time.monotonic() < end and any(_alive(p) for p in pids):
                    time.sleep(0.2)
            self._kill(sorted(p for p in pids if _alive(p)), info.get("pgid"))
            self._reap()
            self._remove_runtime_files(info)

    def _ask_shutdown(self, info: dict) -> bool:
        sockets = self._sockets(info)
        try:
            sock, lock = acquire_port(sockets, self._locks(len(sockets)), wait=2.0)
        except StateError:
            return False
        try:
            ch, _ = open_channel(sock, time.monotonic() + 15, attempt=5.0)
            with ch:
                ch.send(P.shutdown())
                while ch.recv(time.monotonic() + 10)["t"] != "bye":
                    pass
            return True
        except (AgentGone, OSError):
            return False
        finally:
            lock.release()

    def _kill(self, pids: list[int], pgid: int | None) -> None:
        """TERM then KILL each marked QEMU and, if it is theirs, the launcher's process group (virtme-run).
        The group is signalled only while a marked QEMU is in it: a stale pgid may have been reused."""
        procs.stop(pids, grace=5.0, group=pgid)

    def _reap(self) -> None:
        if self._proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(10)
            self._proc = None
