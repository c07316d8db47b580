"""What a tool kind is (linklab/sweep/kinds/__init__.py): one object per sweep, holding the
servers it keeps up from point to point."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from linklab.handle import LabHandle

if TYPE_CHECKING:
    from linklab.sweep.experiment import Event
    from linklab.sweep.plan import PointPlan


class Kind:
    name: ClassVar[str]
    # Whether the sender's TCP sockets are the tool's ports (tcp_info is read from them): iperf3's.
    tcp_ports: ClassVar[bool] = False
    # The processes whose CPU the CPU probe reports per side (linklab/measure/probes/cpu.py).
    comms: ClassVar[tuple[str, ...]] = ()

    def __init__(self, workdir: Path, tool: Any = None):
        self.workdir = workdir  # the experiment's directory: where a program of the user's own runs
        self.exp_tool = tool  # the experiment's tool settings (each point's own come with its plan)

    def clean(self, handle: LabHandle) -> list[str]:
        """Stop what an interrupted sweep of this kind left running in the lab; what was stopped."""
        return []

    def serve(self, handle: LabHandle, plan: PointPlan, events: list[Event]) -> None:
        """The point's servers up (kept from the previous point when it wants the same)."""

    def traffic(self, handle: LabHandle, plan: PointPlan, omit: float, events: list[Event]) -> Any:
        """One repetition's traffic: prepare(rep), start(rep), wait(rep), row(rep)."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop every server this kind started."""

    def close(self) -> None:
        """The sweep is over: stop everything, remove what the kind kept aside."""
        self.stop()

    def columns(self, plan: PointPlan) -> dict[str, Any]:
        """The tool settings a point asked for, stored as `tool.<name>` beside what was measured."""
        return {"kind": self.name}
