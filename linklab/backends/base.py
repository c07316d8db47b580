"""What a backend is: something that realizes a resolved Lab, reads it back and tears it down.

Backends are registered explicitly in linklab/backends/__init__.py. The model knows nothing of
them, so a topology can be realized by another backend (Mininet, containerlab) or exported.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection
from typing import Any

from linklab.errors import LinklabError
from linklab.model.resolved import Lab


class NodeCommandsFailed(LinklabError):
    """A node's `exec:` command failed: the lab is built, but not every command took effect.
    `owned` is what the lab owns now, with the commands that did run: the caller records it (the
    lab stays `building`, as after any failed `up`), so `up` again runs only what is left."""

    def __init__(self, message: str, owned: dict[str, Any], hint: str | None = None):
        super().__init__(message, hint=hint)
        self.owned = owned


class Backend(ABC):
    name: str = ""

    @abstractmethod
    def problems(self, lab: Lab) -> list[str]:
        """What this backend cannot build in `lab`, on this kernel (empty: buildable)."""

    @abstractmethod
    def kernel_needs(self, lab: Lab) -> dict[str, str]:
        """The kernel modules building `lab` uses -> what in the lab needs each ("bonds (link
        h1-s1)"): where the lab can run (linklab/placement.py). Pure: looks at no kernel."""

    def machine_wide(self, labs: list[Lab]) -> dict[str, str]:
        """The settings these labs ask for that this kernel keeps for the whole machine, not per
        lab (a sysctl that is not per network namespace) -> who asks for it ("hosts.h1.sysctls"):
        a lab with any runs in the lab VM, a kernel of its own (linklab/placement.py). Looks at
        this kernel."""
        return {}

    def claim(self, lab: Lab, owned: dict[str, Any]) -> dict[str, Any]:
        """Check, before anything is recorded or changed, that what `lab` needs is free or already
        this lab's (raise StateError otherwise); returns `owned` extended with what apply may
        create, which the caller records first so a crash mid-apply leaves nothing unlisted."""
        return owned

    @abstractmethod
    def apply(self, lab: Lab, owned: dict[str, Any], say=print, restart: Collection[tuple[str, str]] = ()) -> dict[str, Any]:
        """Make the kernel match `lab`, idempotently, changing only what differs, then run the
        nodes' `exec:` commands still to run and start their services that do not run
        (NodeCommandsFailed when one fails or does not become ready). `restart`: (node, service)
        pairs started again even though they run (`linklab set --restart`).

        `owned` is what the previous apply recorded (empty on first up); returns what the lab
        owns now, which the caller stores in the state file.
        """

    @abstractmethod
    def destroy(self, lab_name: str, owned: dict[str, Any], say=print) -> list[str]:
        """Remove exactly what `owned` lists; returns what was removed."""

    @abstractmethod
    def orphans(self, lab_name: str | None, lab_id: str | None = None, home: str | None = None) -> list[str]:
        """Objects carrying this lab's ownership mark (any lab's, if None), of that id and
        checkout when given."""

    def marked(self) -> dict[str, Any]:
        """Every object carrying a linklab mark -> its mark (lab, id, home): what `clean` judges."""
        return {}

    @abstractmethod
    def remove_orphans(self, names: list[str], say=print) -> list[str]:
        ...

    def release_idle(self) -> list[str]:
        """Stop helpers the backend started that nothing uses any more (a Docker engine with no
        container left); returns what was stopped. `clean` calls it."""
        return []

    @abstractmethod
    def inspect(self, lab: Lab) -> dict[str, Any]:
        """Live state read back from the kernel (not from the state file)."""

    @abstractmethod
    def interfaces(self, lab: Lab, nodes: Collection[str]) -> dict[str, list[dict[str, Any]]]:
        """The interfaces of these nodes, read back live as `inspect` shows them (a node whose
        namespace is gone is left out), without the rest of `inspect` (a switch's tables)."""

    @abstractmethod
    def exec_argv(self, lab: Lab, node: str, argv: list[str]) -> list[str]:
        """argv that runs `argv` on `node`."""

    # ---- reaching a node, for the sweep and status (never through backend internals) --------
    @abstractmethod
    def node_netns(self, lab: Lab, node: str) -> str | None:
        """Where commands for `node` run: the value to pass as runner's `netns=`."""

    def services(self, lab: Lab, owned: dict[str, Any]) -> list[dict[str, Any]]:
        """The nodes' background services as they are now (`status`): node, name, run, pid,
        state (running, exited, not started), ready, ready_s, log."""
        return []

    @abstractmethod
    def node_pids(self, lab: Lab, node: str) -> list[int]:
        """Processes running on `node` (e.g. stale iperf3 servers of a killed sweep)."""

    def routes(self, lab: Lab, node: str) -> list[dict[str, Any]]:
        """`node`'s main routing table read back live, as `inspect` shows it (each route's `to`,
        its `nexthops` [{via, dev}] and `proto`); empty when the node is gone."""
        return (self.inspect(lab).get("nodes", {}).get(node) or {}).get("routes", [])

    @abstractmethod
    def read_sysctls(self, lab: Lab, node: str, keys: list[str]) -> dict[str, str | None]:
        """Current values of `keys` on `node` (None: absent there)."""

    @abstractmethod
    def switch_tool_argv(self, lab: Lab, node: str, argv: list[str]) -> list[str]:
        """argv running a switch tool (ovs-ofctl/vsctl/appctl) against `node`'s own switch."""

    def switch_counters(self, lab: Lab) -> dict[str, Any]:
        """Per-switch counters (ports, flows, packet-ins, datapath) for a measurement's evidence."""
        return {"switches": {}}

    def reset_forwarding(self, lab: Lab) -> None:
        """Forget learned forwarding (controller-installed flows, neighbour caches)."""

    @abstractmethod
    def set_member_state(self, lab: Lab, link: str, member: int, up: bool) -> str:
        """Take a bond member down or up, as a pulled or replugged cable would (a fault on an
        experiment's timeline); returns what was done, for the event log."""


    @abstractmethod
    def set_link_state(self, lab: Lab, link: str, up: bool) -> str:
        """Take a link down or up, every member of a bond at once, as pulled or replugged cables
        would (a fault on an experiment's timeline); returns what was done, for the event log."""

    @abstractmethod
    def set_active_member(self, lab: Lab, link: str, member: int) -> str:
        """Make a bond's member-th member its active one (an experiment's timeline event)."""

    @abstractmethod
    def change_impairments(self, old: Lab, new: Lab) -> list[str]:
        """Bring the running lab's queues and impairments from `old` to `new` (two resolutions
        of the same lab differing only in impairments) without rebuilding it, mid-window;
        returns what was done, for the event log."""


