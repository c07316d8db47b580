"""Open a page in headless Chromium and report what a reader's browser would do with it.

Speaks the DevTools protocol over a pipe (`--remote-debugging-pipe`: JSON messages ending in
NUL on file descriptors 3 and 4), so it needs nothing beyond the standard library and Debian's
`chromium`. Returns every request the page made, console errors and uncaught exceptions,
each <img>'s load state, and a full-page PNG screenshot.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--remote-debugging-pipe",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio"]


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class PageResult:
    requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    images: list[dict] = field(default_factory=list)
    screenshot: bytes = b""
    title: str = ""
    probe: object = None  # what the `probe` expression gave, once the page loaded


class _Pipe:
    def __init__(self, proc: subprocess.Popen, write_fd: int, read_fd: int):
        self.proc, self.w, self.r = proc, write_fd, read_fd
        self.buf = b""
        self.next_id = 0
        self.events: list[dict] = []

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 60) -> dict:
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        want = self.next_id
        deadline = time.monotonic() + timeout
        while True:
            m = self._read(deadline)
            if m.get("id") == want:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method: str, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        for i, e in enumerate(self.events):
            if e.get("method") == method:
                return self.events[i]
        while True:
            m = self._read(deadline)
            self.events.append(m)
            if m.get("method") == method:
                return m

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chromium did not answer in time")
            ready, _, _ = select.select([self.r], [], [], left)
            if ready:
                chunk = os.read(self.r, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"chromium closed the pipe (exit {self.proc.poll()})")
                self.buf += chunk
        msg, _, self.buf = self.buf.partition(b"\0")
        return json.loads(msg)


def _fds_3_4(read_fd: int, write_fd: int) -> None:
    # In the child, before exec: move the pipe ends to 3 and 4, inheritable (either may already be
    # 3 or 4, so go through fds that are surely free first).
    hi_r, hi_w = os.dup(read_fd), os.dup(write_fd)
    os.dup2(hi_r, 3)
    os.dup2(hi_w, 4)
    os.set_inheritable(3, True)
    os.set_inheritable(4, True)


def open_page(path: Path, width: int = 1280, timeout: float = 120, probe: str | None = None) -> PageResult:
    """`probe`: a JavaScript expression evaluated in the loaded page (what a test asks of its
    rendering: sizes, counts); its JSON value is returned as `probe`."""
    exe = chromium()
    if exe is None:
        raise FileNotFoundError("chromium is not installed (scripts/setup.sh --with test installs Debian's chromium)")
    url = Path(path).resolve().as_uri()
    profile = tempfile.mkdtemp(prefix="linklab-chromium-")
    # fd 3: chromium reads commands; fd 4: chromium writes answers.
    cmd_r, cmd_w = os.pipe()
    ans_r, ans_w = os.pipe()
    proc = subprocess.Popen(
        [exe, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},900"],
        # close_fds would run after preexec_fn and close 3 and 4 again; the pipes are non-inheritable
        # (os.pipe), so only what preexec_fn dup2's lands in chromium.
        close_fds=False, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(os.environ.get("CHROMIUM_LOG", os.devnull), "wb"),
        preexec_fn=lambda: _fds_3_4(cmd_r, ans_w))
    os.close(cmd_r)
    os.close(ans_w)
    pipe = _Pipe(proc, cmd_w, ans_r)
    res = PageResult()
    try:
        target = pipe.send("Target.createTarget", {"url": "about:blank"}, timeout=timeout)["targetId"]
        sid = pipe.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Network", "Runtime", "Log"):
            pipe.send(f"{domain}.enable", session=sid)
        pipe.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": 900, "deviceScaleFactor": 1,
                                                         "mobile": False}, session=sid)
        pipe.events.clear()
        pipe.send("Page.navigate", {"url": url}, session=sid)
        pipe.wait_event("Page.loadEventFired", timeout=timeout)
        check = pipe.send("Runtime.evaluate", {"returnByValue": True, "awaitPromise": True, "expression": """
            (async () => {
              const imgs = [...document.images];
              await Promise.all(imgs.map(i => i.decode().catch(() => null)));
              return {title: document.title,
                      images: imgs.map(i => ({alt: i.alt, complete: i.complete, w: i.naturalWidth, h: i.naturalHeight})),
                      height: Math.ceil(document.documentElement.scrollHeight)};
            })()"""}, session=sid)["result"]["value"]
        res.title, res.images = check["title"], check["images"]
        if probe:
            res.probe = pipe.send("Runtime.evaluate", {"returnByValue": True, "expression": probe},
                                  session=sid)["result"].get("value")
        height = min(int(check["height"]), 30000)
        pipe.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                         "mobile": False}, session=sid)
        shot = pipe.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session=sid,
                         timeout=timeout)
        res.screenshot = base64.b64decode(shot["data"])
        for e in pipe.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Network.requestWillBeSent":
                res.requests.append(p["request"]["url"])
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                res.console_errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif m == "Runtime.exceptionThrown":
                res.console_errors.append(p.get("exceptionDetails", {}).get("text", "exception"))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                res.console_errors.append(f"{p['entry'].get('source')}: {p['entry'].get('text')} {p['entry'].get('url', '')}")
        try:
            pipe.send("Browser.close", timeout=10)
        except Exception:
            pass
    finally:
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        os.close(cmd_w)
        os.close(ans_r)
        shutil.rmtree(profile, ignore_errors=True)
    return res
