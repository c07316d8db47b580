"""One repetition as a loop over probes (linklab/sweep/measure_rep.py, linklab/measure/probes/):
which probes an experiment's `measure` list asks for, in which order their steps run, and what
a failure keeps. Fakes only: nothing here starts a process or reads a kernel."""

import dataclasses
import ipaddress
from pathlib import Path

import pytest

from linklab.handle import LabHandle
from linklab.measure.iperf3 import Iperf3Error
from linklab.measure.probes.base import Probe, Repetition
from linklab.measure.probes.counters import QueueCounters
from linklab.measure.probes.cpu import CpuLoad
from linklab.measure.probes.faults import FaultTimeline
from linklab.measure.probes.judgement import Disturbance
from linklab.measure.probes.nstat import StackCounters
from linklab.measure.probes.ping import IdlePing, LoadPing
from linklab.measure.probes.reorder import Reordering
from linklab.measure.probes.switches import SwitchCounters
from linklab.measure.probes.tcpinfo import SenderTcpInfo
from linklab.model import Context, load_topology, resolve
from linklab.sweep import measure_rep, phases
from linklab.sweep.experiment import Event
from linklab.sweep.phases import PhaseClock

ROOT = Path(__file__).resolve().parents[2]


def handle(topology="topologies/bond2.yaml"):
    lab = resolve(load_topology(ROOT / topology), Context())
    return LabHandle(lab, backend=object(), netns={n.name: f"ns-{n.name}" for n in lab.nodes})


class Plan:
    client, server, cc = "h1", "h2", None

    class tool:  # noqa: N801 -- the experiment's tool settings
        duration, port, ping_count, ping_interval = 5.0, 5201, 3, 0.2
        protocol, streams, parallel, mss = "tcp", 1, "threads", None


@pytest.mark.parametrize("wanted,kinds", [
    # a TCP flow's sender is always read (its tcp_info names what limited it)
    (["throughput"], [QueueCounters, SenderTcpInfo, Disturbance]),
    # E1: bond spread, TCP counters, CPU
    (["throughput", "cpu", "bond_counters", "nstat"], [QueueCounters, StackCounters, SenderTcpInfo, CpuLoad, Disturbance]),
    # E2/E5: the load ping after the idle one it is compared with, the CPU sampler last
    (["throughput", "ping", "ping_load", "reorder", "cpu", "bond_counters", "nstat"],
     [IdlePing, QueueCounters, StackCounters, Reordering, LoadPing, SenderTcpInfo, CpuLoad, Disturbance]),
    # E3: the switches reset before the idle ping, whose first packet then crosses the controller
    (["throughput", "ping", "switch_counters"], [SwitchCounters, IdlePing, QueueCounters, SenderTcpInfo, Disturbance]),
    # a load ping alone still measures the idle RTT it is compared with
    (["ping_load"], [IdlePing, QueueCounters, LoadPing, SenderTcpInfo, Disturbance]),
])
def test_an_experiments_measure_list_chooses_the_probes_in_their_order(monkeypatch, wanted, kinds):
    monkeypatch.delenv("LINKLAB_IN_VM", raising=False)  # natively: no host-CPU probe
    probes = measure_rep.probes_for(Plan, wanted, handle())
    assert [type(p) for p in probes] == kinds
    queues = next(p for p in probes if isinstance(p, QueueCounters))
    assert set(queues.members) == ({"h1", "h2"} if "bond_counters" in wanted else set())
    load = next((p for p in probes if isinstance(p, LoadPing)), None)
    assert load is None or load.idle is probes[kinds.index(IdlePing)]


def test_in_the_lab_vm_placement_adds_the_host_cpu_probe_before_the_judgement(monkeypatch, tmp_path):
    from linklab.vm.hostcpu import HostCpu
    monkeypatch.setenv("LINKLAB_IN_VM", "1")
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path))
    probes = measure_rep.probes_for(Plan, ["throughput"], handle())
    assert [type(p) for p in probes] == [QueueCounters, SenderTcpInfo, HostCpu, Disturbance]
    assert probes[2].path == tmp_path / "vm" / "host-cpu.json"
    # A command the VM's host forwarded reads the file the host writes, whatever its state directory.
    monkeypatch.setenv("LINKLAB_HOST_CPU_FILE", "/work/x/.linklab/vm/host-cpu.json")
    assert measure_rep.probes_for(Plan, ["throughput"], handle())[2].path == Path("/work/x/.linklab/vm/host-cpu.json")


