"""Wire format between the host client and the guest agent, over one virtio-serial port.

Newline-delimited JSON, one frame per line; output bytes travel base64-encoded so any binary
survives. Every frame is a dict with a type field "t":

  host -> guest   hello {nonce}              start of a conversation; stale bytes before it are dropped
                  req {argv, cwd, env, timeout, warm[, netns]}  warm: `python -m ...` may fork from
                                             the zygote; netns: run argv in that named namespace
                  sig {sig: "INT"|"TERM"|"KILL"}  forward a signal to the running command
                  shutdown                   stop the agent, which powers the VM off
  guest -> host   ready {nonce, info}        answer to hello, with the guest's facts
                  out {d} / err {d}          a chunk of the command's stdout / stderr (base64)
                  exit {code}                the command finished (shell convention: 128+N for signal N)
                  error {msg}                the agent could not do what was asked
                  bye                        answer to shutdown

A serial port has no connection boundaries the guest can rely on (the guest learns of host
connects and disconnects asynchronously, sometimes after data from the next client has arrived),
and a client that died mid-command leaves bytes behind. So the stream is treated as continuous:
the reader resynchronises at frame starts, the agent starts afresh at every hello, and the host
ignores everything until the ready that echoes its nonce.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

# A frame is one JSON line; bounding it keeps a corrupt stream from eating memory.
MAX_FRAME = 4 * 1024 * 1024
# Output is chunked to this many raw bytes per frame (base64 grows it by 4/3).
CHUNK = 32 * 1024

SIGNALS = ("INT", "TERM", "KILL")
EXIT_NOT_FOUND = 127  # same codes a shell uses, so scripts around linklab see familiar values
EXIT_CANNOT_RUN = 126
EXIT_TIMEOUT = 124


class ProtocolError(ValueError):
    """A frame that is not valid JSON, not a dict, lacks its type, or is too long."""


def encode(frame: dict[str, Any]) -> bytes:
    if "t" not in frame:
        raise ProtocolError(f"frame without type: {frame!r}")
    line = json.dumps(frame, separators=(",", ":"), ensure_ascii=True).encode()
    if len(line) >= MAX_FRAME:
        raise ProtocolError(f"frame of {len(line)} bytes exceeds {MAX_FRAME}")
    return line + b"\n"


def decode(line: bytes) -> dict[str, Any]:
    try:
        frame = json.loads(line)
    except (ValueError, UnicodeDecodeError) as e:
        raise ProtocolError(f"bad frame {line[:80]!r}: {e}") from None
    if not isinstance(frame, dict) or not isinstance(frame.get("t"), str):
        raise ProtocolError(f"bad frame {line[:80]!r}: not an object with a type")
    return frame


FRAME_START = b'{"t":'  # encode() always puts the type first, which is what makes resync possible


class FrameReader:
    """Turns a byte stream, arriving in arbitrary pieces, into frames.

    Never raises: a port is a byte stream without connection boundaries, so a frame cut short by a
    vanished client can glue itself to the next client's first frame. Such a line is resynchronised
    at the last frame start inside it; what cannot be decoded is dropped and described in `dropped`."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self.dropped: list[str] = []

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        self._buf += data
        frames = []
        while True:
            nl = self._buf.find(b"\n")
            if nl < 0:
                break
            line = bytes(self._buf[:nl])
            del self._buf[: nl + 1]
            if line.strip():
                frame = self._decode_resync(line)
                if frame is not None:
                    frames.append(frame)
        if len(self._buf) >= MAX_FRAME:
            self.dropped.append(f"{len(self._buf)} bytes without a frame end")
            self._buf.clear()
        return frames

    def _decode_resync(self, line: bytes) -> dict[str, Any] | None:
        try:
            return decode(line)
        except ProtocolError as e:
            start = line.rfind(FRAME_START)
            if start > 0:
                try:
                    frame = decode(line[start:])
                except ProtocolError:
                    pass
                else:
                    self.dropped.append(f"{start} bytes of a cut-off frame")
                    return frame
            self.dropped.append(str(e))
            return None

    def take_dropped(self) -> list[str]:
        dropped, self.dropped = self.dropped, []
        return dropped

    def reset(self) -> None:
        """Drop a partial frame."""
        self._buf.clear()

    @property
    def pending(self) -> int:
        return len(self._buf)


