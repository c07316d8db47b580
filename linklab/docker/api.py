"""The Docker Engine API over its unix socket: the few calls container nodes need.

HTTP/1.1 through the standard library (no Docker SDK, no `docker` CLI shell-outs): the API is
plain JSON over a unix socket (https://docs.docker.com/engine/api/). Every call is bounded by a
timeout. Pure helpers (log demultiplexing, label filters) are unit-tested on captured bytes.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import struct
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from linklab.errors import LinklabError

DEFAULT_TIMEOUT_S = 60.0
# Logs of a container that exited at once, shown in the error: its last lines are the reason.
LOG_TAIL_LINES = 20


class ApiError(LinklabError):
    """The engine answered with an error status (404: no such container or image)."""

    def __init__(self, status: int, message: str, what: str):
        super().__init__(f"Docker engine: {what}: {message} (HTTP {status})")
        self.status = status


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self._path)


class UploadCut(OSError):
    """The engine closed the connection while a file was being sent to it."""

    def __init__(self, upload: Path, sent: int, size: int, answer: tuple[int, bytes] | None):
        said = (f": it answered HTTP {answer[0]}: {stream_error(answer[1]) or error_message(answer[1])}" if answer
                else " without an answer")
        super().__init__(f"the Docker engine closed the connection after {sent / 1e6:.0f} of {size / 1e6:.0f} MB "
                         f"of {upload}{said}")
        self.answer = answer


def _early_answer(conn: http.client.HTTPConnection, method: str) -> tuple[int, bytes] | None:
    """What a server that closed mid-request wrote before closing, if anything: http.client will
    not read a response to a request it did not finish sending, so it is parsed off the socket."""
    if conn.sock is None:
        return None
    try:
        res = http.client.HTTPResponse(conn.sock, method=method)
        res.begin()
        return res.status, res.read()
    except (OSError, http.client.HTTPException):
        return None


def label_filter(labels: dict[str, str | None]) -> str:
    """The `filters` query value selecting objects carrying every one of `labels` (a None value:
    the label with any value)."""
    return json.dumps({"label": [k if v is None else f"{k}={v}" for k, v in sorted(labels.items())]},
                      separators=(",", ":"))


def demux_logs(raw: bytes) -> str:
    """A non-TTY container's log stream as text. Each frame is an 8-byte header (stream type,
    3 bytes zero, big-endian payload length) then the payload (API docs: "Attach to a
    container", stream format); a stream that does not start with such a header is raw text."""
    if len(raw) < 8 or raw[0] not in (0, 1, 2) or raw[1:4] != b"\0\0\0":
        return raw.decode(errors="replace")
    out, i = [], 0
    while i + 8 <= len(raw):
        (size,) = struct.unpack(">I", raw[i + 4:i + 8])
        out.append(raw[i + 8:i + 8 + size])
        i += 8 + size
    return b"".join(out).decode(errors="replace")


def error_message(body: bytes) -> str:
    """An error answer's text: its JSON "message", or the body itself."""
    try:
        return str(json.loads(body).get("message", ""))
    except (ValueError, AttributeError):
        return body.decode(errors="replace").strip()


def stream_error(body: bytes) -> str | None:
    """The first error in a progress stream (image create/load answer 200, then report errors as
    JSON lines: {"error": "...", "errorDetail": {...}})."""
    for line in body.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict) and item.get("error"):
            return str(item["error"])
    return None


