"""The one way the host tier runs linklab's CLI as a user does: a new process (`python -m
linklab`), from the checkout, output captured, wide enough that no line is folded."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def linklab(*args: str, timeout: float = 600, state_dir: Path | None = None) -> subprocess.CompletedProcess:
    """`linklab ARGS...`; `state_dir`: a LINKLAB_STATE_DIR of the caller's own (its labs and lab VM
    apart from any other test's)."""
    env = {**os.environ, "COLUMNS": "200"}
    if state_dir is not None:
        env["LINKLAB_STATE_DIR"] = str(state_dir)
    return subprocess.run([sys.executable, "-m", "linklab", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=env)
