"""Captured real output of the tools the check kinds run (tests/data/tools/), and a kind's
parameters as a checks file would give them: what the check kinds' unit tests judge."""

from __future__ import annotations

from pathlib import Path

from linklab.check.kinds import REGISTRY

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / "tests" / "data" / "tools"


def tool(name: str) -> str:
    """A captured output's text ("" when it was empty, so not stored)."""
    p = TOOLS / name
    return p.read_text() if p.exists() else ""


def out(name: str) -> dict[str, str]:
    """A captured run's stdout and stderr, as the runner hands them to a kind."""
    return {"stdout": tool(f"{name}.txt"), "stderr": tool(f"{name}.stderr.txt")}


def params(kind: str, **kw):
    return REGISTRY[kind].Params.model_validate({"id": "t", "kind": kind, **kw})
