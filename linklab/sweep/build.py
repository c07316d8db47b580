"""An experiment's `build:` steps: commands run once before a sweep measures anything, in the
experiment's directory (under `linklab ab`, in each arm's revision's tree, so each arm measures
its own revision's program). Each step's output is kept (build/step-<k>.log in the run); a step
that fails stops the sweep with its output's tail (BuildFailed, exit 1), before any lab changes.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from linklab import fsutil, procs, runner
from linklab.errors import LinklabError
from linklab.measure.command import split
from linklab.ready import tail

STEP_TIMEOUT_S = 1800.0  # a build step that runs longer is killed and fails the run


class BuildFailed(LinklabError):
    """A build step exited non-zero (or could not start, or ran past its timeout)."""

    exit_code = 1


def run(steps: Sequence[str | list[str]], workdir: Path, logs: Path, say=print,
        timeout: float = STEP_TIMEOUT_S) -> list[dict]:
    """Run every step in order in `workdir`; their logs under `logs`; what each did (argv, exit,
    seconds). Raises BuildFailed at the first that fails."""
    done: list[dict] = []
    for i, step in enumerate(steps, 1):
        argv = split(step)
        say(f"linklab: build step {i}/{len(steps)}: {' '.join(argv)} (in {workdir})")
        t0 = time.monotonic()
        try:
            proc = runner.start(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=workdir)
        except OSError as e:
            raise BuildFailed(f"build step {i} ({' '.join(argv)}) could not start: {e}",
                              hint=f"the steps run in {workdir}, without a shell") from None
        out, _ = procs.communicate(proc, timeout=timeout)
        text = out.decode(errors="replace")
        seconds = round(time.monotonic() - t0, 3)
        logs.mkdir(parents=True, exist_ok=True)
        fsutil.write_atomic(logs / f"step-{i}.log", text)
        done.append({"argv": argv, "exit": proc.returncode, "seconds": seconds})
        if proc.returncode != 0:
            why = f"ran past {timeout:g} s" if proc.returncode in (-9, -15) else f"exited {proc.returncode}"
            raise BuildFailed(f"build step {i} ({' '.join(argv)}) {why}; its last lines:\n{tail(text) or '(nothing)'}",
                              hint=f"its whole output: {logs / f'step-{i}.log'}")
    return done
