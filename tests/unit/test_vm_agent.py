"""The guest agent and the host client talking over a socketpair instead of a virtio-serial port.

No VM and no root: the agent runs its commands on this machine. What differs from the real port
(virtio's asynchronous connect/disconnect notices) is covered by the integration test.
"""

from __future__ import annotations

import io
import os
import signal
import socket
import threading
import time
from pathlib import Path

import pytest

from linklab.vm import protocol as P
from linklab.vm.agent import HUP_GRACE, Agent, Port, PortServer
from linklab.vm.client import Channel


@pytest.fixture
def served():
    guest_end, host_end = socket.socketpair()
    guest_end.setblocking(False)
    agent = Agent({"kernel_release": "test-kernel"})
    server = PortServer("t0", Port(fd=guest_end.fileno()), agent)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    ch = Channel(Path("socketpair"))
    ch.sock = host_end
    yield ch, agent
    agent.stopping.set()
    agent.kill_all()
    ch.close()
    thread.join(5)
    guest_end.close()


def deadline(s: float = 10) -> float:
    return time.monotonic() + s


def run(ch: Channel, argv, **kw) -> tuple[int, bytes, bytes]:
    out, err = io.BytesIO(), io.BytesIO()
    code = ch.run(argv, kw.pop("cwd", "/"), kw.pop("env", {}), kw.pop("timeout", None), out, err)
    return code, out.getvalue(), err.getvalue()


def test_handshake_and_exit_codes(served):
    ch, _ = served
    assert ch.handshake(deadline())["kernel_release"] == "test-kernel"
    assert run(ch, ["sh", "-c", "exit 3"])[0] == 3
    assert run(ch, ["true"])[0] == 0


def test_streams_env_and_cwd(served, tmp_path):
    ch, _ = served
    ch.handshake(deadline())
    code, out, err = run(ch, ["sh", "-c", 'echo "$LINKLAB_IN_VM $X $(pwd)"; echo oops >&2'],
                         cwd=str(tmp_path), env={"X": "forwarded"})
    assert code == 0
    assert out == f"1 forwarded {tmp_path}\n".encode()
    assert err == b"oops\n"


def test_large_binary_output_is_exact(served):
    ch, _ = served
    ch.handshake(deadline())
    script = "import os, sys; sys.stdout.buffer.write(bytes(range(256)) * 8192)"
    code, out, _ = run(ch, [os.sys.executable, "-c", script])
    assert code == 0 and out == bytes(range(256)) * 8192


def test_missing_program_and_bad_cwd(served):
    ch, _ = served
    ch.handshake(deadline())
    code, _, err = run(ch, ["no-such-program-linklab"])
    assert code == P.EXIT_NOT_FOUND and b"no-such-program-linklab" in err
    assert run(ch, ["true"], cwd="/no/such/dir")[0] == P.EXIT_NOT_FOUND


def test_a_namespace_that_does_not_exist_is_named(served):
    ch, _ = served
    ch.handshake(deadline())
    out, err = io.BytesIO(), io.BytesIO()
    code = ch.run(["true"], "/", {}, None, out, err, netns="ll-nosuchlab-h1")
    assert code == P.EXIT_CANNOT_RUN
    assert b"no network namespace ll-nosuchlab-h1 (was its lab taken down?)" in err.getvalue()


def test_an_agent_failure_ends_the_hosts_wait(served, monkeypatch):
    ch, _ = served
    ch.handshake(deadline())

    def broken(*_):
        raise RuntimeError("boom")
    monkeypatch.setattr(PortServer, "stream", broken)
    code, _, err = run(ch, ["true"])
    assert code == P.EXIT_CANNOT_RUN and b"agent failed: RuntimeError: boom" in err


def test_timeout(served):
    ch, _ = served
    ch.handshake(deadline())
    t0 = time.monotonic()
    code, _, err = run(ch, ["sleep", "30"], timeout=0.5)
    assert code == P.EXIT_TIMEOUT and b"timed out" in err
    assert time.monotonic() - t0 < 5


class CtrlCOnce(io.BytesIO):
    """Raises KeyboardInterrupt the first time output arrives, as a Ctrl-C during streaming would."""

    raised = False

    def write(self, data):
        n = super().write(data)
        if not self.raised:
            self.raised = True
            raise KeyboardInterrupt
        return n


def test_ctrl_c_is_forwarded_and_the_command_decides(served):
    ch, _ = served
    ch.handshake(deadline())
    t0 = time.monotonic()
    code = ch.run(["sh", "-c", "echo started; exec sleep 30"], "/", {}, None, CtrlCOnce(), io.BytesIO())
    assert code == 128 + signal.SIGINT
    assert time.monotonic() - t0 < 5
    # a command that handles INT gets to finish its own way
    script = "trap 'echo cleaned; exit 7' INT; echo started; while :; do sleep 0.1; done"
    out = CtrlCOnce()
    assert ch.run(["sh", "-c", script], "/", {}, None, out, io.BytesIO()) == 7
    assert out.getvalue() == b"started\ncleaned\n"


