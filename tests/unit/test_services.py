"""Background services in node_exec (linklab/backends/linux/node_exec.py, services.py): which are
started, kept, started again or stopped; what a never-ready one's failure says. Processes are
faked here (the host tier runs real ones: tests/integration/host/test_services_native.py); the
readiness wait's `cmd:` sign runs a real command."""

from pathlib import Path

import pytest

from linklab.backends.linux import node_exec, services
from linklab.errors import LinklabError
from linklab.ready import NotReady, wait_ready
from linklab.model import Context, load_topology, resolve
from linklab.model.resolved import Service

ROOT = Path(__file__).resolve().parents[2]
TOPO = ROOT / "tests/golden/topologies/good/services.yaml"


def _lab(overrides=()):
    return resolve(load_topology(TOPO, list(overrides)), Context())


class Fake:
    """runner.run, services.start/wait/stop as node_exec calls them: nothing runs."""

    def __init__(self, monkeypatch, never_ready=()):
        self.events, self.alive, self.never, self.pid = [], set(), set(never_ready), 100
        monkeypatch.setattr(node_exec.runner, "run", lambda argv, **kw: self.events.append(("run", list(argv))))
        monkeypatch.setattr(services, "start", self.start)
        monkeypatch.setattr(services, "wait", self.wait)
        monkeypatch.setattr(services, "running", lambda rec: rec["pid"] in self.alive)
        monkeypatch.setattr(services.daemons, "stop", self.stop)

    def start(self, lab_name, node, svc, where, env):
        self.pid += 1
        self.alive.add(self.pid)
        self.events.append(("start", node, svc.name))
        return {"pid": self.pid, "node": node, "role": "service", "name": svc.name, "argv": list(svc.run),
                "log": f"/logs/{node}/{svc.name}.log"}, None

    def wait(self, svc, proc, where, rec):
        if svc.name in self.never:
            raise NotReady(f"the service was not ready ({svc.ready.sign()}) within 1 s; its output's last lines:\nboom")

    def stop(self, recs, grace_s=3.0):
        mine = [r for r in recs if r["pid"] in self.alive]
        self.alive -= {r["pid"] for r in mine}
        self.events += [("stop", r["node"], r["name"]) for r in mine]
        return mine


def _run(lab, fresh=(), previous=None, processes=(), restart=()):
    return node_exec.run(lab, lambda node: f"ns-{node}", lambda node: {}, set(fresh), previous or {},
                         say=lambda *_: None, processes=list(processes), restart=set(restart))


def test_services_start_in_exec_order_and_are_kept_by_a_rebuild(monkeypatch):
    fake = Fake(monkeypatch)
    lab = _lab()
    record, failures, owned = _run(lab, fresh=["h1", "h2"])
    assert failures == []
    h1 = [e for e in fake.events if e[0] == "run" or e[1] == "h1"]  # h2 runs no command
    assert h1 == [("run", ["ip", "addr", "replace", "192.0.2.1/24", "dev", "eth1"]), ("start", "h1", "web"),
                  ("start", "h1", "idle"), ("run", ["ip", "route", "show"])]
    assert sorted((r["node"], r["name"]) for r in owned) == [("h1", "idle"), ("h1", "web"), ("h2", "probe"), ("h2", "sleep")]
    assert record["h1"]["ran"][1] == {"name": "web", "run": ["python3", "-m", "http.server", "8000"],
                                      "ready": {"port": 8000, "timeout": 10.0}}
    fake.events.clear()
    again, _, owned2 = _run(lab, previous=record, processes=owned)  # `up` again, a sweep's `set`
    assert fake.events == [] and again == record
    assert sorted(r["pid"] for r in owned2) == sorted(r["pid"] for r in owned)  # the same processes, still owned


