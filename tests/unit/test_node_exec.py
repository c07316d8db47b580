"""A node's `exec:` commands (linklab/backends/linux/node_exec.py): which run, in what order,
where, and what a failure says; `up` keeps what ran when one fails. Programs are faked: nothing
runs (the kernel tier runs them: tests/integration/kernel/test_node_exec.py)."""

from pathlib import Path

import pytest

from linklab import lab as lablib
from linklab import state
from linklab.backends.base import Backend, NodeCommandsFailed
from linklab.backends.linux import kinds, node_exec
from linklab.errors import CommandFailed, EXIT_FAILURE, UsageError, ValidationFailed
from linklab.model import Context, load_topology, resolve

ROOT = Path(__file__).resolve().parents[2]
TOPO = ROOT / "tests/golden/topologies/good/node_exec.yaml"


def _lab(overrides=()):
    return resolve(load_topology(TOPO, list(overrides)), Context())


class FakeRun:
    """runner.run as node_exec calls it: records (where, argv, env) and fails what it is told to."""

    def __init__(self, fail=None):
        self.calls, self.fail = [], fail or {}

    def __call__(self, argv, *, netns, timeout, env):
        self.calls.append((netns, list(argv), env))
        rc = self.fail.get(tuple(argv))
        if rc is not None:
            raise CommandFailed(list(argv), rc, "", "RTNETLINK answers: File exists\n", netns=netns,
                                timed_out=rc == -1)


@pytest.fixture
def fake(monkeypatch):
    f = FakeRun()
    monkeypatch.setattr(node_exec.runner, "run", f)
    return f


def _run(lab, fake, fresh=(), previous=None, env=None):
    record, failures, _services = node_exec.run(lab, lambda node: f"ns-{node}", lambda node: (env or {}).get(node, {}),
                                                set(fresh), previous or {}, say=lambda *_: None)
    return record, failures


def test_the_file_gives_each_node_its_commands_as_argv_lists():
    lab = _lab()
    assert lab.node("pc1").exec == [["ip", "link", "set", "eth1", "up"], ["ip", "addr", "add", "192.168.11.2/24", "dev", "eth1"],
                                    ["ip", "route", "add", "192.168.0.0/16", "via", "192.168.11.1"],
                                    ["sh", "-c", "echo ready > /dev/null"]]
    assert lab.node("c1").exec == [["ip", "-br", "addr"]] and lab.node("s1").exec == [["bridge", "link", "show"]]
    assert lab.node("pc2").exec == [] and "exec" not in lab.node("pc2").model_dump()  # stored as before


def test_first_to_run_is_where_what_ran_and_what_is_wanted_part():
    a, b, c, d = ["a"], ["b"], ["c"], ["d"]
    assert node_exec.first_to_run([a, b, c], []) == 0
    assert node_exec.first_to_run([a, b, c], [a, b, c]) == 3  # all ran: nothing
    assert node_exec.first_to_run([a, b, c], [a, b]) == 2  # failed at c last time, or c added
    assert node_exec.first_to_run([a, d, c], [a, b, c]) == 1  # b changed: from there on
    assert node_exec.first_to_run([a], [a, b]) == 1  # b removed: nothing to run (nothing is undone)


def test_a_new_lab_runs_every_command_in_order_in_its_node_with_its_env(fake):
    lab = _lab()
    record, failures = _run(lab, fake, fresh=[n.name for n in lab.nodes], env={"s1": {"OVS_RUNDIR": "/x"}})
    assert failures == []
    for n in lab.nodes:
        mine = [(argv, env) for where, argv, env in fake.calls if where == f"ns-{n.name}"]
        assert [argv for argv, _ in mine] == n.exec  # in order, each once, where the node's commands run
        assert all(env == ({"OVS_RUNDIR": "/x"} if n.name == "s1" else None) for _, env in mine)
    assert record == {n.name: {"ran": n.exec} for n in lab.nodes if n.exec}


def test_a_rebuild_runs_only_what_did_not_run_and_a_fresh_namespace_everything(fake):
    lab = _lab()
    pc1 = lab.node("pc1").exec
    previous = {"pc1": {"ran": pc1[:2]}, "c1": {"ran": lab.node("c1").exec}, "s1": {"ran": [["old"]]}}
    record, _ = _run(lab, fake, fresh=["c1"], previous=previous)
    assert [argv for where, argv, _ in fake.calls if where == "ns-pc1"] == pc1[2:]
    assert [argv for where, argv, _ in fake.calls if where == "ns-c1"] == lab.node("c1").exec  # made anew
    assert [argv for where, argv, _ in fake.calls if where == "ns-s1"] == lab.node("s1").exec  # changed
    assert record["pc1"]["ran"] == pc1
    fake.calls.clear()
    _run(lab, fake, previous=record)
    assert fake.calls == []  # `up` again, a sweep's `set`: nothing more