def test_requests_before_hello_are_dropped_and_garbage_survived(served, tmp_path):
    ch, _ = served
    marker = tmp_path / "ran"
    # what a previous, vanished client may have left: a cut-off frame, garbage, a whole request
    ch.sock.sendall(P.encode(P.request(["touch", str(marker)], "/"))[:20])
    ch.sock.sendall(b"garbage\n" + P.encode(P.request(["touch", str(marker)], "/")))
    assert ch.handshake(deadline())["kernel_release"] == "test-kernel"
    assert run(ch, ["true"])[0] == 0
    assert not marker.exists()


def start_sleeper(ch, tmp_path) -> int:
    """Start a long command through the agent; its pid once it runs."""
    pidfile = tmp_path / "pid"
    ch.send(P.request(["sh", "-c", f"echo $$ > {pidfile}; exec sleep 30"], "/"))
    while not pidfile.exists() or not pidfile.read_text().strip():
        time.sleep(0.05)
    return int(pidfile.read_text())


def test_new_hello_preempts_an_abandoned_command(served, tmp_path):
    ch, _ = served
    ch.handshake(deadline())
    pid = start_sleeper(ch, tmp_path)
    t0 = time.monotonic()
    assert ch.handshake(deadline())["kernel_release"] == "test-kernel"  # a "new client" on the same port
    assert time.monotonic() - t0 < 8
    assert not _alive(pid)
    assert run(ch, ["true"])[0] == 0


def test_client_vanishing_kills_the_command(served, tmp_path):
    ch, agent = served
    ch.handshake(deadline())
    pid = start_sleeper(ch, tmp_path)
    ch.close()
    end = time.monotonic() + HUP_GRACE + 8
    while _alive(pid) and time.monotonic() < end:
        time.sleep(0.1)
    assert not _alive(pid)


def test_shutdown(served):
    ch, agent = served
    ch.handshake(deadline())
    ch.send(P.shutdown())
    assert ch.recv(deadline())["t"] == "bye"
    assert agent.stopping.wait(5)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


# -- warm runs: `python -m <module>` forked from the pre-imported zygote --------------------------

PROBE_INIT = "import os\nIMPORT_PID = os.getpid()\nVERSION = {version}\n"
PROBE_MAIN = """\
import os, sys, zprobe
print("warm" if zprobe.IMPORT_PID != os.getpid() else "cold", zprobe.VERSION, sys.argv[1:], os.getcwd(),
      os.environ.get("PROBE"), os.environ.get("LINKLAB_IN_VM"))
print("to stderr", file=sys.stderr)
if sys.argv[1:] == ["wait"]:
    print("started", flush=True)
    import time
    time.sleep(30)
raise SystemExit(5)
"""


@pytest.fixture
def warm_served(tmp_path):
    from linklab.vm.zygote import Zygote

    pkg = tmp_path / "zprobe"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(PROBE_INIT.format(version=1))
    (pkg / "__main__.py").write_text(PROBE_MAIN)
    zygote = Zygote(os.sys.executable, preload_modules=("zprobe",), watch=[tmp_path], cwd=str(tmp_path))
    guest_end, host_end = socket.socketpair()
    guest_end.setblocking(False)
    agent = Agent({"kernel_release": "test-kernel"}, zygote)
    thread = threading.Thread(target=PortServer("w0", Port(fd=guest_end.fileno()), agent).serve_forever, daemon=True)
    thread.start()
    ch = Channel(Path("socketpair"))
    ch.sock = host_end
    assert zygote.ready.wait(30) and not zygote.failed
    ch.handshake(deadline())
    yield ch, pkg
    agent.stopping.set()
    agent.kill_all()
    ch.close()
    zygote.close()
    thread.join(5)
    guest_end.close()


def warm_run(ch, args, cwd, **kw):
    out, err = io.BytesIO(), io.BytesIO()
    argv = [os.sys.executable, "-m", "zprobe", *args]
    code = ch.run(argv, str(cwd), {"PROBE": "p1"}, None, kw.pop("stdout", out), err, warm=True)
    return code, out.getvalue().decode(), err.getvalue().decode()


def test_warm_run_looks_like_a_fresh_python(warm_served, tmp_path):
    ch, _ = warm_served
    work = tmp_path / "elsewhere"
    work.mkdir()
    code, out, err = warm_run(ch, ["a", "b c"], work)
    assert code == 5
    assert out == f"warm 1 ['a', 'b c'] {work} p1 1\n"
    assert err == "to stderr\n"


