"""`linklab init DIR`: the bundled topologies, experiments, exercises, schemas and baselines (each
experiment's stored quick run: what `linklab compare` and `ab`'s A/A spread read, from
baselines/ where they run), and a Makefile that calls `linklab`, laid out in a directory of the
user's own, so the README's commands work there as in the checkout. Existing files are left alone (exit 2, each named) unless --force.

The controller apps are not copied: linklab always runs its bundled ones (linklab/bundled).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from linklab import bundled
from linklab.errors import UsageError
from linklab.fsutil import write_atomic

FOLDERS = ("topologies", "experiments", "exercises", "schemas", "baselines")
SHOWN_EXISTING = 10  # a refusal names this many existing files, then how many more

MAKEFILE = """\
# linklab in a directory of your own (written by `linklab init`): the README's commands, with
# `linklab` from PATH (pip or pipx installed it). Names work too: `linklab sweep e1_bonding_mtu`.
LINKLAB ?= linklab
TOPO ?= topologies/bond2.yaml
EXP ?= experiments/e1_bonding_mtu.yaml
SWEEP_ARGS ?= --quick
CHECKS ?= exercises/mtu_path/checks.yaml

.PHONY: help doctor validate lab-up status sweep report check lab-down clean

help:
\t@echo "make doctor            what this machine offers, what is missing and how to fix it"
\t@echo "make validate          check every topology and experiment file here"
\t@echo "make lab-up [TOPO=...] build a lab (default $(TOPO)); in a VM if this kernel lacks bonding/netem"
\t@echo "make status            show the lab as the kernel reports it"
\t@echo "make sweep [EXP=...]   run an experiment (default: $(EXP) $(SWEEP_ARGS)); results under results/"
\t@echo "make report [RUN=...]  report.html + report.md + figures for the newest run (or RUN)"
\t@echo "make check [CHECKS=...] coursework checks against the running lab"
\t@echo "make lab-down          remove everything the lab created"
\t@echo "make clean             remove what crashed labs left behind"

doctor:
\t$(LINKLAB) doctor

validate:
\t$(LINKLAB) validate topologies/*.yaml $(filter-out %.reference.yaml,$(wildcard experiments/*.yaml))

lab-up:
\t$(LINKLAB) up $(TOPO)

status:
\t$(LINKLAB) status

sweep:
\t$(LINKLAB) sweep $(EXP) $(SWEEP_ARGS)

report:
\t$(LINKLAB) report $(RUN)

check:
\t$(LINKLAB) check $(CHECKS)

lab-down:
\t$(LINKLAB) down

clean:
\t$(LINKLAB) clean
"""


def contents() -> dict[Path, bytes]:
    """What init writes, by path relative to DIR: the bundled folders' files, and the Makefile."""
    out = {rel: (bundled.root() / rel).read_bytes() for rel in bundled.files() if rel.parts[0] in FOLDERS}
    out[Path("Makefile")] = MAKEFILE.encode()
    return out


def init(target: Path, *, force: bool = False, say: Callable[[str], None] = print) -> list[Path]:
    """Write contents() under target; returns the paths written. Refuses (UsageError, nothing
    written) when any exists and not force."""
    if target.exists() and not target.is_dir():
        raise UsageError(f"{target} exists and is not a directory")
    files = contents()
    existing = sorted(rel for rel in files if (target / rel).exists() or (target / rel).is_symlink())
    if existing and not force:
        shown = [str(target / rel) for rel in existing[:SHOWN_EXISTING]]
        more = f" and {len(existing) - SHOWN_EXISTING} more" if len(existing) > SHOWN_EXISTING else ""
        raise UsageError(f"{target}: {len(existing)} file{'s' if len(existing) != 1 else ''} would be overwritten: "
                         + ", ".join(shown) + more + "; nothing was written",
                         hint=f"`linklab init --force {target}` overwrites them with the bundled ones")
    written = []
    for rel, data in sorted(files.items()):
        write_atomic(target / rel, data)
        written.append(target / rel)
    replaced = f", {len(existing)} of them replaced" if existing else ""
    say(f"linklab: init: {len(written)} files in {target}{replaced} ({', '.join(FOLDERS)}, Makefile)")
    say(f"  next: cd {target} && linklab doctor && make sweep")
    return written