# Frame constructors: the only place field names are spelled out.


def hello(nonce: str) -> dict:
    return {"t": "hello", "nonce": nonce}


def ready(nonce: str, info: dict) -> dict:
    return {"t": "ready", "nonce": nonce, "info": info}


def request(argv: list[str], cwd: str, env: dict[str, str] | None = None, timeout: float | None = None,
            warm: bool = False, netns: str | None = None) -> dict:
    """warm: argv is `python -m <module> ...` and may run in the guest's pre-imported interpreter.
    netns: run argv inside that named network namespace, entered as `ip netns exec` does."""
    argv = [str(a) for a in argv]
    if not argv:
        raise ProtocolError("empty argv")
    if warm and (len(argv) < 3 or argv[1] != "-m"):
        raise ProtocolError("a warm request must be `python -m <module> ...`")
    if warm and netns:
        raise ProtocolError("a warm request runs linklab itself, outside any lab namespace")
    frame = {"t": "req", "argv": argv, "cwd": str(cwd), "env": dict(env or {}), "timeout": timeout, "warm": warm}
    if netns:
        frame["netns"] = netns
    return frame


@dataclass(frozen=True)
class Request:
    argv: list[str]
    cwd: str
    env: dict[str, str]
    timeout: float | None
    warm: bool
    netns: str | None


def parse_request(frame: dict) -> Request:
    argv, cwd, env, timeout = frame.get("argv"), frame.get("cwd"), frame.get("env") or {}, frame.get("timeout")
    netns = frame.get("netns")
    warm = bool(frame.get("warm")) and isinstance(argv, list) and len(argv) >= 3 and argv[1] == "-m" and not netns
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise ProtocolError("request argv must be a non-empty list of strings")
    if not isinstance(cwd, str) or not cwd:
        raise ProtocolError("request cwd must be a path")
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise ProtocolError("request env must map strings to strings")
    if timeout is not None and (not isinstance(timeout, (int, float)) or timeout <= 0):
        raise ProtocolError("request timeout must be a positive number or null")
    if netns is not None and (not isinstance(netns, str) or not netns or "/" in netns or netns in (".", "..")):
        raise ProtocolError("request netns must be a namespace name")
    return Request(argv, cwd, env, timeout, warm, netns)


def output(stream: str, data: bytes) -> dict:
    if stream not in ("out", "err"):
        raise ProtocolError(f"unknown stream {stream!r}")
    return {"t": stream, "d": base64.b64encode(data).decode("ascii")}


def output_frames(stream: str, data: bytes) -> list[dict]:
    """Split a large read into frames of at most CHUNK raw bytes."""
    return [output(stream, data[i : i + CHUNK]) for i in range(0, len(data), CHUNK)] or [output(stream, b"")]


def output_data(frame: dict) -> bytes:
    try:
        return base64.b64decode(frame["d"], validate=True)
    except (KeyError, ValueError, TypeError) as e:
        raise ProtocolError(f"bad output frame: {e}") from None


def exit_(code: int) -> dict:
    return {"t": "exit", "code": int(code)}


def signal(name: str) -> dict:
    if name not in SIGNALS:
        raise ProtocolError(f"unknown signal {name!r}; one of {', '.join(SIGNALS)}")
    return {"t": "sig", "sig": name}


def error(msg: str) -> dict:
    return {"t": "error", "msg": msg}


def shutdown() -> dict:
    return {"t": "shutdown"}


def bye() -> dict:
    return {"t": "bye"}


def returncode_to_exit(returncode: int) -> int:
    """Popen's -N (killed by signal N) becomes 128+N, as a shell reports it."""
    return 128 - returncode if returncode < 0 else returncode
