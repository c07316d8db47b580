"""linklab's optional parts (pyproject.toml's extras), and the one way a feature imports one.

A feature that needs an optional part calls load() (or require()) when it is first used: a part
that is not installed is then named with the command that installs it (EnvironmentProblem, exit
4), never an ImportError. `linklab doctor` lists which are present (present()).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from linklab import bundled, setup_groups
from linklab.errors import EnvironmentProblem


@dataclass(frozen=True)
class Extra:
    name: str  # as in pyproject.toml: pip install 'linklab[NAME]'
    what: str  # what it gives, for messages and `linklab doctor`
    modules: tuple[str, ...]  # what its features import: all present = the extra is installed


EXTRAS = {e.name: e for e in (
    Extra("sdn", "OpenFlow controllers of SDN labs (os-ken)", ("os_ken", "eventlet")),
    Extra("cluster", "sweeps across machines, `linklab sweep --cluster` (Ray)", ("ray",)),
    Extra("docs", "the documentation site, `make docs` (MkDocs)", ("mkdocs",)),
    Extra("test", "the test suite (pytest and its plug-ins)", ("pytest", "pytest_timeout", "xdist")),
)}


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent that fails to import, or sys.modules[name] = None
        return False


def missing(extra: str) -> list[str]:
    """The modules of `extra` this interpreter cannot import (looked up, not imported)."""
    return [m for m in EXTRAS[extra].modules if not _importable(m)]


def present(extra: str) -> bool:
    return not missing(extra)


def _requirements(extra: str) -> list[str]:
    """What the installed linklab's metadata lists for `extra` (its pyproject.toml entry)."""
    try:
        reqs = importlib.metadata.requires("linklab") or []
    except importlib.metadata.PackageNotFoundError:
        return []
    marker = f'extra == "{extra}"'
    return [r.split(";", 1)[0].strip() for r in reqs if marker in r.replace("'", '"')]


def install_command(extra: str) -> str:
    """The command that installs `extra` into the environment this linklab runs from."""
    top = bundled.checkout()
    if top is not None:  # its group (pinned by requirements.txt), or pip's own way
        group = setup_groups.fix_command(setup_groups.group_of_extra(extra), root=os.geteuid() == 0, checkout=top)
        return f"{group}, or: pip install -e '{top}[{extra}]'"
    reqs = _requirements(extra) or [f"linklab[{extra}]"]
    words = " ".join(shlex.quote(r) for r in reqs)
    if "pipx" in Path(sys.prefix).parts:
        return f"pipx inject linklab {words}"
    return f"{shlex.quote(sys.executable)} -m pip install {words}"


def problem(extra: str, feature: str, detail: str = "") -> EnvironmentProblem:
    part = EXTRAS[extra]
    gone = ", ".join(missing(extra)) or detail
    return EnvironmentProblem(f"{feature} needs linklab's optional part [{extra}]: {part.what}, which is not "
                              f"installed ({gone} cannot be imported)", hint=f"install it: {install_command(extra)}")


def require(extra: str, feature: str) -> None:
    """Exit 4 with the install command unless every module of `extra` can be imported."""
    if missing(extra):
        raise problem(extra, feature)


def load(module: str, extra: str, feature: str) -> ModuleType:
    """`module` (of `extra`) imported, or exit 4 naming the extra and its install command. Only
    the optional part's own absence is turned into that: any other import error stays itself."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        top = module.split(".")[0]
        if e.name is None or e.name.split(".")[0] not in {m.split(".")[0] for m in EXTRAS[extra].modules} | {top}:
            raise
        raise problem(extra, feature, detail=str(e)) from None
