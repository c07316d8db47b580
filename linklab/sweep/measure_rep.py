"""One repetition of one point: snapshot counters, run the traffic, snapshot again, parse.

Returns the raw output of every tool (kept verbatim in the results) and one flat row for the
tidy table. The parsing is the measure/ classes' pure functions; this module only sequences.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from dataclasses import dataclass
from typing import Any

from linklab import procs, runner
from linklab.backends import get_backend
from linklab.measure import counters, nstat
from linklab.measure import switch_evidence
from linklab.measure.cpu import CpuSampler
from linklab.measure.iperf3 import Iperf3Client, Iperf3Server, aggregate, parse_result
from linklab.measure.ping import Ping
from linklab.model.resolved import Lab
from linklab.sweep.plan import CC_SYSCTL, PointPlan
from linklab.units import parse_rate


@dataclass
class Servers:
    """iperf3 servers on the point's server node, kept up across its repetitions."""

    procs: list[subprocess.Popen]
    ports: list[int]

    def stop(self) -> None:
        procs.stop_popen(self.procs)


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
        out = runner.run(["ss", "-Hltn"], netns=ns, check=False, timeout=10).stdout
        listening = {int(m) for m in re.findall(r":(\d+)\s", out)}
        if all(p in listening for p in ports):
            return
        time.sleep(0.1)


def bond_members(lab: Lab, node: str) -> list[str]:
    return [m for link in lab.links for b in link.bonds if b.node == node for m in b.members]


def measure(lab: Lab, plan: PointPlan, measure_what: list[str], omit: float) -> tuple[dict[str, str], dict[str, Any]]:
    tool = plan.tool
    cns, sns = _ns(lab, plan.client), _ns(lab, plan.server)
    target = plan.server if tool.ip == 4 else f"{plan.server}-v6"
    raw: dict[str, str] = {}
    row: dict[str, Any] = {}

    if "switch_counters" in measure_what:
        # Learned flows and ARP entries forgotten: the first ping crosses the controller again.
        get_backend().reset_forwarding(lab)
        sw_before = get_backend().switch_counters(lab)
    if "ping" in measure_what:
        ping = Ping(target=target, count=tool.ping_count, interval=tool.ping_interval, family=tool.ip)
        res = runner.run(ping.argv(), netns=cns, timeout=tool.ping_count * tool.ping_interval + 15, check=False)
        raw["ping.txt"] = res.stdout + res.stderr
        parsed = ping.parse_result(res)
        row.update(parsed.row("ping_"))
        row.update(switch_evidence.first_packet_row(parsed.rtts_ms))

    members = {node: bond_members(lab, node) for node in (plan.client, plan.server)}
    want_counters = "bond_counters" in measure_what and any(members.values())
    if want_counters:
        c_before = {node: counters.read_counters(_ns(lab, node), m) for node, m in members.items() if m}
    if "nstat" in measure_what:
        n_before = {side: nstat.Nstat().run(netns=ns) for side, ns in (("client", cns), ("server", sns))}

    # Always name the congestion control: a long-running iperf3 3.12 server keeps the -C of an
    # earlier test otherwise (captured in tests/data/tools/iperf3_tcp_reverse_stale_cc.json).
    cc = plan.cc or get_backend().read_sysctls(lab, plan.client, [CC_SYSCTL])[CC_SYSCTL] or None
    client = Iperf3Client(
        server=target, port=tool.port, duration=tool.duration, streams=tool.streams, protocol=tool.protocol,
        bitrate=parse_rate(tool.udp_rate) * lab.scale if tool.protocol == "udp" else None,
        mss=tool.mss, length=tool.length, congestion=cc, ipv6=tool.ip == 6, omit=omit)
    clients = client.as_processes(tool.streams) if tool.parallel == "processes" else [client]
    timeout = tool.duration + omit + 30
    sampler = CpuSampler(comms=["iperf3"], interval=1.0) if "cpu" in measure_what else None
    t0 = time.monotonic()
    if sampler:
        sampler.start()
    try:
        procs = [runner.start(c.argv(), netns=cns, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for c in clients]
        outputs = []
        for p in procs:
            try:
                out, err = p.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
            outputs.append((out.decode(errors="replace"), err.decode(errors="replace")))
    finally:
        window = sampler.stop() if sampler else None
    row["window_s"] = round(time.monotonic() - t0, 3)

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
    row["streams_as"] = tool.parallel  # threads of one iperf3, or separate processes: CPU results differ

    if window is not None:
        raw["cpu.json"] = json.dumps({"seconds": window.seconds, "cores": window.cores,
                                      "series": window.series}, default=str)
        row.update(window.row("cpu", labels={cns: "client", sns: "server"}))
    if want_counters:
        c_after = {node: counters.read_counters(_ns(lab, node), m) for node, m in members.items() if m}
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
        n_after = {side: nstat.Nstat().run(netns=ns) for side, ns in (("client", cns), ("server", sns))}
        for side in ("client", "server"):
            d = nstat.delta(n_before[side], n_after[side])
            raw[f"nstat-{side}.json"] = json.dumps(d, indent=1, sort_keys=True)
            row.update(nstat.row(d, prefix=f"{side}_nstat_"))
    return raw, row