def test_events_add_the_fault_timeline_with_their_targets(monkeypatch):
    monkeypatch.delenv("LINKLAB_IN_VM", raising=False)
    events = [Event(at=2, set="links[bond].bond.member[0].state=down")]
    probes = measure_rep.probes_for(Plan, ["throughput"], handle(), events, {})
    assert [type(p) for p in probes] == [QueueCounters, FaultTimeline, SenderTcpInfo, Disturbance]
    # Members an event took down come back 1 s after the flow's 5 s, before iperf3 must end its
    # test over the path (with every member down it could not, and waited for its timeout).
    assert probes[1].restore_at == 6.0


def test_the_senders_tcp_info_is_read_on_every_servers_port_and_not_for_udp(monkeypatch):
    monkeypatch.delenv("LINKLAB_IN_VM", raising=False)
    procs = type("P", (Plan,), {"tool": type("tool", (Plan.tool,), {"streams": 3, "parallel": "processes"})})
    (tcp,) = [p for p in measure_rep.probes_for(procs, ["throughput"], handle()) if isinstance(p, SenderTcpInfo)]
    assert tcp.tool.ports == (5201, 5202, 5203) and tcp.duration == 5.0
    udp = type("P", (Plan,), {"tool": type("tool", (Plan.tool,), {"protocol": "udp"})})
    assert [type(p) for p in measure_rep.probes_for(udp, ["throughput"], handle())] == [QueueCounters, Disturbance]


class TcpPlan(Plan):
    class tool(Plan.tool):  # noqa: N801
        ip, streams, protocol, udp_rate, mss, length, parallel, interval = 4, 1, "tcp", None, None, None, "threads", None


@pytest.mark.parametrize("events,interval,want", [
    ((), None, None),  # no series wanted: one report at the end, the server's text not asked for
    ((Event(at=2, set="links[bond].impair.rate=10mbit"),), None, 0.1),  # a fault's effect is read from a series
    ((), 0.5, 0.5),  # the experiment's own interval
])
def test_a_series_makes_servers_and_clients_report_every_interval_and_the_client_ask_for_the_receivers(
        events, interval, want):
    plan = type("P", (TcpPlan,), {"tool": type("tool", (TcpPlan.tool,), {"interval": interval})})
    assert measure_rep.report_interval(plan, events) == want
    argv = measure_rep.traffic_for(plan, handle(), 0, events).client.argv()
    if want is None:
        assert "-i" not in argv and "--get-server-output" not in argv
    else:
        assert argv[argv.index("-i") + 1] == f"{want:g}" and "--get-server-output" in argv
    from linklab.measure.iperf3 import Iperf3Server
    server = Iperf3Server.fleet(1, json_output=want is not None, interval=want)[0].argv()
    assert ("-J" in server) == (want is not None) and ("-i" in server) == (want is not None)


@pytest.mark.parametrize("ip", [4, 6])
def test_the_client_reaches_the_server_by_the_address_its_hosts_file_gives_and_starts_without_names(ip, monkeypatch):
    from linklab import runner
    from linklab.measure import traffic

    h = handle()
    plan = type("P", (TcpPlan,), {"tool": type("tool", (TcpPlan.tool,), {"ip": ip})})
    name = "h2" if ip == 4 else "h2-v6"
    want = h.lab.node("h1").address_of(name)
    assert want and ipaddress.ip_address(want).version == ip  # what /etc/hosts in h1 says h2 is
    t = measure_rep.traffic_for(plan, h, 0)
    argv = t.client.argv()
    assert argv[argv.index("-c") + 1] == want
    started = []
    monkeypatch.setattr(runner.subprocess, "Popen", lambda full, **kw: started.append(full))
    t.start(type("Rep", (), {"client_ns": "ns-h1"})())
    # no name to resolve: entered with nsenter, not `ip netns exec` (no mounts)
    assert started[0][:2] == ["nsenter", "--net=/var/run/netns/ns-h1"]
    by_name = traffic.Traffic(dataclasses.replace(t.client, server=name), processes=None, parallel="threads", timeout=5)
    by_name.start(type("Rep", (), {"client_ns": "ns-h1"})())
    assert started[1][:4] == ["ip", "netns", "exec", "ns-h1"]  # a name: the hosts file bound over /etc/hosts
    assert h.lab.node("h1").address_of("nobody") is None