def test_a_changed_command_runs_again_with_those_after_it(fake):
    lab = _lab([("hosts.pc1.exec[1]", "ip addr replace 192.168.11.3/24 dev eth1")])
    before = _lab().node("pc1").exec
    _run(lab, fake, previous={"pc1": {"ran": before}})
    assert [argv for where, argv, _ in fake.calls if where == "ns-pc1"] == lab.node("pc1").exec[1:]


def test_a_failure_stops_its_node_names_the_command_and_the_others_go_on(fake):
    lab = _lab()
    fake.fail = {("ip", "addr", "add", "192.168.11.2/24", "dev", "eth1"): 2, ("ip", "-br", "addr"): -1}
    record, failures = _run(lab, fake, fresh=[n.name for n in lab.nodes])
    assert sorted(f.node for f in failures) == ["c1", "pc1"]
    assert [argv for where, argv, _ in fake.calls if where == "ns-pc1"] == lab.node("pc1").exec[:2]  # stopped
    assert [argv for where, argv, _ in fake.calls if where == "ns-s1"] == lab.node("s1").exec
    assert record["pc1"]["ran"] == lab.node("pc1").exec[:1] and record["s1"] == {"ran": lab.node("s1").exec}
    text = {f.node: f.text() for f in failures}
    assert text["pc1"] == ("node pc1: exec command 2 of 4 exited 2: ip addr add 192.168.11.2/24 dev eth1\n"
                           "    RTNETLINK answers: File exists")
    assert text["c1"].startswith(f"node c1: exec command 1 of 1 did not end within {node_exec.TIMEOUT_S:g} s: ip -br addr")
    assert record["pc1"]["failed"] == text["pc1"]
    fake.calls.clear()
    fake.fail = {}  # the cause fixed
    _run(lab, fake, previous=record)  # `up` again: pc1 from its failed command on, c1 all, s1 nothing
    assert [argv for where, argv, _ in fake.calls if where == "ns-pc1"] == lab.node("pc1").exec[1:]
    assert [argv for where, argv, _ in fake.calls if where != "ns-pc1"] == [["ip", "-br", "addr"]]


class RaisingBackend(Backend):
    """A backend whose build succeeds and one node's command fails (apply's contract)."""

    name = "linux"

    def problems(self, lab):
        return []

    def apply(self, lab, owned, say=print, restart=()):
        raise NodeCommandsFailed("node pc1: exec command 2 of 4 exited 2: ip addr add …",
                                 {**owned, "namespaces": ["ll-nodeexec-pc1"], "exec": {"pc1": {"ran": [["ip"]]}}})

    def node_netns(self, lab, node):
        return f"ll-{lab.name}-{node}"

    destroy = orphans = remove_orphans = inspect = interfaces = exec_argv = node_pids = None
    read_sysctls = switch_tool_argv = set_member_state = set_link_state = set_active_member = change_impairments = None


RaisingBackend.__abstractmethods__ = frozenset()


def test_up_whose_command_fails_records_what_ran_and_stays_building(tmp_path, monkeypatch):
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path))
    monkeypatch.setattr(lablib, "get_backend", lambda name: RaisingBackend())
    with pytest.raises(NodeCommandsFailed) as e:
        lablib.up(TOPO, say=lambda *_: None)
    assert e.value.exit_code == EXIT_FAILURE
    st = state.load("nodeexec")
    assert st["status"] == "building" and st["owned"]["exec"] == {"pc1": {"ran": [["ip"]]}}
    assert st["owned"]["namespaces"] == ["ll-nodeexec-pc1"] and st["netns"]["pc1"] == "ll-nodeexec-pc1"


def test_every_kind_gives_its_commands_an_environment_and_ovs_its_own_ovs():
    lab = resolve(load_topology(ROOT / "topologies/sdn_pair.yaml"), Context())
    for n in lab.nodes:
        env = {k: v for kind in kinds.of(n) for k, v in kind.exec_env(lab, n, f"ll-x-{n.name}").items()}
        if n.switch_kind == "ovs":
            assert env["OVS_RUNDIR"].endswith(f"ll-x-{n.name}") and set(env) >= {"OVS_RUNDIR", "OVS_DBDIR"}
        else:
            assert env == {}


def test_set_can_change_a_nodes_commands_and_bad_ones_are_refused_like_a_file():
    lab = _lab([("hosts.pc2.exec", ["ip addr add 192.0.2.9/24 dev eth1", ["ip", "route", "show"]])])
    assert lab.node("pc2").exec == [["ip", "addr", "add", "192.0.2.9/24", "dev", "eth1"], ["ip", "route", "show"]]
    with pytest.raises(ValidationFailed) as e:
        _lab([("switches.s1.exec", ["echo 'unclosed"])])
    assert e.value.problems == ["switches.s1.exec[0] (line 19): command \"echo 'unclosed\" cannot be split into words: "
                                "No closing quotation"]
    assert isinstance(e.value, UsageError) and e.value.exit_code == 2