class Api:
    def __init__(self, socket_path: str | Path, timeout: float = DEFAULT_TIMEOUT_S):
        self.socket_path, self.timeout = str(socket_path), timeout

    def request(self, method: str, path: str, query: dict[str, Any] | None = None, body: Any = None,
                upload: Path | None = None, timeout: float | None = None) -> tuple[int, bytes]:
        """(status, body). `body`: sent as JSON; `upload`: a file sent as a tar stream."""
        url = path + ("?" + urlencode({k: v for k, v in query.items() if v is not None}) if query else "")
        conn = _UnixConnection(self.socket_path, timeout or self.timeout)
        try:
            if upload is not None:
                with open(upload, "rb") as f:
                    size = os.fstat(f.fileno()).st_size
                    try:
                        conn.request(method, url, body=f, headers={"Content-Type": "application/x-tar",
                                                                   "Content-Length": str(size)})
                    except (BrokenPipeError, ConnectionResetError) as e:
                        # The engine stopped reading: it answers an error first (a full disk, a bad
                        # tar) and closes; that answer, not the broken pipe, says why.
                        raise UploadCut(upload, f.tell(), size, _early_answer(conn, method)) from e
            else:
                data = json.dumps(body).encode() if body is not None else None
                conn.request(method, url, body=data, headers={"Content-Type": "application/json"} if data else {})
            res = conn.getresponse()
            return res.status, res.read()
        finally:
            conn.close()

    def call(self, method: str, path: str, what: str, ok_missing: bool = False, **kw) -> Any:
        """The decoded answer; None for 404 when `ok_missing`; ApiError for other errors."""
        status, data = self.request(method, path, **kw)
        if status == 404 and ok_missing:
            return None
        if status >= 400:
            raise ApiError(status, error_message(data), what)
        if not data:
            return {}
        try:
            return json.loads(data)
        except ValueError:
            return data

    def ping(self) -> bool:
        try:
            return self.request("GET", "/_ping", timeout=5)[0] == 200
        except OSError:
            return False

    # ---- containers ---------------------------------------------------------------------
    def containers(self, labels: dict[str, str | None]) -> list[dict[str, Any]]:
        """Every container (running or not) carrying all of `labels`."""
        return self.call("GET", "/containers/json", "listing containers",
                         query={"all": "1", "filters": label_filter(labels)})

    def inspect(self, name: str) -> dict[str, Any] | None:
        return self.call("GET", f"/containers/{quote(name)}/json", f"inspecting {name}", ok_missing=True)

    def create(self, name: str, config: dict[str, Any]) -> str:
        return self.call("POST", "/containers/create", f"creating container {name}", query={"name": name},
                         body=config)["Id"]

    def start(self, name: str) -> None:
        self.call("POST", f"/containers/{quote(name)}/start", f"starting {name}")

    def remove(self, name: str) -> bool:
        """Kill and remove (with its anonymous volumes); False: it was not there."""
        return self.call("DELETE", f"/containers/{quote(name)}", f"removing {name}", ok_missing=True,
                         query={"force": "1", "v": "1"}) is not None

    def logs(self, name: str, tail: int = LOG_TAIL_LINES) -> str:
        status, data = self.request("GET", f"/containers/{quote(name)}/logs",
                                    query={"stdout": "1", "stderr": "1", "tail": str(tail)})
        return demux_logs(data) if status == 200 else ""

    # ---- images -------------------------------------------------------------------------
    def image(self, name: str) -> dict[str, Any] | None:
        return self.call("GET", f"/images/{quote(name, safe='/:')}/json", f"inspecting image {name}",
                         ok_missing=True)

    def import_rootfs(self, tar: Path, repo: str, tag: str, changes: list[str], timeout: float) -> None:
        """`docker import`: a root filesystem tarball becomes image repo:tag, with Dockerfile
        `changes` (CMD ...) applied."""
        query: dict[str, Any] = {"fromSrc": "-", "repo": repo, "tag": tag}
        status, data = self._with_changes("/images/create", query, changes, tar, timeout)
        err = stream_error(data) if status < 400 else error_message(data)
        if err:
            raise ApiError(status, err, f"importing {tar} as {repo}:{tag}")

    def _with_changes(self, path: str, query: dict[str, Any], changes: list[str], tar: Path,
                      timeout: float) -> tuple[int, bytes]:
        # `changes` repeats as a query key; urlencode of a dict cannot say that.
        extra = "".join(f"&changes={quote(c)}" for c in changes)
        return self.request("POST", path + "?" + urlencode(query) + extra, upload=tar, timeout=timeout)

    def load(self, tar: Path, timeout: float) -> None:
        """`docker load`: an image saved with `docker save`."""
        status, data = self.request("POST", "/images/load", query={"quiet": "1"}, upload=tar, timeout=timeout)
        err = stream_error(data) if status < 400 else error_message(data)
        if err:
            raise ApiError(status, err, f"loading {tar}")

    def pull(self, image: str, timeout: float) -> None:
        repo, tag = split_image(image)
        status, data = self.request("POST", "/images/create", query={"fromImage": repo, "tag": tag}, timeout=timeout)
        err = stream_error(data) if status < 400 else error_message(data)
        if err:
            raise ApiError(status, err, f"pulling {image}")


def split_image(image: str) -> tuple[str, str]:
    """'linklab/base' -> ('linklab/base', 'latest'); 'reg:5000/x:1.2' -> ('reg:5000/x', '1.2')."""
    name, _, digest = image.partition("@")
    if digest:
        return name, "@" + digest
    head, sep, tag = name.rpartition(":")
    if sep and "/" not in tag:
        return head, tag
    return name, "latest"