def test_warm_run_restarts_when_sources_change(warm_served, tmp_path):
    ch, pkg = warm_served
    assert warm_run(ch, [], tmp_path)[1].startswith("warm 1")
    time.sleep(0.05)
    (pkg / "__init__.py").write_text(PROBE_INIT.format(version=2))
    assert warm_run(ch, [], tmp_path)[1].startswith("cold 2")  # this one ran cold, on the new code
    end = time.monotonic() + 30
    while (out := warm_run(ch, [], tmp_path)[1]).startswith("cold") and time.monotonic() < end:
        time.sleep(0.2)  # the zygote is re-importing
    assert out.startswith("warm 2")


def test_warm_run_trusts_the_hosts_source_digest(warm_served, tmp_path):
    # The host sends a digest of the sources (SOURCES_ENV) so the zygote need not stat its
    # files over 9p before each run: equal to the one it took at start, the run is warm; any
    # .py file changed under its roots (loaded or not) makes it stale, and the run goes cold.
    from linklab.vm.zygote import SOURCES_ENV, tree_digest

    ch, pkg = warm_served

    def run_with_digest():
        out = io.BytesIO()
        argv = [os.sys.executable, "-m", "zprobe"]
        ch.run(argv, str(tmp_path), {SOURCES_ENV: tree_digest([tmp_path])}, None, out, io.BytesIO(), warm=True)
        return out.getvalue().decode()

    assert run_with_digest().startswith("warm 1")
    time.sleep(0.05)
    (pkg / "never_loaded.py").write_text("X = 1\n")
    assert run_with_digest().startswith("cold 1")


def test_warm_ctrl_c(warm_served, tmp_path):
    ch, _ = warm_served
    code = warm_run(ch, ["wait"], tmp_path, stdout=CtrlCOnce())[0]
    assert code == 128 + signal.SIGINT


def _zygote_of(tmp_path, name: str, init: str, main: str):
    """A zygote preloading package `name` (its __init__ and __main__ sources), under tmp_path."""
    from linklab.vm.zygote import Zygote

    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text(init)
    (pkg / "__main__.py").write_text(main)
    return pkg, Zygote(os.sys.executable, preload_modules=(name,), watch=[tmp_path], cwd=str(tmp_path))


def test_zygote_reexec_keeps_reporting_running_commands(tmp_path):
    pkg, zygote = _zygote_of(tmp_path, "zslow", "V = 1\n", "import time\ntime.sleep(1)\nraise SystemExit(5)\n")
    try:
        assert zygote.ready.wait(30)
        child = zygote.spawn("zslow", [], str(tmp_path), dict(os.environ))
        assert child is not None
        time.sleep(0.05)
        (pkg / "__init__.py").write_text("V = 2\n")
        assert zygote.spawn("zslow", [], str(tmp_path), dict(os.environ)) is None  # stale: run it cold
        assert child.wait(20) == 5  # reaped and reported by the re-executed zygote
        assert zygote.ready.wait(30) and not zygote.gone
        again = zygote.spawn("zslow", [], str(tmp_path), dict(os.environ))
        assert again is not None and again.wait(20) == 5
        for f in (child.stdout, child.stderr, again.stdout, again.stderr):
            f.close()
    finally:
        zygote.close()


def test_ctrl_c_reaches_the_command_even_when_the_agent_ignores_sigint(served):
    """Run from a background job (`nohup ... &`) SIGINT is inherited as ignored, and exec passes
    that on: the guest command must still get Ctrl-C's default meaning."""
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        ch, _ = served
        ch.handshake(deadline())
        t0 = time.monotonic()
        code = ch.run(["sh", "-c", "echo started; exec sleep 30"], "/", {}, None, CtrlCOnce(), io.BytesIO())
    finally:
        signal.signal(signal.SIGINT, old)
    assert code == 128 + signal.SIGINT
    assert time.monotonic() - t0 < 5


def test_a_command_during_the_first_preload_waits_for_it_and_runs_warm(tmp_path):
    # Cold, it would import the same modules beside the preload, each slowing the other down.
    _, zygote = _zygote_of(tmp_path, "zlate", "import os, time\ntime.sleep(1.5)\nPID = os.getpid()\n",
                           "import os, sys\nimport zlate\nsys.exit(7 if zlate.PID != os.getpid() else 3)\n")
    try:
        assert not zygote.ready.is_set()  # still importing (1.5 s)
        child = zygote.spawn("zlate", [], str(tmp_path), dict(os.environ))
        assert child is not None and zygote.preloaded_once
        assert child.wait(20) == 7  # imported before the fork: warm
        for f in (child.stdout, child.stderr):
            f.close()
    finally:
        zygote.close()
