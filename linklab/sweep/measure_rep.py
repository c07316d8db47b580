"""One repetition of one point: snapshot counters, run the traffic, snapshot again, parse.

Returns the raw output of every tool (kept verbatim in the results) and one flat row for the
tidy table. The parsing is the measure/ classes' pure functions; this module only sequences.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from linklab import fsutil, kernel, procs, runner, state
from linklab import lab as lab_api
from linklab.backends import get_backend
from linklab.measure import counters, disturbance, nstat, switch_evidence, timeline
from linklab.measure.cpu import CpuSampler
from linklab.measure.iperf3 import Iperf3Client, Iperf3Server, aggregate, parse_result
from linklab.measure.ping import Ping, under_load_row
from linklab.measure.reorder import ReorderProbe
from linklab.model import paths
from linklab.model.resolved import Lab
from linklab.sweep.experiment import Event
from linklab.vm import hostcpu
from linklab.sweep.phases import PhaseClock
from linklab.sweep.plan import CC_SYSCTL, PointPlan
from linklab.units import parse_rate


# Latency under load: one probe every 100 ms through the throughput window, counted from 1 s
# after iperf3's omitted seconds (slow start is not the steady state a queue settles to).
LOAD_PING_INTERVAL_S = 0.1
LOAD_PING_SKIP_S = 1.0
# iperf3's finest report interval: the time series a fault's outage is read from.
EVENT_INTERVAL_S = 0.1


@dataclass
class Servers:
    """iperf3 servers on the point's server node, kept up across its repetitions."""

    procs: list[subprocess.Popen]
    ports: list[int]

    def stop(self) -> None:
        procs.stop_popen(self.procs)


class ServerPool:
    """The iperf3 servers kept up from point to point: the next point reuses them when it wants
    the same servers (node, ports) and they are still running, instead of stopping, starting and
    waiting for them again. They listen on every address, so MTU, bond-mode and impairment
    changes leave them serving; the client always names its congestion control (see measure)."""

    def __init__(self) -> None:
        self.key: tuple | None = None
        self.servers: Servers | None = None

    def get(self, lab: Lab, plan: PointPlan) -> Servers:
        n = plan.tool.streams if plan.tool.parallel == "processes" else 1
        key = (lab.name, plan.server, plan.client, plan.tool.port, n)
        if self.servers is not None and self.key == key and all(p.poll() is None for p in self.servers.procs):
            return self.servers
        self.stop()
        self.servers, self.key = start_servers(lab, plan), key
        return self.servers

    def stop(self) -> None:
        if self.servers is not None:
            self.servers.stop()
        self.servers = self.key = None


def _ns(lab: Lab, node: str) -> str | None:
    """Where the backend runs `node`'s commands (runner's netns=)."""
    return get_backend().node_netns(lab, node)


def stop_stale_iperf3(lab: Lab, node: str) -> int:
    """iperf3 processes left on a lab node by a killed sweep would hold the ports."""
    stale = [pid for pid in get_backend().node_pids(lab, node) if (procs.identity(pid) or {}).get("comm") == "iperf3"]
    procs.stop(stale, grace=0.5)
    return len(stale)


def start_servers(lab: Lab, plan: PointPlan) -> Servers:
    n = plan.tool.streams if plan.tool.parallel == "processes" else 1
    servers = Iperf3Server.fleet(n, base_port=plan.tool.port, json_output=False)
    ns = _ns(lab, plan.server)
    for node in {plan.client, plan.server}:
        stop_stale_iperf3(lab, node)
    procs = [runner.start(s.argv(), netns=ns) for s in servers]
    ports = [s.port for s in servers]
    wait_listening(ns, ports)
    return Servers(procs, ports)


