"""Human-readable `linklab status`: one table of interfaces, then bonds, from live kernel data."""

from __future__ import annotations

import shlex
from typing import Any

from linklab.backends.base import bond_summary
from linklab.linux import qdisc_report
from linklab.units import format_rate


def _qdisc_text(qs: list[dict[str, Any]]) -> str:
    parts = []
    for q in qs:
        if q["kind"] in ("noqueue", "pfifo_fast", "fq_codel", "mq") and q.get("handle") in ("0:", None):
            continue  # the kernel's own default, not a queue linklab made
        if q.get("report"):  # a queue discipline: what the kernel reports it was built with
            parts.append(qdisc_report.summary(q["report"]))
            continue
        bits = [q["kind"]]
        if q.get("rate_bps") and q["rate_bps"] < 25e9:  # above: netem's order-keeping rate, not a limit
            bits.append(f"rate {format_rate(q['rate_bps'])}")
        if q.get("delay_ms"):
            bits.append(f"delay {q['delay_ms']:g}ms" + (f"±{q['jitter_ms']:g}" if q.get("jitter_ms") else ""))
        if q.get("loss_pct"):
            bits.append(f"loss {q['loss_pct']:g}%")
        if q.get("reorder_pct"):
            bits.append(f"reorder {q['reorder_pct']:g}%")
        if q.get("limit_bytes"):
            bits.append(f"limit {q['limit_bytes']}b")
        parts.append(" ".join(bits))
    return " / ".join(parts)


def render(data: dict[str, Any]) -> str:
    st, live = data["state"], data["live"]
    res = st["resolved"]
    pl = st.get("placement", {})
    where = "native kernel " + st.get("kernel", "")
    if pl.get("kind") == "vm":
        vm = pl.get("vm") or {}
        where = (f"lab VM: kernel {vm.get('kernel_release') or st.get('kernel')}, {vm.get('accel') or '?'}, "
                 f"{vm.get('cpus') or '?'} vCPUs, {vm.get('memory') or '?'}")
    lines = [f"lab {st['lab']}: {st['status']} — {where}",
             f"topology {st['topology']['path']} (sha256 {st['topology']['sha256'][:12]}), "
             f"scale {res['scale']:g} ({res['scale_source']})"]
    if st["topology"].get("overrides"):
        lines.append("overrides: " + ", ".join(f"{p}={v}" for p, v in st["topology"]["overrides"]))
    rows = [("NODE", "IFACE", "KIND", "STATE", "MTU", "ADDRESSES / MEMBER OF", "QDISC")]
    bonds = []
    for node, info in live["nodes"].items():
        if not info.get("present"):
            rows.append((node, "-", "-", "MISSING", "-", f"namespace {info['netns']} does not exist", ""))
            continue
        ifaces = info["interfaces"]
        shown = node  # the node's name on its first row only
        for it in ifaces:
            member = it.get("bond_member")
            where_ = f"member of {it['master']} (mii {member['mii']}" + (
                f", agg {member['aggregator']})" if member.get("aggregator") else ")") if member else (
                f"port of {it['master']}" if it.get("master") else " ".join(it["addresses"]))
            rows.append((shown, it["ifname"], it["kind"] or "", it["state"], str(it["mtu"]), where_,
                         _qdisc_text(it["qdiscs"])))
            if it.get("bond"):
                members = [m for m in ifaces if m.get("master") == it["ifname"]]
                bonds.append((node, it, bond_summary(it, members)))
            shown = ""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    if bonds:
        lines.append("bonds:")
        for node, it, s in bonds:
            text = f"  {node}:{it['ifname']} {s['mode']}, members {s['members_up']}/{s['members']} up"
            if it["bond"].get("active_slave"):
                text += f", active {it['bond']['active_slave']}"
            if s["mode"] == "802.3ad":
                text += (f", aggregator {s['aggregator']}, partner {s['partner_mac']} — "
                         + ("LACP aggregated" if s["lacp_aggregated"]
                            else f"NOT aggregated ({s['members_distributing']}/{s['members']} members distributing)"))
            lines.append(text)
    lines += _switch_lines(live)
    lines += _route_lines(live)
    lines += _container_lines(live)
    lines += _exec_lines(st)
    lines += _service_lines(data.get("services") or [])
    return "\n".join(lines)