def bond_summary(iface: dict[str, Any], members: list[dict[str, Any]]) -> dict[str, Any]:
    """For pre-flight and status: members up, LACP aggregated (all members in one aggregator,
    partner MAC set, and every member distributing). Pure, on `Backend.inspect` output (the
    format every backend returns).

    Distributing is a member's bonding state "active": the kernel enables a port for transmit
    only once its mux reaches COLLECTING_DISTRIBUTING, ~2 s after it joined the aggregator
    (AD_AGGREGATE_WAIT_TIME; the times: bench/README.md#bonds-and-switches). A flow started in
    between runs on one member, or none, then moves when the second member starts distributing."""
    b = iface.get("bond") or {}
    up = [m["ifname"] for m in members if (m.get("bond_member") or {}).get("mii") == "up"]
    out = {"mode": b.get("mode"), "members": len(members), "members_up": len(up)}
    if b.get("mode") == "802.3ad":
        ad = b.get("ad_info") or {}
        aggs = {(m.get("bond_member") or {}).get("aggregator") for m in members}
        partner = ad.get("partner_mac")
        out["aggregator"] = ad.get("aggregator")
        out["partner_mac"] = partner
        out["members_distributing"] = sum(1 for m in members if (m.get("bond_member") or {}).get("state") == "active")
        out["lacp_aggregated"] = (len(aggs) == 1 and ad.get("aggregator") in aggs and ad.get("num_ports") == len(members)
                                  and partner not in (None, "00:00:00:00:00:00")
                                  and out["members_distributing"] == len(members))
    return out
