"""Background services in nodes (`exec:` items with `background: true`) in a real lab on this
host's own kernel: `linklab up --native` of plain hosts and a link without impairments needs only
network namespaces and veth pairs, which this kernel has (no lab VM). Each test's lab is its own
(`svc` + pid) in a state directory of its own; `linklab down` runs whatever the test did."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from pyroute2 import netns

from linklab import procs
from tests.integration.host import cli

ROOT = Path(__file__).resolve().parents[3]
PORT = 18000


def linklab(*args: str, state_dir: Path, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    res = cli.linklab(*args, timeout=timeout, state_dir=state_dir)
    if check and res.returncode != 0:
        pytest.fail(f"linklab {' '.join(args)} exited {res.returncode}:\n{res.stdout}\n{res.stderr}")
    return res


@pytest.fixture
def lab(tmp_path):
    """A lab name of this test's own, its state directory; taken down whatever happened."""
    name = f"svc{os.getpid() % 100000}"
    state_dir = tmp_path / "state"
    yield name, state_dir
    if (state_dir / "labs" / f"{name}.json").exists():
        linklab("down", name, state_dir=state_dir, check=False)
    assert not [ns for ns in netns.listnetns() if ns.startswith(f"ll-{name}-")], "the lab's namespaces are left"


def _topology(tmp_path: Path, name: str, service: str) -> Path:
    path = tmp_path / "lab.yaml"
    path.write_text(f"name: {name}\nhosts:\n  h1:\n    exec:\n{service}  h2: {{}}\nlinks:\n  - endpoints: [h1, h2]\n")
    return path


def _services(name: str, state_dir: Path) -> list[dict]:
    import json
    return json.loads(linklab("status", name, "--json", state_dir=state_dir).stdout)["services"]


def test_a_web_service_is_ready_reachable_restarted_and_stopped_by_down(lab, tmp_path):
    name, state_dir = lab
    topo = _topology(tmp_path, name, f"      - {{run: 'python3 -m http.server {PORT} --bind ::', background: true, "
                                     f"name: web, ready: {{port: {PORT}, timeout: 20s}}}}\n")
    t0 = time.monotonic()
    up = linklab("up", "--native", str(topo), state_dir=state_dir)
    assert "is up" in up.stdout, up.stdout
    [svc] = _services(name, state_dir)
    assert (svc["node"], svc["name"], svc["state"], svc["ready"]) == ("h1", "web", "running", True), svc
    pid = svc["pid"]
    assert procs.alive(pid) and "http.server" in procs.cmdline(pid)
    # Reachable from the other node, by the lab's host name.
    get = linklab("exec", "--lab", name, "h2", "--", "python3", "-c",
                  f"import urllib.request; print(urllib.request.urlopen('http://h1:{PORT}/', timeout=10).status)",
                  state_dir=state_dir)
    assert get.stdout.strip() == "200"
    log = Path(svc["log"])
    assert log == state_dir / "logs" / name / "h1" / "web.log"
    assert '"GET / HTTP/1.1" 200' in log.read_text()  # its output is kept: the request's log line

    # up again: nothing changed, the same process runs on.
    linklab("up", "--native", str(topo), state_dir=state_dir)
    assert _services(name, state_dir)[0]["pid"] == pid
    # set --restart: a new process, the old one gone, ready again.
    linklab("set", "--lab", name, "--restart", "h1/web", state_dir=state_dir)
    [again] = _services(name, state_dir)
    assert again["pid"] != pid and again["state"] == "running" and again["ready"] is True
    assert not procs.alive(pid)
    bad = linklab("set", "--lab", name, "--restart", "h1/nope", state_dir=state_dir, check=False)
    assert bad.returncode == 2 and "valid: h1/web" in bad.stderr

    linklab("down", name, state_dir=state_dir)
    assert not procs.alive(again["pid"]), "down left the service running"
    assert log.exists() and (log.parent / "web.log.1").exists()  # down keeps the logs
    print(f"lab with a web service: up, reached, restarted, down in {time.monotonic() - t0:.1f} s")


def test_a_service_that_never_becomes_ready_fails_up_naming_it_and_is_stopped(lab, tmp_path):
    name, state_dir = lab
    marker = f"svc-never-{os.getpid()}"
    topo = _topology(tmp_path, name, "      - {run: [python3, -c, 'import sys, time; print(\"waiting\", flush=True); "
                                     f"time.sleep(300)', {marker}], background: true, name: never, "
                                     "ready: {port: 9, timeout: 1.5s}}\n")
    t0 = time.monotonic()
    up = linklab("up", "--native", str(topo), state_dir=state_dir, check=False)
    took = time.monotonic() - t0
    assert up.returncode == 1, up.stderr
    err = up.stderr
    assert "node h1: service never (exec item 1 of 1): the service was not ready (port 9) within 1.5 s" in err, err
    assert "waiting" in err  # the tail of its output
    assert 1.5 <= took <= 60, took  # it waited its timeout, and not much more (process starts: a loaded machine)
    # Nothing of it is left running: no process carries its marker argument.
    left = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and marker in procs.cmdline(int(p.name))]
    assert [p for p in left if procs.alive(p)] == []
    [svc] = _services(name, state_dir)
    assert svc["state"] != "running" and svc["pid"] is None
    linklab("down", name, state_dir=state_dir)