def test_an_exited_service_or_one_named_for_restart_starts_again_alone(monkeypatch):
    fake = Fake(monkeypatch)
    lab = _lab()
    record, _, owned = _run(lab, fresh=["h1", "h2"])
    web = next(r for r in owned if r["name"] == "web")
    fake.alive.discard(web["pid"])  # it exited
    fake.events.clear()
    _, _, owned = _run(lab, previous=record, processes=owned, restart=[("h2", "sleep")])
    assert sorted(fake.events) == [("start", "h1", "web"), ("start", "h2", "sleep"), ("stop", "h2", "sleep")]
    assert web["pid"] not in [r["pid"] for r in owned] and len(owned) == 4


def test_a_changed_service_restarts_with_what_follows_and_a_removed_one_stops(monkeypatch):
    fake = Fake(monkeypatch)
    record, _, owned = _run(_lab(), fresh=["h1", "h2"])
    fake.events.clear()
    changed = _lab([("hosts.h1.exec[web].run", "python3 -m http.server 8001"),
                    ("hosts.h2.exec", [{"run": "sleep 1000", "background": True}])])
    _, failures, owned = _run(changed, previous=record, processes=owned)
    assert failures == []
    # Nodes run side by side: each node's events in its order.
    h1 = [e for e in fake.events if e[0] == "run" or e[1] == "h1"]
    assert h1 == [("stop", "h1", "web"), ("start", "h1", "web"), ("stop", "h1", "idle"), ("start", "h1", "idle"),
                  ("run", ["ip", "route", "show"])]
    assert [e for e in fake.events if e[0] != "run" and e[1] == "h2"] == [("stop", "h2", "probe")]
    assert sorted((r["node"], r["name"]) for r in owned) == [("h1", "idle"), ("h1", "web"), ("h2", "sleep")]


def test_a_never_ready_service_fails_its_node_is_stopped_and_named(monkeypatch):
    fake = Fake(monkeypatch, never_ready={"web"})
    record, failures, owned = _run(_lab(), fresh=["h1", "h2"])
    [f] = failures
    assert f.text() == ("node h1: service web (exec item 2 of 4): the service was not ready (port 8000) within 1 s: "
                        "python3 -m http.server 8000\n    boom\n    its log: /logs/h1/web.log")
    assert ("stop", "h1", "web") in fake.events and ("start", "h1", "idle") not in fake.events  # the list stops there
    assert [r["name"] for r in owned if r["node"] == "h1"] == []  # nothing of h1's left owned: nothing runs
    assert record["h1"]["ran"] == [["ip", "addr", "replace", "192.0.2.1/24", "dev", "eth1"]]
    assert record["h1"]["failed"] == f.text()


def test_the_cmd_sign_waits_until_the_command_exits_0(tmp_path):
    flag = tmp_path / "flag"
    ready = {"cmd": ["test", "-e", str(flag)], "timeout": 0.3}
    with pytest.raises(NotReady, match=r"the service was not ready \(cmd test -e .*flag\) within 0.3 s"):
        wait_ready(ready, None, netns=None, workdir=tmp_path, log=None, what="the service")
    flag.touch()
    assert 0 <= wait_ready(ready, None, netns=None, workdir=tmp_path, log=None) < 0.3


def test_set_restart_names_only_services_of_the_lab():
    from linklab.lab import service_names
    lab = _lab()
    assert service_names(lab, ["h1/web", "h2/sleep"]) == {("h1", "web"), ("h2", "sleep")}
    with pytest.raises(LinklabError) as e:
        service_names(lab, ["h1/nope", "h3/web"])
    assert e.value.exit_code == 2
    assert "no service 'h1/nope', 'h3/web' in lab services (valid: h1/web, h1/idle, h2/sleep, h2/probe)" in str(e.value)


def test_a_resolved_service_round_trips_through_the_state_file():
    from linklab.model.resolved import Lab
    lab = _lab()
    back = Lab.model_validate(lab.model_dump(mode="json"))
    assert back == lab and isinstance(back.node("h1").exec[1], Service)