class Recorder(Probe):
    def __init__(self, name, log, fail_in=None):
        self.name, self.log, self.fail_in = name, log, fail_in
        self.phase = f"p_{name}"

    def _step(self, step, rep):
        self.log.append((step, self.name))
        if step == self.fail_in:
            raise Iperf3Error(f"{self.name} failed in {step}")

    def before(self, rep):
        self._step("before", rep)

    def start(self, rep):
        self._step("start", rep)

    def finish(self, rep):
        self._step("finish", rep)
        rep.raw[f"{self.name}.txt"] = "output"

    def row(self, rep):
        self._step("row", rep)
        return {f"{self.name}_seen": sorted(rep.row)}


class FakeTraffic:
    def __init__(self, log, fail=False):
        self.log, self.fail = log, fail

    def prepare(self, rep):
        self.log.append(("prepare", "traffic"))

    def start(self, rep):
        self.log.append(("start", "traffic"))

    def wait(self, rep):
        self.log.append(("wait", "traffic"))
        rep.raw["iperf3.json"] = "{}"

    def row(self, rep):
        self.log.append(("row", "traffic"))
        if self.fail:
            raise Iperf3Error("iperf3: the server is busy")
        return {"throughput_bps": 1e8}


def rep():
    return Repetition(handle(), "h1", "h2", 4, omit=1.0)


def test_steps_run_in_probe_order_and_finish_in_reverse():
    log = []
    clock = PhaseClock()
    raw, row = measure_rep.measure(rep(), FakeTraffic(log), [Recorder("a", log), Recorder("b", log)], clock)
    assert log == [("prepare", "traffic"), ("before", "a"), ("before", "b"), ("start", "traffic"),
                   ("start", "a"), ("start", "b"), ("wait", "traffic"), ("finish", "b"), ("finish", "a"),
                   ("row", "traffic"), ("row", "a"), ("row", "b")]
    # A probe's row sees the fields of those before it
    assert row["a_seen"] == ["throughput_bps", "window_s"] and "a_seen" in row["b_seen"]
    assert set(raw) == {"iperf3.json", "a.txt", "b.txt"}
    # Every repetition reports the same phases, whatever its probes; each probe's time in its own
    assert set(phases.EVERY_REP) | {"p_a", "p_b"} <= set(clock.seconds)


def test_a_probe_that_fails_before_the_window_still_finishes_those_begun():
    log = []
    with pytest.raises(Iperf3Error) as e:
        measure_rep.measure(rep(), FakeTraffic(log), [Recorder("a", log), Recorder("b", log, fail_in="before"),
                                                      Recorder("c", log)])
    assert ("start", "traffic") not in log and ("before", "c") not in log
    assert [x for x in log if x[0] == "finish"] == [("finish", "b"), ("finish", "a")]
    assert set(e.value.raw) == {"a.txt", "b.txt"}


def test_a_failed_parse_keeps_what_every_tool_printed():
    log = []
    with pytest.raises(Iperf3Error) as e:
        measure_rep.measure(rep(), FakeTraffic(log, fail=True), [Recorder("a", log)])
    assert ("row", "a") not in log  # nothing after the window is read for a repetition that failed
    assert set(e.value.raw) == {"iperf3.json", "a.txt"}


def test_queue_counters_and_the_judgement_read_the_same_window(monkeypatch):
    """Two snapshots of every node's qdiscs (and the bond members of client and server): the
    drops between them are the row's and the judgement's."""
    from linklab.measure import counters
    zero = dict.fromkeys(counters.FIELDS, 0)
    # (bond members' link counters, qdisc counters) of h1, before then after; h2 has nothing
    h1 = iter([({"bond0-m0": zero, "bond0-m1": zero}, {"bond0-m0 bfifo 10:": {"sent_pkts": 0, "dropped": 0}}),
               ({"bond0-m0": {**zero, "tx_bytes": 300}, "bond0-m1": {**zero, "tx_bytes": 100}},
                {"bond0-m0 bfifo 10:": {"sent_pkts": 900, "dropped": 100}})])
    monkeypatch.setattr(counters, "snapshot", lambda ns, members: next(h1) if ns == "ns-h1" else ({}, {}))
    r = rep()
    queues = QueueCounters({"h1": r.lab.bond_members("h1"), "h2": []})
    queues.before(r)
    row = queues.row(r)
    assert row["qdisc_dropped_pkts"] == 100
    assert row["client_member_tx_share_bond0-m0"] == 0.75 and "bond_counters.json" in r.raw
    r.row.update(row)
    flags = Disturbance(queues).row(r)
    assert flags["flags"] == "queue_dropped" and "h1/bond0-m0 bfifo 10:: 100 (10%)" in flags["flag_evidence"]
    # a ping's 98-byte frame sent at 1 Gbit/s each way: all the unimpaired bond2 asks for
    assert flags["path_asked_rtt_ms"] == pytest.approx(2 * 98 * 8 / 1e9 * 1e3, abs=1e-4)
    assert flags["client_queue_holder"] == "bfifo"