def wait_listening(ns: str, ports: list[int], deadline_s: float = 15.0) -> None:
    """Until every server port accepts connections (a fixed sleep is too short under emulation)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < deadline_s:
        # ss's own -N enters the namespace: no `ip netns exec` process on top (costly under emulation).
        out = runner.run(["ss", "-N", ns, "-Hltn"], check=False, timeout=10).stdout
        listening = {int(m) for m in re.findall(r":(\d+)\s", out)}
        if all(p in listening for p in ports):
            return
        time.sleep(0.05)


def measure(lab: Lab, plan: PointPlan, measure_what: list[str], omit: float,
            events: Sequence[Event] = (), clock: PhaseClock | None = None) -> tuple[dict[str, str], dict[str, Any]]:
    """`clock` (linklab/sweep/phases.py) gets the wall time of each phase of this repetition."""
    clock = clock if clock is not None else PhaseClock()
    tool = plan.tool
    cns, sns = _ns(lab, plan.client), _ns(lab, plan.server)
    target = plan.server if tool.ip == 4 else f"{plan.server}-v6"
    raw: dict[str, str] = {}
    row: dict[str, Any] = {}
    idle = None

    if "switch_counters" in measure_what:
        with clock.phase("switch_counters"):
            # Learned flows and ARP entries forgotten: the first ping crosses the controller again.
            get_backend().reset_forwarding(lab)
            sw_before = get_backend().switch_counters(lab)
    if "ping" in measure_what or "ping_load" in measure_what:
        with clock.phase("idle_ping"):
            ping = Ping(target=target, count=tool.ping_count, interval=tool.ping_interval, family=tool.ip)
            res = runner.run(ping.argv(), netns=cns, timeout=tool.ping_count * tool.ping_interval + 15, check=False)
        raw["ping.txt"] = res.stdout + res.stderr
        idle = ping.parse_result(res)
        row.update(idle.row("ping_"))
        row.update(switch_evidence.first_packet_row(idle.rtts_ms))

    members = {node: lab.bond_members(node) for node in (plan.client, plan.server)}
    want_counters = "bond_counters" in measure_what and any(members.values())
    with clock.phase("counters"):
        c_before, q_before = snapshot(lab, members if want_counters else {})
        if "nstat" in measure_what:
            n_before = {side: nstat.read_counters(ns) for side, ns in (("client", cns), ("server", sns))}

    with clock.phase("cc_read"):
        # Always name the congestion control: a long-running iperf3 3.12 server keeps the -C of an
        # earlier test otherwise (captured in tests/data/tools/iperf3_tcp_reverse_stale_cc.json).
        cc = plan.cc or get_backend().read_sysctls(lab, plan.client, [CC_SYSCTL])[CC_SYSCTL] or None
    client = Iperf3Client(
        server=target, port=tool.port, duration=tool.duration, streams=tool.streams, protocol=tool.protocol,
        bitrate=parse_rate(tool.udp_rate) * lab.scale if tool.protocol == "udp" else None,
        mss=tool.mss, length=tool.length, congestion=cc, ipv6=tool.ip == 6, omit=omit,
        interval=tool.interval or (EVENT_INTERVAL_S if events else None))
    clients = client.as_processes(tool.streams) if tool.parallel == "processes" else [client]
    timeout = tool.duration + omit + 30
    sampler = CpuSampler(comms=["iperf3"], interval=1.0) if "cpu" in measure_what else None
    if sampler:
        with clock.phase("cpu_sampling"):
            sampler.start()
    t0 = time.monotonic()
    wall0 = time.time()
    load_ping = load_proc = probe = probe_rx = probe_tx = fault_thread = None
    if "reorder" in measure_what:
        # Receiver first (it prints "listening" once bound), sender once the flow is past slow start.
        probe = ReorderProbe(target=lab.address(plan.server, tool.ip), port=tool.port + 100,
                             bursts=max(min(int((tool.duration - 1.5) / 0.01), 400), 20), listen_s=1.0)
        probe_rx = runner.start(probe.receiver_argv(), netns=sns, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        probe_rx.stdout.readline()
    try:
        procs = [runner.start(c.argv(), netns=cns, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for c in clients]
        if "ping_load" in measure_what:
            # Ping through the whole window; under_load_row keeps the replies past slow start.
            load_ping = Ping(target=target, count=max(int((tool.duration + omit) / LOAD_PING_INTERVAL_S) - 1, 1),
                             interval=LOAD_PING_INTERVAL_S, family=tool.ip)
            load_proc = runner.start(load_ping.argv(), netns=cns, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        fault_thread = _FaultTimeline(lab, events, time.monotonic() + omit) if events else None
        if probe is not None:
            time.sleep(omit + 0.5)
            probe_tx = runner.start(probe.argv(), netns=cns, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        outputs = []
        for p in procs:
            try:
                out, err = p.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
            outputs.append((out.decode(errors="replace"), err.decode(errors="replace")))
    finally:
        clock.add("window", time.monotonic() - t0)
        # window_tail: what outlives iperf3 (the fault timeline, the load ping, the reorder probe).
        with clock.phase("window_tail"):
            if fault_thread is not None:
                fault_thread.finish()
        with clock.phase("cpu_sampling"):
            window = sampler.stop() if sampler else None
        with clock.phase("window_tail"):
            if load_proc is not None:
                try:
                    lout, lerr = load_proc.communicate(timeout=15)
                except subprocess.TimeoutExpired:
                    load_proc.kill()
                    lout, lerr = load_proc.communicate()
            probe_out = b""
            for p in (probe_tx, probe_rx):
                if p is not None:
                    try:
                        out = p.communicate(timeout=30)[0]
                    except subprocess.TimeoutExpired:
                        p.kill()
                        out = p.communicate()[0]
                    probe_out = out if p is probe_rx else probe_out
    row["window_s"] = round(time.monotonic() - t0, 3)
    wall1 = time.time()
    parse_t0 = time.monotonic()
    if probe_rx is not None:
        text = probe_out.decode(errors="replace")
        raw["reorder-probe.txt"] = text
        row.update(ReorderProbe.parse(text).row("reorder_"))
    if load_proc is not None:
        lout, lerr = lout.decode(errors="replace"), lerr.decode(errors="replace")
        raw["ping-load.txt"] = lout + lerr
        row.update(under_load_row(Ping.parse(lout, lerr), LOAD_PING_INTERVAL_S, omit + LOAD_PING_SKIP_S, idle))

    for i, (out, err) in enumerate(outputs):
        raw[f"iperf3-{i}.json" if len(outputs) > 1 else "iperf3.json"] = out
        if err.strip():
            raw[f"iperf3-{i}.stderr" if len(outputs) > 1 else "iperf3.stderr"] = err
    try:
        results = [parse_result(out) for out, _ in outputs]  # raises Iperf3Error on iperf3's {"error": ...}
    except Exception as e:
        e.raw = raw  # the sweep keeps the failed rep's raw output with its error
        raise
    result = results[0] if len(results) == 1 else aggregate(results)
    row.update(result.row(""))
    if fault_thread is not None:
        raw["events.json"] = json.dumps(fault_thread.log, indent=1)
        ivs = timeline.series(json.loads(outputs[0][0])) if outputs and outputs[0][0].strip() else []
        for i, (ev, done) in enumerate(zip(fault_thread.events, fault_thread.log), start=1):
            row[f"fault{i}_action"] = ev.set
            row[f"fault{i}_applied_s"] = done.get("applied_s")
            until = min((e.at for e in fault_thread.events if e.at > ev.at), default=None)
            row.update(timeline.effect(ivs, ev.at, ev.is_failure, until).row(f"fault{i}_"))
        row["fault_outage_fraction"] = timeline.OUTAGE_FRACTION
    row["streams_as"] = tool.parallel  # threads of one iperf3, or separate processes: CPU results differ
    clock.add("parse", time.monotonic() - parse_t0)

    counters_t0 = time.monotonic()
    c_after, q_after = snapshot(lab, members if want_counters else {})
    drops = disturbance.drops_delta(q_before, q_after)
    raw["qdisc-drops.json"] = fsutil.json_text({"dropped": drops, "after": q_after})
    row["qdisc_dropped_pkts"] = disturbance.leaf_drops(drops)

    if window is not None:
        raw["cpu.json"] = json.dumps({"seconds": window.seconds, "cores": window.cores,
                                      "series": window.series}, default=str)
        row.update(window.row("cpu", labels={cns: "client", sns: "server"}))
    if want_counters:
        deltas = {node: counters.delta(c_before[node], c_after[node]) for node in c_after}
        raw["bond_counters.json"] = json.dumps(deltas, indent=1)
        for node, d in deltas.items():
            side = "client" if node == plan.client else "server"
            row.update(counters.spread_row(counters.spread(d), prefix=f"{side}_member_"))
    if "switch_counters" in measure_what:
        sw_after = get_backend().switch_counters(lab)
        raw["switch_counters.json"] = json.dumps({"before": sw_before, "after": sw_after}, indent=1)
        row.update(switch_evidence.row(sw_before, sw_after))
    if "nstat" in measure_what:
        n_after = {side: nstat.read_counters(ns) for side, ns in (("client", cns), ("server", sns))}
        for side in ("client", "server"):
            d = nstat.delta(n_before[side], n_after[side])
            raw[f"nstat-{side}.json"] = fsutil.json_text(d)
            row.update(nstat.row(d, prefix=f"{side}_nstat_"))
    clock.add("counters", time.monotonic() - counters_t0)
    with clock.phase("host_cpu"):
        # Last: it waits for the host's first CPU sample after the window (once a second).
        row.update(host_cpu_row(wall0, wall1))
    asked = paths.asked_rtt_s(lab, plan.client, plan.server)
    row["path_asked_rtt_ms"] = None if asked is None else round(asked * 1e3, 4)
    row.update(disturbance.flags(row, drops, lossy_ifaces(lab), sent=disturbance.sent_delta(q_before, q_after),
                                 asked_rtt_ms=row["path_asked_rtt_ms"],
                                 beyond=paths.beyond_bottleneck(lab, plan.client, plan.server)))
    row.update(queue_row(lab, plan.client))
    return raw, row


def queue_row(lab: Lab, node: str, prefix: str = "client_") -> dict[str, Any]:
    """The queues the sender's traffic first meets (its own egress), as resolved: bound in ms,
    which qdisc holds it, and what decided it (linklab/model/queues.py)."""
    qs = [e.queue for e in lab.egress_queues(node) if e.queue is not None and e.queue.queue_s is not None]
    uniq = lambda xs: ";".join(sorted({str(x) for x in xs}))  # noqa: E731 -- one value per member, usually equal
    return {f"{prefix}queue_ms": uniq(round(q.queue_s * 1e3, 3) for q in qs) or None,
            f"{prefix}queue_holder": uniq(q.queue_holder for q in qs) or None,
            f"{prefix}queue_source": uniq(q.queue_source for q in qs) or None}


class _FaultTimeline:
    """Applies the experiment's events at their times in a thread; `finish` waits for it, brings
    back up every member it took down and restores every impairment it changed (the next
    repetition starts as the point was). An impairment event's target is resolved before the
    window starts, so applying it costs only the tc calls."""

    def __init__(self, lab: Lab, events: Sequence[Event], zero: float):
        self.lab, self.events, self.zero = lab, sorted(events, key=lambda e: e.at), zero
        self.log: list[dict[str, Any]] = []
        self.down: set[tuple[str, int]] = set()
        # Impairment events accumulate: the i-th one's target has every earlier one applied too.
        self.targets: dict[int, Lab] = {}
        applied: list[tuple[str, Any]] = []
        for i, ev in enumerate(self.events):
            if ev.kind == "impair":
                applied.append(ev.override())
                self.targets[i] = lab_api.preview(lab.name, applied)
        self.current = lab
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _apply(self, i: int, ev: Event) -> str:
        backend = get_backend()
        if ev.kind == "member_state":
            link, member, up = ev.action()
            what = backend.set_member_state(self.lab, link, member, up)
            (self.down.discard if up else self.down.add)((link, member))
            return what
        if ev.kind == "active_member":
            return backend.set_active_member(self.lab, *ev.active())
        target = self.targets[i]
        what = "; ".join(backend.change_impairments(self.current, target)) or "no queue changed"
        self.current = target
        return what

    def _run(self) -> None:
        for i, ev in enumerate(self.events):
            if self.stop.wait(max(self.zero + ev.at - time.monotonic(), 0)):
                self.log.append({"set": ev.set, "at_s": ev.at, "applied_s": None, "note": "window ended first"})
                continue
            try:
                what = self._apply(i, ev)
                self.log.append({"set": ev.set, "at_s": ev.at, "applied_s": round(time.monotonic() - self.zero, 3),
                                 "did": what})
            except Exception as e:  # recorded, not fatal: the row says the fault did not happen
                self.log.append({"set": ev.set, "at_s": ev.at, "applied_s": None, "error": str(e)})

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(timeout=30)
        for link, member in sorted(self.down):
            get_backend().set_member_state(self.lab, link, member, True)
        if self.current is not self.lab:
            get_backend().change_impairments(self.current, self.lab)


def host_cpu_row(t0: float, t1: float) -> dict[str, Any]:
    """The host's CPU during the window, as the host recorded it (linklab/vm/hostcpu.py); in the
    lab VM only (a guest cannot see the host's other work). Empty natively."""
    if not kernel.in_lab_vm():
        return {}
    path = state.state_dir() / "vm" / "host-cpu.json"
    deadline = time.monotonic() + 2.5  # the host samples once a second: wait for one after t1
    while True:
        got = hostcpu.window(hostcpu.read(path), t0, t1)
        if got is not None or time.monotonic() > deadline:
            return got or {"host_busy_pct": None}
        time.sleep(0.1)


def snapshot(lab: Lab, members: dict[str, list[str]]) -> tuple[dict[str, counters.Counters], dict[str, dict[str, int]]]:
    """Every lab node's qdisc counters, keyed "node/dev kind handle", and the bond members'
    link counters of the nodes in `members`, one netlink socket per node (the point's
    `qdisc.txt` keeps tc's own text of the same qdisc counters)."""
    links: dict[str, counters.Counters] = {}
    qdiscs: dict[str, dict[str, int]] = {}
    for node in lab.nodes:
        c, q = counters.snapshot(_ns(lab, node.name), members.get(node.name) or [])
        if members.get(node.name):
            links[node.name] = c
        qdiscs.update((f"{node.name}/{key}", v) for key, v in q.items())
    return links, qdiscs


def lossy_ifaces(lab: Lab) -> set[str]:
    """Interfaces whose impairment asks for loss: their drops are the experiment, not a flag."""
    return {f"{e.end.node}/{e.end.ifname}" for e in lab.egress_queues() if e.queue is not None and e.queue.loss_pct}
