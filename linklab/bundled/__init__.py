"""The files linklab ships beside its code, and the one way to find them.

topologies/, experiments/, exercises/, controllers/, schemas/ and baselines/ are the checkout's
top-level folders; an installed wheel carries them as package data here, under linklab/bundled/ (setup.py
maps each folder). root() is whichever this linklab runs from. Pure look-ups: nothing is written.
"""

from __future__ import annotations

import os
from pathlib import Path

FOLDERS = ("topologies", "experiments", "exercises", "controllers", "schemas", "baselines")
# What a name given on the command line may stand for, per folder: the file it names there.
YAML_FOLDERS = ("topologies", "experiments")

_HERE = Path(__file__).resolve().parent


def checkout() -> Path | None:
    """The checkout this linklab runs from (its top level), or None when it is installed (a
    wheel, pipx): then only the bundled files are here, no Makefile, no .linklab/ beside them."""
    top = _HERE.parents[1]
    return top if (top / "pyproject.toml").is_file() and (top / "topologies").is_dir() else None


def root() -> Path:
    """The directory holding the bundled folders: the installed package data, else the checkout."""
    return _HERE if (_HERE / "topologies").is_dir() else _HERE.parents[1]


def folder(name: str) -> Path:
    if name not in FOLDERS:
        raise ValueError(f"unknown bundled folder {name!r} (valid: {', '.join(FOLDERS)})")
    return root() / name


def files() -> list[Path]:
    """Every bundled file, relative to root(), in a stable order (bytecode caches left out)."""
    return sorted(p.relative_to(root()) for name in FOLDERS for p in folder(name).rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.name != "__init__.py")


def names(kind: str) -> list[str]:
    """The names a command accepts for kind (topologies, experiments, exercises)."""
    d = folder(kind)
    if kind == "exercises":
        return sorted(p.parent.name for p in d.glob("*/exercise.yaml"))
    return sorted(p.stem for p in d.glob("*.yaml") if not p.name.endswith(".reference.yaml"))


def _shown(path: Path) -> str:
    """A path as a user would write it from here: relative when under the working directory."""
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else str(path)


def locate(arg: str, kinds: tuple[str, ...]) -> str:
    """A file argument as the command should read it: `arg` itself when it exists; else the bundled
    file it names (a name such as e1_bonding_mtu, or a path such as topologies/bond2.yaml that is
    not here but is bundled). A bare name that is neither raises LookupError listing the bundled
    choices; any other path is returned unchanged, for the reader to report as missing."""
    if Path(arg).exists():
        return arg
    base = root()
    candidates = [base / arg]
    for kind in kinds:
        if kind == "exercises":
            candidates.append(base / kind / arg / "checks.yaml")
        else:
            candidates += [base / kind / arg, base / kind / f"{arg}.yaml"]
    found = [c for c in candidates if c.is_file()]
    if found:
        return _shown(found[0])
    if "/" not in arg and not arg.endswith((".yaml", ".yml")):
        choices = "; ".join(f"{kind}: {', '.join(names(kind)) or 'none'}" for kind in kinds)
        raise LookupError(f"{arg!r} is no file here and names nothing bundled ({choices})")
    return arg


def argtype(*kinds: str):
    """An argparse `type=` for a file argument that may name a bundled one of `kinds`: an unknown
    name is argparse's usage error (exit 2), listing the bundled choices. argparse applies it to a
    string default too, so a default such as topologies/bond2.yaml is found outside the checkout."""
    import argparse

    def convert(arg: str) -> str:
        try:
            return locate(arg, kinds)
        except LookupError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    convert.__name__ = " or ".join(k.rstrip("s") for k in kinds)  # argparse names it in some errors
    return convert
