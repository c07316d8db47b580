"""Open vSwitch: the settings linklab gives a bridge and its bonds (ovs-vsctl arguments, one
place for the OVS kind and for the exporters that rebuild the switch elsewhere), and OVS's own
counters, parsed from ovs-ofctl / ovs-appctl text (pure functions, tested on output captured in
the lab VM: tests/data/tools/ovs_*.txt).

  dump-flows   one flow a line: n_packets, n_bytes, cookie, priority, actions
  dump-ports   per port rx/tx packets, bytes, drops, errors
  dpctl/show   the kernel datapath's lookups hit / missed / lost (lost: upcalls to
               ovs-vswitchd dropped because its queue was full)
  bond/show    each OVS bond's mode, LACP status, primary, and which members are
               enabled and active
"""

from __future__ import annotations

import re
from typing import Any

from linklab.model.resolved import Node, OvsBond

OPENFLOW = "OpenFlow13"  # the only version lab bridges speak (the bundled apps are 1.3 apps)


def bridge_columns(node: Node, dpid: int) -> list[str]:
    """`ovs-vsctl set bridge BR ...` columns of a lab switch: OpenFlow 1.3 only, its fail mode,
    no in-band control (the controller is on loopback), a stable datapath id."""
    return [f"protocols={OPENFLOW}", f"fail_mode={node.fail_mode or 'standalone'}",
            "other_config:disable-in-band=true", f"other_config:datapath-id={dpid:016x}"]


def controller_target(port: int) -> str:
    """Where a lab switch finds its controller: beside it, on loopback."""
    return f"tcp:127.0.0.1:{port}"


# OVS's minimum. A controller restarted with another app listens only after its imports (seconds
# under emulation); OVS's default backoff (up to 8 s between tries) would leave the switch
# unconnected for up to 8 s more.
CONTROLLER_MAX_BACKOFF_MS = 1000


def controller_connected_args(bridge: str) -> tuple[str, ...]:
    """ovs-vsctl's arguments that ask whether `bridge` is connected to its controller now."""
    return ("get", "controller", bridge, "is_connected")


def controller_connected(vsctl_stdout: str) -> bool:
    """What `ovs-vsctl get controller BR is_connected` printed, as a bool."""
    return vsctl_stdout.strip() == "true"


def set_controller_args(bridge: str, port: int) -> list[str]:
    """ovs-vsctl arguments pointing `bridge` at its controller on `port`: out of band (the lab's
    links carry only the lab's traffic), retried every second while it is away."""
    return ["set-controller", bridge, controller_target(port), "--", "set", "controller", bridge,
            "connection_mode=out-of-band", f"max_backoff={CONTROLLER_MAX_BACKOFF_MS}"]


def bond_args(bridge: str, bond: OvsBond) -> list[str]:
    """ovs-vsctl commands (each after `--`) making `bond` on `bridge`, idempotent."""
    args = ["--", "--may-exist", "add-bond", bridge, bond.name, *bond.members,
            "--", "set", "port", bond.name, f"bond_mode={bond.mode}", f"lacp={bond.lacp}",
            "other_config:lacp-time=fast", "other_config:bond-detect-mode=carrier"]
    # Without LACP nothing tells OVS which member the host uses. active-backup: OVS accepts
    # only on its active member, pinned here to the host's primary (OVS reads bond-primary
    # for active-backup only).
    args += (["--", "set", "port", bond.name, f"other_config:bond-primary={bond.primary}"] if bond.primary
             else ["--", "remove", "port", bond.name, "other_config", "bond-primary"])
    # balance-slb takes broadcasts on its active member only (against a switch that floods
    # them back on the other member). A host bond floods nothing back, and a balance-xor host
    # hashes its ARP broadcasts to either member, so pings are lost without this
    # (bench/README.md#bonds-and-switches). So every member takes them.
    return args + ["--", "set", "port", bond.name,
                   f"other_config:all-members-active={'true' if bond.mode == 'balance-slb' else 'false'}"]


_KV = re.compile(r"(\w+)=([^,\s]+)")


def parse_dump_flows(text: str) -> list[dict[str, Any]]:
    flows = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("cookie="):
            continue
        head, _, actions = line.partition(" actions=")
        f: dict[str, Any] = {"actions": actions}
        for k, v in _KV.findall(head):
            f[k] = v
        for k in ("n_packets", "n_bytes", "priority", "table"):
            if k in f:
                f[k] = int(f[k])
        f.setdefault("priority", 32768)  # OpenFlow's default, which ovs-ofctl leaves out
        f["cookie"] = int(f.get("cookie", "0"), 16)
        flows.append(f)
    return flows


def packet_in_count(flows: list[dict[str, Any]]) -> int:
    """Packets sent to the controller: the n_packets of every flow whose actions include it."""
    return sum(f.get("n_packets", 0) for f in flows if "CONTROLLER" in f["actions"])


