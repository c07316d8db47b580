"""Host side of one conversation with the guest agent over a QEMU virtio-serial unix socket.

A port carries one conversation at a time: QEMU accepts a single client per chardev socket and
parks any other connection in the listen backlog. So a per-port flock decides who talks; a
command that finds every port busy waits for one.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import time
from pathlib import Path
from typing import BinaryIO, Callable

from linklab import fsutil
from linklab.errors import EnvironmentProblem, StateError
from linklab.vm import protocol as P

log = logging.getLogger("linklab.vm")

# Ctrl-C once asks politely (the command may clean up), again firmer, then kills.
ESCALATION = ("INT", "TERM", "KILL")


class AgentGone(EnvironmentProblem):
    """The socket closed or stayed silent: the VM or its agent is gone."""


class NoAnswer(AgentGone):
    """Nothing arrived before the deadline."""


class PortLock:
    """An exclusive, non-blocking flock on one port's lock file; released on close (or process death)."""

    def __init__(self, path: Path):
        self.path = path
        self.fd: int | None = None

    def try_acquire(self) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = fsutil.try_flock(self.path)
        return self.fd is not None

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def acquire_port(sockets: list[Path], locks: list[Path], *, wait: float) -> tuple[Path, PortLock]:
    """The first free port; polls for up to `wait` seconds when all are busy."""
    deadline = time.monotonic() + wait
    while True:
        for sock, lock_path in zip(sockets, locks):
            lock = PortLock(lock_path)
            if lock.try_acquire():
                return sock, lock
        if time.monotonic() > deadline:
            raise StateError(f"all {len(sockets)} lab VM ports are busy with other commands",
                             hint="wait for them to finish, or raise VMConfig.ports")
        time.sleep(0.2)


class Channel:
    """A connected, handshaken conversation on one port."""

    def __init__(self, sock_path: Path):
        self.sock_path = sock_path
        self.sock: socket.socket | None = None
        self.reader = P.FrameReader()
        self.pending: list[dict] = []

    # -- connection -------------------------------------------------------------------------

    def connect(self, deadline: float, alive: Callable[[], bool] = lambda: True) -> None:
        """Connect, retrying while QEMU has not created the socket yet."""
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
            try:
                s.connect(str(self.sock_path))
                self.sock = s
                return
            except (FileNotFoundError, ConnectionRefusedError) as e:
                s.close()
                if time.monotonic() > deadline or not alive():
                    raise AgentGone(f"cannot connect to the lab VM at {self.sock_path}: {e}") from None
                time.sleep(0.2)

    def handshake(self, deadline: float, alive: Callable[[], bool] = lambda: True) -> dict:
        """hello -> ready; drops anything a previous client left on the port. Returns the guest info."""
        nonce = secrets.token_hex(8)
        self.send(P.hello(nonce))
        while True:
            frame = self.recv(deadline, alive)
            if frame["t"] == "ready" and frame.get("nonce") == nonce:
                return frame.get("info") or {}

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def __enter__(self) -> "Channel":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- frames -----------------------------------------------------------------------------

    def send(self, frame: dict) -> None:
        try:
            self.sock.sendall(P.encode(frame))
        except OSError as e:
            raise AgentGone(f"lab VM connection lost: {e}") from None

    def recv(self, deadline: float | None = None, alive: Callable[[], bool] = lambda: True) -> dict:
        """The next frame. Waits in short slices so a dead VM (alive() False) or a deadline ends the wait."""
        while not self.pending:
            if deadline is not None and time.monotonic() > deadline:
                raise NoAnswer("lab VM agent did not answer in time")
            self.sock.settimeout(0.5)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                if not alive():
                    raise AgentGone("lab VM exited") from None
                continue
            except OSError as e:
                raise AgentGone(f"lab VM connection lost: {e}") from None
            if not data:
                raise AgentGone("lab VM closed the connection (did it shut down or crash?)")
            self.pending.extend(self.reader.feed(data))
            self.reader.take_dropped()  # bytes left over from an earlier conversation on this port
        return self.pending.pop(0)

    # -- one command ------------------------------------------------------------------------

    def run(self, argv: list[str], cwd: str, env: dict[str, str], timeout: float | None,
            stdout: BinaryIO, stderr: BinaryIO, alive: Callable[[], bool] = lambda: True, warm: bool = False,
            netns: str | None = None) -> int:
        """Send one request and relay its output until its exit frame; returns the guest exit code.
        Ctrl-C (KeyboardInterrupt) is forwarded as INT, then TERM, then KILL, and the output keeps
        flowing until the command actually ends, so the caller gets the command's own exit code.
        A fourth Ctrl-C stops waiting and raises KeyboardInterrupt."""
        self.send(P.request(argv, cwd, env, timeout, warm, netns))
        interrupts = 0
        while True:
            try:
                frame = self.recv(None, alive)
                t = frame["t"]
                if t == "out":
                    _write(stdout, P.output_data(frame))
                elif t == "err":
                    _write(stderr, P.output_data(frame))
                elif t == "exit":
                    return int(frame["code"])
                elif t == "error":
                    _write(stderr, f"linklab: lab VM agent: {frame.get('msg')}\n".encode())
            except KeyboardInterrupt:
                if interrupts == len(ESCALATION):
                    raise  # give up waiting; closing the port makes the agent kill what is left
                self.send(P.signal(ESCALATION[interrupts]))
                interrupts += 1


def open_channel(sock_path: Path, deadline: float, alive: Callable[[], bool] = lambda: True,
                 attempt: float = 10.0) -> tuple[Channel, dict]:
    """Connect and handshake, starting over with a fresh connection when an answer is overdue.
    A new connection resets QEMU's side of the port, and hello is safe to repeat."""
    while True:
        ch = Channel(sock_path)
        try:
            ch.connect(deadline, alive)
            return ch, ch.handshake(min(deadline, time.monotonic() + attempt), alive)
        except NoAnswer:
            ch.close()
            if time.monotonic() > deadline:
                raise
            log.debug("no answer on %s within %.0f s; reconnecting", sock_path, attempt)
        except BaseException:
            ch.close()
            raise


def _write(stream, data: bytes) -> None:
    try:
        stream.write(data)
    except TypeError:  # a text stream was passed
        stream.write(data.decode(errors="replace"))
    stream.flush()