def _route_lines(live: dict[str, Any]) -> list[str]:
    """Each host's and router's routes as its kernel reports them, when the lab routes at all (it
    has routers, or a node has a route through a gateway): connected subnets too, so a missing
    one shows."""
    nodes = live["nodes"]
    if not any(info.get("router") or any(h.get("via") for r in info.get("routes", []) for h in r["nexthops"])
               for info in nodes.values()):
        return []
    out = []
    for node, info in nodes.items():
        if "routes" not in info:
            continue
        fwd = (info.get("router") or {}).get("forwarding")
        head = f"  {node}:" + (f" forwarding IPv4 {'on' if fwd['ipv4'] else 'OFF'}, IPv6 {'on' if fwd['ipv6'] else 'OFF'}"
                              if fwd else "")
        out.append(head)
        out += _ospf_lines(info.get("frr"))
        for r in info["routes"]:
            hops = [(f"via {h['via']} " if h.get("via") else "") + f"dev {h['dev']}" for h in r["nexthops"]]
            out.append(f"    {r['to']} {hops[0] if len(hops) == 1 else 'nexthops ' + ', '.join(hops)} ({r['proto']})")
    return ["routes (as each node's kernel reports them; proto linklab: installed by linklab):", *out]


def _ospf_lines(frr: dict[str, Any] | None) -> list[str]:
    """A routing: ospf router's OSPF neighbours as its ospfd reports them (its learned routes are
    its routes with proto ospf)."""
    if not frr:
        return []
    if not frr.get("running"):
        return [f"    FRR NOT ANSWERING: {frr.get('error') or 'vtysh failed'}"]
    nbrs = frr.get("neighbours") or []
    if not nbrs:
        return ["    OSPF neighbours: none"]
    return ["    OSPF neighbours: " + ", ".join(f"{n['router_id']} {n['state']} on {n['interface']} ({n['address']})"
                                           for n in nbrs)]


def _exec_lines(st: dict[str, Any]) -> list[str]:
    """Each node's `exec:` commands, as the topology gives them, and how many ran (exit 0 each)."""
    done = (st.get("owned") or {}).get("exec") or {}
    out = []
    for n in st["resolved"].get("nodes", []):
        cmds = n.get("exec") or []
        if not cmds:
            continue
        rec = done.get(n["name"]) or {}
        ran = len(rec.get("ran", []))
        out.append(f"  {n['name']}: {ran} of {len(cmds)} ran" + (", each exit 0" if ran == len(cmds) else "")
                   + ("; " + rec["failed"].splitlines()[0].split(": ", 1)[1] if rec.get("failed") else ""))
        out += [f"    {'+' if i < ran else '-'} {_item_text(item)}" for i, item in enumerate(cmds)]
    return ["exec (commands run in the node once the lab is up; + ran):", *out] if out else []


def _container_lines(live: dict[str, Any]) -> list[str]:
    """Container nodes: image, container id, state."""
    out = [f"  {node}: image {c.get('image')}, container {c.get('id') or '-'}, {c.get('state')}"
           for node, info in live["nodes"].items() if (c := info.get("container"))]
    return ["containers (Docker):", *out] if out else []


def _switch_lines(live: dict[str, Any]) -> list[str]:
    """Open vSwitch switches: controller connected?, flows, packet-ins, datapath, ports with MTU and drops."""
    out = []
    for node, info in live["nodes"].items():
        o = info.get("ovs")
        if not o:
            continue
        if o.get("error"):
            out.append(f"  {node}: OVS not answering: {o['error']}")
            continue
        ctl = "no controller" if not o.get("controller") else (
            f"controller {o['controller']} " + ("connected" if o.get("controller_connected") else "NOT connected"))
        dp = o.get("datapath") or {}
        out.append(f"  {node}: bridge {o['bridge']}, {ctl}, {o.get('flows')} flows, {o.get('packet_ins')} packets "
                   f"to the controller; datapath hit {dp.get('hit')} missed {dp.get('missed')} lost {dp.get('lost')}")
        for p in o.get("ports", []):
            out.append(f"    {p.get('name', p['port']):<10} mtu {p.get('mtu') or '-':<5} "
                       f"rx {p.get('rx_packets')} (drop {p.get('rx_dropped')}, err {p.get('rx_errors')})  "
                       f"tx {p.get('tx_packets')} (drop {p.get('tx_dropped')}, err {p.get('tx_errors')})")
    return ["switches (Open vSwitch):", *out] if out else []


def _item_text(item: list[str] | dict[str, Any]) -> str:
    """An exec: item as the state file holds it: a command's argv, or a service's mapping."""
    if isinstance(item, dict):
        return f"service {item['name']}: {shlex.join(item['run'])}"
    return shlex.join(item)


def _service_lines(services: list[dict[str, Any]]) -> list[str]:
    """Each background service: pid, running or exited, ready (checked now), its log."""
    if not services:
        return []
    out = ["services (exec: items with background: true; output in each one's log):"]
    for s in services:
        ready = {True: "ready", False: "NOT ready", None: "-"}[s["ready"]]
        took = f" (ready in {s['ready_s']:g} s)" if s.get("ready_s") is not None and s["ready"] else ""
        pid = f"pid {s['pid']}" if s.get("pid") else "no pid"
        out.append(f"  {s['node']}/{s['name']}: {s['state']}, {pid}, {ready}{took} — {shlex.join(s['run'])}")
        out.append(f"    log {s['log']}")
    return out
