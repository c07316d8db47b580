"""The kernel modules a lab's build uses (Backend.kernel_needs), each with what in the lab needs
it: bonds need bonding; each qdisc the tc plans of its links add (linklab/linux/tc.py: netem,
htb, tbf, an `aqm:` discipline) needs its sch_ module; OVS switches need openvswitch (the
userspace datapath, `datapath: netdev`, only tun for its ports); Linux bridge switches need
bridge; a congestion control set in a node's sysctls needs its tcp_ module. Namespaces, veth
pairs, routes and IP forwarding are what every lab is made of: a kernel without them runs no lab,
natively or otherwise, so they are not listed. Pure.
"""

from __future__ import annotations

from linklab.linux import tc
from linklab.model.resolved import Lab

CC_SYSCTL = "net.ipv4.tcp_congestion_control"
# Queue disciplines every kernel with tc has (sch_fifo is built with the qdisc layer itself) and
# congestion controls always built in.
ALWAYS_THERE = {"sch_bfifo", "sch_pfifo", "tcp_reno"}
WHAT = {"sch_netem": "netem impairments", "sch_htb": "htb rate limits", "sch_tbf": "tbf rate limits"}


def _names(users: list[tuple[str, str]], limit: int = 3) -> str:
    """[("link", "up1"), ("link", "up2")] -> "links up1, up2" (the first `limit` names)."""
    unique = list(dict.fromkeys(name for _, name in users))
    shown = ", ".join(unique[:limit]) + (f" and {len(unique) - limit} more" if len(unique) > limit else "")
    return f"{users[0][0]}{'s' if len(unique) > 1 else ''} {shown}"


def qdisc_kinds(plan: list[list[str]]) -> list[str]:
    """The qdisc kinds a tc plan adds (the word after each `qdisc add ... handle H`), in order."""
    kinds = []
    for argv in plan:
        if argv[1:3] == ["qdisc", "add"] and "handle" in argv:
            kinds.append(argv[argv.index("handle") + 2])
    return kinds


def kernel_needs(lab: Lab) -> dict[str, str]:
    """Module -> what in `lab` needs it ("bonds (link bond)"), in a stable order."""
    users: dict[str, list[tuple[str, str]]] = {}
    what: dict[str, str] = {}

    def need(module: str, thing: str, user: tuple[str, str]) -> None:
        if module not in ALWAYS_THERE:
            users.setdefault(module, []).append(user)
            what.setdefault(module, thing)

    for link in lab.links:
        if link.bonds:
            need("bonding", "bonds", ("link", link.name))
    for eg in lab.egress_queues():
        for kind in qdisc_kinds(tc.plan(eg.queue, eg.link.mtu, eg.end.ifname)):
            module = f"sch_{kind}"
            need(module, WHAT.get(module, f"aqm: {kind} queues"), ("link", eg.link.name))
    for node in lab.nodes:
        if node.switch_kind == "ovs" and node.datapath == "netdev":
            need("tun", "Open vSwitch switches (datapath: netdev)", ("switch", node.name))
        elif node.switch_kind == "ovs":
            need("openvswitch", "Open vSwitch switches", ("switch", node.name))
        elif node.switch_kind == "bridge":
            need("bridge", "Linux bridge switches", ("switch", node.name))
        cc = node.sysctls.get(CC_SYSCTL)
        if cc:
            need(f"tcp_{cc}", f"congestion control {cc}", ("node", node.name))
    return {module: f"{what[module]} ({_names(users[module])})" for module in users}
