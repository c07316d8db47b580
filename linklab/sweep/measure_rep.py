"""One repetition of one point: the traffic (linklab/measure/traffic.py) and the probes the
experiment asks for (linklab/measure/probes/), run in a short loop.

Returns the raw output of every tool (kept verbatim in the results) and one flat row for the
tidy table. Parsing is the measure/ classes' pure functions; this module only chooses the
probes and sequences them, timing each step into its phase (linklab/sweep/phases.py).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from linklab import placement
from linklab.handle import LabHandle
from linklab.measure.iperf3 import Iperf3Client
from linklab.measure.probes.base import Probe, Repetition
from linklab.measure.probes.counters import QueueCounters
from linklab.measure.probes.cpu import CpuLoad
from linklab.measure.probes.faults import INTERVAL_S as EVENT_INTERVAL_S
from linklab.measure.probes.faults import RESTORE_MARGIN_S, FaultTimeline
from linklab.measure.probes.judgement import Disturbance
from linklab.measure.probes.nstat import StackCounters
from linklab.measure.probes.ping import IdlePing, LoadPing
from linklab.measure.probes.queues import QueueSampler
from linklab.measure.probes.reorder import Reordering
from linklab.measure.probes.switches import SwitchCounters
from linklab.measure.probes.udp_rtt import UdpRoundTrips
from linklab.measure.probes.tcpinfo import SenderTcpInfo
from linklab.measure.traffic import Traffic
from linklab.model.resolved import Lab
from linklab.sweep.experiment import Event
from linklab.sweep.phases import EVERY_REP, PhaseClock
from linklab.sweep.plan import PointPlan
from linklab.units import parse_rate

REORDER_PORT_OFFSET = 100  # the reorder probe's port, above the iperf3 servers'
UDP_RTT_PORT_OFFSET = 200  # the irtt server's, above the reorder probe's


def probes_for(plan: PointPlan, wanted: Collection[str], handle: LabHandle, events: Sequence[Event] = (),
               fault_targets: Mapping[int, Lab] | None = None, kind: Any = None,
               counted_links: Sequence[str] = ()) -> list[Probe]:
    """The probes of one repetition, in the order they begin (they finish in reverse): the
    switches' counters before the idle ping (their reset makes its first packet cross the
    controller), the CPU sampler last (it covers the traffic's window and nothing before it),
    the judgement of the whole row at the end. `wanted`: the experiment's `measure` list; `kind`:
    the tool's (linklab/sweep/kinds/; None: iperf3), whose sockets and processes the probes read;
    `counted_links`: the links link_counters reads (none: every link)."""
    tcp_ports = True if kind is None else kind.tcp_ports
    comms = ("iperf3",) if kind is None else kind.comms
    tool = plan.tool
    probes: list[Probe] = []
    if "switch_counters" in wanted:
        probes.append(SwitchCounters())
    idle = None
    if "ping" in wanted or "ping_load" in wanted:
        idle = IdlePing(tool.ping_count, tool.ping_interval)
        probes.append(idle)
    members = ({node: handle.lab.bond_members(node) for node in (plan.client, plan.server)}
               if "bond_counters" in wanted else {})
    paths = path_ends(handle.lab, counted_links) if "link_counters" in wanted else {}
    queues = QueueCounters(members, paths)  # always: the disturbance flags read every queue's drops
    probes.append(queues)
    if "nstat" in wanted:
        probes.append(StackCounters())
    if "reorder" in wanted:
        probes.append(Reordering(port=tool.port + REORDER_PORT_OFFSET, duration=tool.duration))
    if idle is not None and "ping_load" in wanted:
        probes.append(LoadPing(idle, tool.duration))
    if "udp_rtt" in wanted:
        probes.append(UdpRoundTrips(port=tool.port + UDP_RTT_PORT_OFFSET, duration=tool.duration))
    if "queue" in wanted:
        probes.append(QueueSampler())
    if events:
        # Members an event took down come back as the flow's time ends: with none left up, iperf3
        # could not end its test over the path and would wait for its timeout.
        probes.append(FaultTimeline(events, fault_targets or {}, restore_at=tool.duration + RESTORE_MARGIN_S))
    if tool.protocol == "tcp" and tcp_ports:  # always: the limiting-factor flags read the sender's tcp_info
        n = tool.streams if tool.parallel == "processes" else 1
        probes.append(SenderTcpInfo(tuple(range(tool.port, tool.port + n)), tool.duration))
    if "cpu" in wanted:
        probes.append(CpuLoad(comms))
    host_cpu = placement.host_cpu_probe()
    if host_cpu is not None:
        probes.append(host_cpu)  # last but one: it waits for the host's first sample after the window
    probes.append(Disturbance(queues, tool.mss))
    return probes


def path_ends(lab: Lab, links: Sequence[str] = ()) -> dict[str, tuple[str, str]]:
    """The paths link_counters counts, label -> (node, ifname) of the first end: each veth pair
    of the named links (by name or index; none: every link), a one-pair link labelled by its
    name, a bond's members NAME_0, NAME_1..."""
    chosen = [lk for lk in lab.links if not links or lk.name in links or str(lk.index) in links]
    return {(lk.name if len(lk.veths) == 1 else f"{lk.name}_{i}"): (pair.a.node, pair.a.ifname)
            for lk in chosen for i, pair in enumerate(lk.veths)}


def report_interval(plan: PointPlan, events: Sequence[Event] = ()) -> float | None:
    """How often the point's iperf3 ends report (None: once, at the end): the experiment's
    `interval`, or EVENT_INTERVAL_S when the point has events (the time series a fault's effect is
    read from). The servers must be started with it too (linklab/measure/traffic.py: ServerPool)."""
    return plan.tool.interval or (EVENT_INTERVAL_S if events else None)


def traffic_for(plan: PointPlan, handle: LabHandle, omit: float, events: Sequence[Event] = ()) -> Traffic:
    """The point's iperf3 clients; with a report interval, each also asks for the server's
    report (the receiver's series, which linklab/measure/timeline.py prefers)."""
    tool = plan.tool
    interval = report_interval(plan, events)
    name = plan.server if tool.ip == 4 else f"{plan.server}-v6"
    client = Iperf3Client(
        # by the address the client's hosts file gives the server: no name to resolve at start
        server=handle.lab.node(plan.client).address_of(name) or name, port=tool.port, duration=tool.duration,
        streams=tool.streams, protocol=tool.protocol,
        bitrate=parse_rate(tool.udp_rate) * handle.lab.scale if tool.protocol == "udp" else None,
        mss=tool.mss, length=tool.length, congestion=plan.cc, ipv6=tool.ip == 6, omit=omit,
        interval=interval, get_server_output=True if interval is not None else None)
    return Traffic(client, processes=tool.streams if tool.parallel == "processes" else None, parallel=tool.parallel,
                   timeout=tool.duration + omit + 30)


def measure(rep: Repetition, traffic: Traffic, probes: Sequence[Probe],
            clock: PhaseClock | None = None) -> tuple[dict[str, str], dict[str, Any]]:
    """Run one repetition: each probe's `before`, the traffic with each probe's `start` beside
    it, every `finish` in reverse (whatever failed), then the traffic's row and each probe's.
    `clock` gets the wall time of each phase. Whatever fails carries the raw output gathered
    until then (`.raw`), which the sweep keeps with the error."""
    clock = clock if clock is not None else PhaseClock()
    begun: list[Probe] = []
    try:
        with clock.phase("cc_read"):
            traffic.prepare(rep)
        try:
            for probe in probes:
                begun.append(probe)
                with clock.phase(probe.phase):
                    probe.before(rep)
            rep.opened, rep.wall_opened = time.monotonic(), time.time()
            try:
                traffic.start(rep)
                for probe in probes:
                    probe.start(rep)
                traffic.wait(rep)
            finally:
                clock.add("window", time.monotonic() - rep.opened)
        finally:
            for probe in reversed(begun):
                with clock.phase(probe.phase):
                    probe.finish(rep)
        rep.row["window_s"] = round(time.monotonic() - rep.opened, 3)
        rep.wall_closed = time.time()
        with clock.phase("parse"):
            rep.row.update(traffic.row(rep))
        for probe in probes:
            with clock.phase(probe.phase):
                rep.row.update(probe.row(rep))
    except Exception as e:
        e.raw = rep.raw
        raise
    for name in EVERY_REP:
        clock.add(name, 0.0)
    return rep.raw, rep.row