def test_host_cpu_probe_reads_the_hosts_samples_around_the_window(tmp_path):
    import json
    from linklab.vm.hostcpu import HostCpu
    path = tmp_path / "host-cpu.json"
    # 2 cores at 100 ticks/s: 1 s apart, 200 ticks of which 50 idle and 100 QEMU's
    path.write_text(json.dumps({"samples": [{"t": 10.0, "total": 0, "idle": 0, "qemu": 0, "ncpu": 2},
                                            {"t": 11.0, "total": 200, "idle": 50, "qemu": 100, "ncpu": 2}]}))
    r = rep()
    r.wall_opened, r.wall_closed = 10.2, 10.8
    assert HostCpu(path).row(r) == {"host_busy_pct": 75.0, "host_qemu_pct": 50.0, "host_steal_pct": 0.0,
                                    "host_other_pct": 25.0, "host_cpus": 2}


def test_the_event_log_says_when_the_timeline_began_a_change_and_when_it_was_in():
    # started_s is the timeline's own timing (it wakes at the event's time on iperf3's clock,
    # after the warm-up); applied_s adds what the change itself took (tc processes: ~1 s on an
    # emulated CPU). A backend whose change takes 0.3 s shows both apart; a failing one, started_s.
    import json
    import time

    calls = []

    class SlowBackend:
        def change_impairments(self, old, new):
            calls.append(time.monotonic())
            time.sleep(0.3)
            return ["h1/eth1 changed in place"]

        def set_member_state(self, lab, link, member, up):
            raise OSError("no such member")

    h = handle()
    rep = Repetition(LabHandle(h.lab, backend=SlowBackend(), netns=h.netns), "h1", "h2", 4, omit=0.1)
    events = [Event(at=0.2, set="links[bond].impair.rate=20mbit"), Event(at=0.6, set="links[bond].bond.member[0].state=down")]
    probe = FaultTimeline(events, {0: h.lab})
    t0 = time.monotonic()
    probe.start(rep)
    time.sleep(1.2)
    probe.finish(rep)
    changed, failed = json.loads(rep.raw["events.json"])
    # Woke within 0.1 s of 0.1 + 0.2 s after start (the warm-up, then the event's time).
    assert 0.3 <= calls[0] - t0 <= 0.4, calls[0] - t0
    assert 0.2 <= changed["started_s"] <= 0.3, changed
    assert 0.3 <= changed["applied_s"] - changed["started_s"] <= 0.45, changed
    assert changed["did"] == "h1/eth1 changed in place"
    assert failed["applied_s"] is None and "no such member" in failed["error"], failed
    assert 0.6 <= failed["started_s"] <= 0.7, failed


def test_a_member_taken_down_comes_back_at_restore_at_before_the_window_is_finished():
    # A failover check's lab with no other member up: the flow cannot end its test until the
    # member is back, so the timeline brings it back at restore_at, not after iperf3 gave up.
    import time

    calls = []

    class Backend:
        def set_member_state(self, lab, link, member, up):
            calls.append((round(time.monotonic() - t0, 2), link, member, up))
            return "ok"

    h = handle()
    rep = Repetition(LabHandle(h.lab, backend=Backend(), netns=h.netns), "h1", "h2", 4, omit=0.1)
    probe = FaultTimeline([Event(at=0.2, set="links[bond].bond.member[0].state=down")], {}, restore_at=0.5)
    t0 = time.monotonic()
    probe.start(rep)
    time.sleep(0.9)
    assert [c[1:] for c in calls] == [("bond", 0, False), ("bond", 0, True)], calls
    assert 0.3 <= calls[0][0] <= 0.4 and 0.6 <= calls[1][0] <= 0.75, calls  # omit 0.1 + 0.2; 0.1 + 0.5
    probe.finish(rep)
    assert len(calls) == 2  # nothing left to bring back
    # Without restore_at the member stays down until the window is finished.
    calls.clear()
    probe = FaultTimeline([Event(at=0.2, set="links[bond].bond.member[0].state=down")], {})
    t0 = time.monotonic()
    probe.start(rep)
    time.sleep(0.6)
    assert [c[3] for c in calls] == [False]
    probe.finish(rep)
    assert [c[3] for c in calls] == [False, True]
