"""The warm os-ken (linklab.osken_warm) on this host: the real server, real os-ken controllers
forked into a network namespace the test creates (no lab VM needed), each listening on 127.0.0.1
only. In the lab VM the agent runs the same server; the kernel tier's SDN tests use it there."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pyroute2 import netns

from linklab import controllers, osken_warm
from linklab.backends.linux import daemons
from linklab.linux import netlink, sockets

PORT = 16733


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _comm(pid: int) -> str:
    return Path(f"/proc/{pid}/comm").read_text().strip()


def _wait(cond, deadline_s: float) -> bool:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


@pytest.fixture
def namespace():
    name = f"lltest-osk-{os.getpid()}"
    netlink.create(name)
    batch = netlink.Batch(name)
    batch.set("lo", up=True)
    batch.send()
    try:
        yield name
    finally:
        daemons.stop([daemons.record("t", "t", p) for p in daemons.netns_pids(name)])
        netns.remove(name)


@pytest.fixture
def server():
    """The server under a test's own socket name (not the lab VM's)."""
    address = f"linklab-osken-warm-test-{os.getpid()}"
    proc = subprocess.Popen([sys.executable, "-m", "linklab.osken_warm", "--address", address],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    time.sleep(0.5)  # binds before it imports anything heavy
    try:
        yield proc, address
    finally:
        proc.terminate()
        proc.wait(10)


# An app that writes down what it was given: the environment and working directory.
PROBE_APP = """
import os
from os_ken.base import app_manager

class Probe(app_manager.OSKenApp):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        with open(os.environ["PROBE_OUT"], "w") as f:
            f.write(os.environ.get("LINKLAB_DPID", "-") + " " + os.getcwd())
"""


def _request(address, log: Path, netns_name, app: str | Path = "hub", port=PORT, env=()):
    env = {**os.environ, **dict(w.split("=", 1) for w in controllers.app_env({}, 7)), **dict(env)}
    # The probe handles no OpenFlow event: os-ken is told to run its OpenFlow handler (the listener) too.
    args = (controllers.manager_argv(app, port)[1:] + ["os_ken.controller.ofp_handler"] if isinstance(app, Path)
            else controllers.manager_argv(controllers.app_path(app), port)[1:])
    with open(log, "ab") as f:
        return osken_warm.start(args, env, netns_name, f.fileno(), address=address, wait_s=120)


def test_a_forked_controller_runs_in_its_namespace_under_its_name_and_is_reaped(server, namespace, tmp_path):
    proc, address = server
    log = tmp_path / "controller.log"
    pid = _request(address, log, namespace)
    assert pid is not None, proc.stdout.read1().decode(errors="replace") if proc.poll() is not None else "no pid"
    # In the namespace asked for, listening there on the port asked for (loopback only).
    assert daemons.netns_pids(namespace) == [pid]
    assert _wait(lambda: sockets.listens(pid, PORT, namespace), 60), log.read_text()
    # Named as a cold osken-manager is (a lab finds it by that name), its own session, the server its parent.
    assert _comm(pid) == osken_warm.PROCESS_NAME
    fields = _stat(pid)
    assert int(fields[1]) == proc.pid and _comm(proc.pid) == osken_warm.SERVER_NAME
    assert int(fields[3]) == pid, "its own session"
    assert daemons.netns_pids_running(namespace, "osken-manager") == [pid]
    # Its output goes to the log it was given: os-ken says which app it loaded.
    assert "controllers/hub.py" in log.read_text()
    # A second one, with its own environment and working directory (what its app reads).
    (tmp_path / "probe.py").write_text(PROBE_APP)
    out = tmp_path / "probe.out"
    pid2 = _request(address, tmp_path / "second.log", namespace, app=tmp_path / "probe.py", port=PORT + 1,
                    env={"PROBE_OUT": str(out)})
    assert pid2 not in (None, pid)
    assert _wait(lambda: sockets.listens(pid2, PORT + 1, namespace), 30), (tmp_path / "second.log").read_text()
    assert out.read_text() == f"7 {os.getcwd()}"
    # Stopped the way a lab stops it, the server reaps it: no zombie left.
    daemons.stop([daemons.record("s1", "controller", p) for p in (pid, pid2)])
    assert _wait(lambda: _stat(pid) is None and _stat(pid2) is None, 5), (_stat(pid), _stat(pid2))
    assert proc.poll() is None, "the server outlives its controllers"


def test_a_namespace_that_is_gone_is_an_answer_not_a_hang(server, namespace, tmp_path, caplog):
    proc, address = server
    assert _request(address, tmp_path / "a.log", namespace + "-missing") is None
    assert "warm os-ken could not start a controller" in caplog.text and "No such file" in caplog.text
    # The server goes on serving.
    pid = _request(address, tmp_path / "b.log", namespace)
    assert pid is not None and _wait(lambda: sockets.listens(pid, PORT, namespace), 60)