_PORT = re.compile(r'^\s*port\s+"?([^":]+)"?:\s+rx\s+(.*)$')


def _nums(text: str) -> dict[str, int]:
    return {k: (int(v) if v.isdigit() else None) for k, v in _KV.findall(text)}


def parse_dump_ports(text: str) -> list[dict[str, Any]]:
    """[{port, rx_packets, rx_bytes, rx_dropped, rx_errors, tx_packets, tx_bytes, tx_dropped, tx_errors}]"""
    out: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for line in text.splitlines():
        m = _PORT.match(line)
        if m:
            rx = _nums(m.group(2))
            cur = {"port": m.group(1).strip(), "rx_packets": rx.get("pkts"), "rx_bytes": rx.get("bytes"),
                   "rx_dropped": rx.get("drop"), "rx_errors": rx.get("errs")}
            out.append(cur)
            continue
        s = line.strip()
        if cur is not None and s.startswith("tx "):
            tx = _nums(s[3:])
            cur.update({"tx_packets": tx.get("pkts"), "tx_bytes": tx.get("bytes"), "tx_dropped": tx.get("drop"),
                        "tx_errors": tx.get("errs")})
    return out


_LOOKUPS = re.compile(r"lookups:\s+hit:(\d+)\s+missed:(\d+)\s+lost:(\d+)")
_FLOWS = re.compile(r"^\s*flows:\s+(\d+)", re.M)


def parse_dpctl_show(text: str) -> dict[str, Any]:
    """{'hit', 'missed', 'lost', 'flows'} summed over the datapaths shown (one per namespace)."""
    out = {"hit": 0, "missed": 0, "lost": 0, "flows": 0}
    for m in _LOOKUPS.finditer(text):
        out["hit"] += int(m.group(1))
        out["missed"] += int(m.group(2))
        out["lost"] += int(m.group(3))
    for m in _FLOWS.finditer(text):
        out["flows"] += int(m.group(1))
    return out


_BOND = re.compile(r"^---- (\S+) ----$")
_MEMBER = re.compile(r"^(?:member|slave) (\S+): (enabled|disabled)$")


def parse_bond_show(text: str) -> dict[str, dict[str, Any]]:
    """`ovs-appctl bond/show` -> {bond: {mode, lacp_status, primary, active, all_members_active,
    members: {name: {enabled}}}}; `active` is the member OVS sends on (active-backup) and takes
    broadcasts on (unless all_members_active)."""
    out: dict[str, dict[str, Any]] = {}
    bond: dict[str, Any] | None = None
    member: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if m := _BOND.match(line):
            bond = out[m.group(1)] = {"mode": None, "lacp_status": None, "primary": None, "active": None,
                                      "all_members_active": None, "members": {}}
            member = None
        elif bond is None:
            continue
        elif m := _MEMBER.match(line):
            member = m.group(1)
            bond["members"][member] = {"enabled": m.group(2) == "enabled"}
        elif line == "active member" and member is not None:
            bond["active"] = member
        elif line.startswith("bond_mode:"):
            bond["mode"] = line.split(":", 1)[1].strip()
        elif line.startswith("lacp_status:"):
            bond["lacp_status"] = line.split(":", 1)[1].strip()
        elif line.startswith("all members active:"):
            bond["all_members_active"] = line.split(":", 1)[1].strip() == "true"
        elif line.startswith("active-backup primary:"):
            v = line.split(":", 1)[1].strip().split(" ")[0]
            bond["primary"] = None if v == "<none>" else v
    return out


INTERFACE_COLUMNS = ("--columns=name,ofport,mtu", "--format=csv", "--data=bare", "--no-headings")


def parse_interfaces_csv(text: str) -> dict[str, dict[str, Any]]:
    """`ovs-vsctl {INTERFACE_COLUMNS} list interface` -> {ofport: {name, mtu}} (ofport as dump-ports
    prints it; the bridge's own port, 65534, is LOCAL there)."""
    out: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        parts = [p.strip().strip('"') for p in line.split(",")]
        if len(parts) != 3 or not parts[0]:
            continue
        name, ofport, mtu = parts
        key = "LOCAL" if ofport == "65534" else ofport
        out[key] = {"name": name, "mtu": int(mtu) if mtu.isdigit() else None}
    return out


OVER_MTU = "dropped over-mtu packet"


def over_mtu_lines(kernel_log: str) -> list[str]:
    """Kernel log lines where the OVS datapath dropped a packet longer than the output port's MTU."""
    return [line for line in kernel_log.splitlines() if OVER_MTU in line]


def port_delta(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per port (by name when known) what changed between two dump-ports readings."""
    b = {p.get("name", p["port"]): p for p in before}
    out = {}
    for p in after:
        key = p.get("name", p["port"])
        old = b.get(key, {})
        out[key] = {k: (v or 0) - (old.get(k) or 0) for k, v in p.items() if k not in ("port", "mtu")
                    and isinstance(v, int)}
    return out
