"""FRR beside a router of a routing: ospf lab: zebra, ospfd and ospf6d in the router's namespace
(linklab/backends/linux/frrd.py), configured with the router's frr.conf (linklab/model/frr.py).
Started once the router's addresses are up; kept while its configuration stays the same, started
anew when it changes (`linklab set` of a link's cost). Whether every router learned a route to
every subnet is the build's `converge` step (linklab/backends/linux/build.py)."""

from __future__ import annotations

import json
from typing import Any

from linklab import runner
from linklab.backends.linux import daemons, frrd
from linklab.backends.linux.kinds.base import Build, Kind
from linklab.model import frr as frr_config
from linklab.model.resolved import Lab, Node


def dirs(lab_name: str, node: str, ns: str) -> frrd.FrrDirs:
    return frrd.FrrDirs(ns=ns, lab=lab_name, node=node)


class Frr(Kind):
    name = "frr"
    phase = "daemons"  # after the addresses and routes: ospfd needs its interfaces addressed

    def configure(self, b: Build, node: Node) -> None:
        d = dirs(b.lab.name, node.name, b.ns[node.name])
        config = frr_config.config(b.lab, node)
        mine = [r for r in b.previous_processes(node.name) if r["role"] in frr_config.DAEMONS]
        if mine and all(daemons.alive(r) for r in mine) and {r["role"] for r in mine} == set(frr_config.DAEMONS) \
                and all(r.get("config") == frrd.checksum(config) for r in mine):
            b.keep_processes(mine)
            return
        frrd.stop(mine)
        # Daemons an interrupted `up` started but never recorded live in this lab's own namespace
        # (its mark vouches for it): stopped, and started anew with this configuration.
        strays = [pid for daemon in frr_config.DAEMONS for pid in daemons.netns_pids_running(d.ns, daemon)]
        frrd.stop([daemons.record(node.name, "frr", pid) for pid in strays])
        b.say(f"  {node.name}: starting FRR (zebra, ospfd, ospf6d)")
        b.keep_processes(frrd.start(d, config))

    def inspect(self, lab: Lab, node: Node, ns: str) -> dict[str, Any]:
        """OSPF neighbours as the router's ospfd reports them (its learned routes are in the
        node's routes, proto ospf)."""
        d = dirs(lab.name, node.name, ns)
        res = runner.run(d.vtysh("show ip ospf neighbor json"), check=False, timeout=20)
        if not res.ok:
            return {"running": False, "error": (res.stderr or res.stdout).strip()[-300:]}
        return {"running": True, "neighbours": neighbours(res.stdout)}

    def remove(self, lab_name: str, node: str, ns: str, owned: dict[str, Any]) -> list[str]:
        mine = [r for r in owned.get("processes", []) if r["node"] == node and r["role"] in frr_config.DAEMONS]
        stopped = frrd.stop(mine)
        out = [f"{r['role']} {r['pid']} ({node})" for r in stopped]
        if frrd.remove_rundir(ns):
            out.append(f"frr {frrd.RUN_ROOT / ns}")
        return out


def neighbours(text: str) -> list[dict[str, str]]:
    """Pure: `show ip ospf neighbor json` -> each neighbour's router id, state, address and
    interface (FRR 8: {"neighbors": {router_id: [ {...}, ...]}})."""
    try:
        data = json.loads(text or "{}")
    except json.JSONDecodeError:
        return []
    out = []
    for rid, entries in sorted((data.get("neighbors") or {}).items()):
        for e in entries:
            out.append({"router_id": rid, "state": e.get("nbrState") or e.get("state", "?"),
                        "address": e.get("ifaceAddress") or e.get("address", "?"),
                        "interface": str(e.get("ifaceName", "?")).split(":")[0]})
    return out
