"""containerlab topology -> linklab topology: nodes, links, link MTU and link addresses.

Maps: `kind: linux` nodes -> hosts (with an `image` of their own: container nodes, with their
cmd, env and binds); `bridge` and `ovs-bridge` -> switches (bridge / ovs);
links given as endpoint pairs (short form, or `type: veth` with endpoint objects) -> links,
with their interface names, MTU (containerlab's default 9500 when a link names none) and
`ipv4`/`ipv6` addresses. Everything else (other kinds and their links, images, exec scripts,
binds, other link types, settings linklab has no field for) is listed as not imported: on stderr
by the CLI and as comments at the top of the YAML written — never silently dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from linklab.errors import UsageError
from linklab.model.topology import IFNAME_RE, NAME_RE

CLAB_DEFAULT_MTU = 9500  # containerlab/constants DefaultLinkMTU
HOST_KINDS = {"linux"}
SWITCH_KINDS = {"bridge": "bridge", "ovs-bridge": "ovs"}
NODE_KEYS_MAPPED = {"kind"}
CONTAINER_KEYS = ("image", "cmd", "env", "binds")  # a linux node's that linklab's container nodes take as they are


@dataclass
class Imported:
    topology: dict[str, Any]
    not_imported: list[str] = field(default_factory=list)
    renamed: dict[str, str] = field(default_factory=dict)

    def yaml_text(self, source: str) -> str:
        lines = [f"# Imported from containerlab topology {source} by `linklab import containerlab`."]
        if self.renamed:
            lines.append("# Renamed (linklab names: a-z, 0-9, _; at most 12): "
                         + ", ".join(f"{a} -> {b}" for a, b in self.renamed.items()))
        if self.not_imported:
            lines.append("# Not imported:")
            lines += [f"#   - {x}" for x in self.not_imported]
        return "\n".join(lines) + "\n" + yaml.safe_dump(self.topology, sort_keys=False, width=120)


def _linklab_name(name: str, taken: set[str]) -> str:
    base = re.sub(r"[^a-z0-9_]", "_", name.lower())
    if not base or not base[0].isalpha():
        base = "n" + base
    base = base[:12]
    cand, k = base, 1
    while cand in taken:
        suffix = str(k)
        cand, k = base[:12 - len(suffix)] + suffix, k + 1
    return cand


def _kind(name: str, spec: dict, topo: dict) -> str | None:
    if spec.get("kind"):
        return spec["kind"]
    group = spec.get("group")
    if group and (topo.get("groups") or {}).get(group, {}).get("kind"):
        return topo["groups"][group]["kind"]
    return (topo.get("defaults") or {}).get("kind")


def _endpoints(link: dict) -> list[tuple[str, str]] | None:
    eps = link.get("endpoints")
    if not isinstance(eps, list) or len(eps) != 2:
        return None
    out = []
    for ep in eps:
        if isinstance(ep, str) and ":" in ep:
            node, _, ifname = ep.partition(":")
            out.append((node, ifname))
        elif isinstance(ep, dict) and "node" in ep and "interface" in ep:
            out.append((str(ep["node"]), str(ep["interface"])))
        else:
            return None
    return out


def import_clab(text: str, source: str = "<clab>") -> Imported:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise UsageError(f"{source}: not YAML: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("topology"), dict):
        raise UsageError(f"{source}: not a containerlab topology (no `topology:` mapping)")
    topo = data["topology"]
    skipped: list[str] = []
    for key in sorted(set(data) - {"name", "topology"}):
        skipped.append(f"top-level `{key}`")
    for key in sorted(set(topo) - {"nodes", "links", "kinds", "defaults", "groups"}):
        skipped.append(f"topology.{key}")
    for section in ("kinds", "defaults", "groups"):
        if topo.get(section):
            skipped.append(f"topology.{section} (images and settings: linklab runs no containers)")
    taken: set[str] = set()
    renamed: dict[str, str] = {}
    names: dict[str, str] = {}
    hosts: dict[str, Any] = {}
    switches: dict[str, Any] = {}
    for name, spec in (topo.get("nodes") or {}).items():
        spec = spec or {}
        kind = _kind(name, spec, topo)
        if kind not in HOST_KINDS and kind not in SWITCH_KINDS:
            skipped.append(f"node {name} (kind {kind or 'unset'}: linklab maps only linux, bridge and ovs-bridge)")
            continue
        new = name if NAME_RE.match(name) and name not in taken else _linklab_name(name, taken)
        if new != name:
            renamed[name] = new
        taken.add(new)
        names[name] = new
        mapped = NODE_KEYS_MAPPED | {"sysctls"}
        if kind in HOST_KINDS:
            hosts[new] = {}
            sysctls = {k: v for k, v in (spec.get("sysctls") or {}).items()}
            if sysctls:
                hosts[new]["sysctls"] = sysctls
            if spec.get("image"):  # a node of its own image: a container node (kinds/defaults images are not)
                hosts[new] = {"kind": "container", **hosts[new],
                              **{k: spec[k] for k in CONTAINER_KEYS if spec.get(k)}}
                mapped |= set(CONTAINER_KEYS)
        else:
            switches[new] = {"kind": SWITCH_KINDS[kind]}
        for key in sorted(set(spec) - mapped):
            what = f"{len(spec[key])} commands" if key == "exec" and isinstance(spec[key], list) else "not mapped"
            skipped.append(f"node {name}: {key} ({what})")
    links: list[dict[str, Any]] = []
    for i, link in enumerate(topo.get("links") or []):
        link = link or {}
        ltype = link.get("type", "veth")
        eps = _endpoints(link) if ltype == "veth" else None
        if eps is None:
            skipped.append(f"links[{i}] (type {ltype}: linklab maps veth links between two nodes)")
            continue
        missing = [n for n, _ in eps if n not in names]
        if missing:
            skipped.append(f"links[{i}] {eps[0][0]}:{eps[0][1]} -- {eps[1][0]}:{eps[1][1]} "
                           f"(node {', '.join(missing)} not imported)")
            continue
        endpoints = []
        for node, ifname in eps:
            if IFNAME_RE.match(ifname):
                endpoints.append(f"{names[node]}:{ifname}")
            else:
                endpoints.append(names[node])
                skipped.append(f"links[{i}]: interface name {node}:{ifname} (not a Linux name; linklab picks one)")
        out: dict[str, Any] = {"endpoints": endpoints, "mtu": int(link.get("mtu") or CLAB_DEFAULT_MTU)}
        addresses: dict[str, Any] = {}
        for fam in ("ipv4", "ipv6"):
            values = link.get(fam) or []
            for (node, _), addr in zip(eps, values):
                if addr and names[node] in hosts:
                    addresses.setdefault(names[node], {})[fam] = addr
        for j, ep in enumerate(link.get("endpoints")):
            if isinstance(ep, dict):
                for fam in ("ipv4", "ipv6"):
                    if ep.get(fam) and names[eps[j][0]] in hosts:
                        addresses.setdefault(names[eps[j][0]], {})[fam] = ep[fam]
                for key in sorted(set(ep) - {"node", "interface", "ipv4", "ipv6"}):
                    skipped.append(f"links[{i}].endpoints[{j}].{key}")
        if addresses:
            out["addresses"] = addresses
            if not any("ipv6" in a for a in addresses.values()):
                # containerlab gave IPv4 only: its lab has no IPv6 on this link, so neither does ours
                out["ipv6"] = False
        for key in sorted(set(link) - {"endpoints", "mtu", "type", "ipv4", "ipv6"}):
            skipped.append(f"links[{i}].{key}")
        links.append(out)
    name = _linklab_name(str(data.get("name") or "clab"), set())
    if name != data.get("name"):
        renamed[str(data.get("name"))] = name
    topology: dict[str, Any] = {"name": name, "description": f"imported from containerlab {Path(source).name}",
                                "hosts": hosts}
    if switches:
        topology["switches"] = switches
    topology["links"] = links
    return Imported(topology, skipped, renamed)
