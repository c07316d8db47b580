"""A running lab as the code above the backend uses it: its resolved model, one backend, and
where each node's commands run.

Built once from the lab's state record and passed down (a sweep builds one and replaces it
with `with_record` after each reconfiguration), so a repetition neither re-reads the state
file, nor re-validates the model, nor asks for a backend again. Everything it holds comes from
the record, so a worker elsewhere (another process, another machine with the lab) builds the
same handle from the same record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from linklab.backends import get_backend
from linklab.backends.base import Backend
from linklab.model.resolved import Lab


@dataclass(frozen=True)
class LabHandle:
    lab: Lab
    backend: Backend
    netns: dict[str, str]  # node -> where its commands run (runner's netns=)
    record: dict[str, Any] = field(repr=False, compare=False, default_factory=dict)

    @classmethod
    def from_record(cls, record: dict[str, Any], backend: Backend | None = None) -> LabHandle:
        """The handle of the lab a state record describes (linklab/state.py); `backend`: reuse
        this one (the same lab after a reconfiguration) instead of asking the registry."""
        lab = Lab.model_validate(record["resolved"])
        backend = backend or get_backend(record.get("backend", "linux"))
        spaces = record.get("netns")
        if not isinstance(spaces, dict):  # a record from before the map was kept
            spaces = {n.name: backend.node_netns(lab, n.name) for n in lab.nodes}
        return cls(lab, backend, {str(k): str(v) for k, v in spaces.items()}, record)

    def with_record(self, record: dict[str, Any]) -> LabHandle:
        """The same lab, as a newer record of it says it is now (same backend)."""
        return LabHandle.from_record(record, self.backend)

    @property
    def name(self) -> str:
        return self.lab.name

    def ns(self, node: str) -> str:
        """Where `node`'s commands run."""
        try:
            return self.netns[node]
        except KeyError:
            raise KeyError(f"no node {node!r} in lab {self.lab.name} (nodes: {', '.join(self.netns)})") from None
