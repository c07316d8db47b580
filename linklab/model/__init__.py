"""Topology model: load (validate) -> override -> resolve. Backend-independent."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from linklab.model import variables
from linklab.model.checks import check_topology
from linklab.model.loader import load_model, read_yaml
from linklab.model.overrides import apply_overrides
from linklab.model.resolve import Context, resolve
from linklab.model.topology import Defaults, Topology, absolute_bind

__all__ = ["Context", "Topology", "load_topology", "resolve", "topology_sha256"]


def load_topology(path: Path | str, overrides: list[tuple[str, Any]] | None = None,
                  name: str | None = None, seed: str | None = None,
                  base_dir: Path | str | None = None) -> Topology:
    """Validate a topology file (with optional overrides and lab-name change); all problems at once.
    Its `vars:` take their values for `seed` (None: their defaults) before the overrides apply.
    Relative paths in it (container binds) are taken from `base_dir`, by default the file's own
    directory, as containerlab takes them: the loaded topology has absolute ones."""
    data, _ = read_yaml(Path(path))
    declared, problems = variables.declared(data)
    data, unknown = variables.substitute(data, variables.values(declared, seed), skip=("vars", "checks"))
    problems += unknown
    if overrides:
        data = apply_overrides(data, overrides)
    if name:
        data = {**data, "name": name}
    links = data.get("links")
    total = len(links) if isinstance(links, list) else 0
    base = Path(base_dir) if base_dir is not None else Path(path).parent.absolute()
    topo = load_model(path, Topology, data=data,
                      checks=lambda t, idx: problems + check_topology(t, idx, complete=len(idx or t.links) == total)
                      + _missing_files(t, base),
                      itemwise="links", lenient=_lenient_topology)
    return _absolute_paths(topo, base)


def _absolute_paths(t: Topology, base: Path) -> Topology:
    """Container binds and routers' frr_config files taken from `base`: the loaded topology has
    absolute ones."""
    hosts = {name: h.model_copy(update={"binds": [absolute_bind(b, base) for b in h.binds]}) if h and h.binds else h
             for name, h in t.hosts.items()}
    routers = {name: r.model_copy(update={"frr_config": str(_from(base, r.frr_config))}) if r and r.frr_config else r
               for name, r in t.routers.items()}
    return t.model_copy(update={"hosts": hosts, "routers": routers}) if (hosts, routers) != (t.hosts, t.routers) else t


def _from(base: Path, written: str) -> Path:
    path = Path(written).expanduser()
    return path if path.is_absolute() else base / path


def _shown(path: Path) -> str:
    """A path as a user finds it: relative to the working directory when it is under it."""
    rel = os.path.relpath(path)
    return str(path) if rel.startswith("..") else rel


def _missing_files(t: Topology, base: Path) -> list[tuple[tuple, str]]:
    """A router's frr_config that is not a readable file: found on loading, not mid-build."""
    out = []
    for name, r in (t.routers or {}).items():
        if r is not None and r.frr_config and not _from(base, r.frr_config).is_file():
            out.append((("routers", name, "frr_config"),
                        f"no such file {_shown(_from(base, r.frr_config))!r} (a path relative to the topology file)"))
    return out


def _lenient_topology(data: dict, links: list) -> Topology | None:
    """Node names (and kinds) from a file whose head did not validate: enough for cross-checks."""
    def names(key):
        section = data.get(key)
        return {str(k): None for k in section} if isinstance(section, dict) else {}
    try:
        mtu = Defaults.model_validate(data.get("defaults") or {}).mtu
    except Exception:
        mtu = 1500
    return Topology.model_construct(name=str(data.get("name", "?")), hosts=names("hosts"),
                                    switches=names("switches"), routers=names("routers"), links=links,
                                    defaults=Defaults(mtu=mtu), routing=None)


def topology_sha256(path: Path | str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
