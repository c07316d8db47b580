"""ovs_controller: an Open vSwitch switch is connected to its OpenFlow controller (or, with
connected: false, is not).

    - {id: controller, kind: ovs_controller, switch: s1}
"""

from __future__ import annotations

from typing import Any

from linklab.check.kinds.base import ABSENT, FAIL, PASS, Context, Judgement, Kind, Negatable, node_problem
from linklab.linux import ovs as ovsparse
from linklab.model.resolved import Lab


class Params(Negatable):
    switch: str
    connected: bool = True


class OvsController(Kind):
    name = "ovs_controller"
    Params = Params
    negation = ABSENT
    summary = "an Open vSwitch switch is connected to its controller"

    def problems(self, p: Params, lab: Lab) -> list[tuple[tuple, str]]:
        return node_problem(lab, p.switch, ("switch",), "ovs")

    def expected(self, p: Params, lab: Lab) -> str:
        return f"{p.switch} {'connected to' if p.connected else 'not connected to'} a controller"

    def observe(self, p: Params, ctx: Context) -> dict[str, Any]:
        res = ctx.switch_tool(p.switch, ["vsctl", "--columns=target,is_connected", "list", "controller"])
        return {"stdout": res.stdout, "stderr": res.stderr, "returncode": res.returncode}

    def judge(self, p: Params, raw: dict[str, Any], lab: Lab) -> Judgement:
        ctl = parse_controllers(raw.get("stdout", ""))
        if raw.get("returncode"):
            return Judgement(FAIL, f"OVS did not answer: {raw.get('stderr', '').strip()[:200]}")
        connected = any(c.get("is_connected") for c in ctl)
        shown = ", ".join(f"{c.get('target')} {'connected' if c.get('is_connected') else 'not connected'}"
                          for c in ctl) or "no controller set"
        return Judgement(PASS if connected == p.connected else FAIL, shown, values={"controllers": ctl})


def parse_controllers(text: str) -> list[dict[str, Any]]:
    """`ovs-vsctl --columns=target,is_connected list controller` -> [{target, is_connected}]."""
    out: list[dict[str, Any]] = []
    cur: dict[str, Any] = {}
    for line in text.splitlines():
        if not line.strip():
            if cur:
                out.append(cur)
            cur = {}
            continue
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip().strip('"')
        if key == "is_connected":
            cur[key] = ovsparse.controller_connected(value)
        elif key:
            cur[key] = value
    if cur:
        out.append(cur)
    return out
