"""containerlab topology -> linklab topology: nodes, links, link MTU and link addresses.

Maps: `kind: linux` nodes -> hosts (with an `image` of their own: container nodes, with their
cmd, env and binds, a relative bind kept working from where the result is saved), with their
`exec:` commands (merged from defaults, kind, group and node as containerlab merges them);
`bridge` and `ovs-bridge` -> switches (bridge / ovs), each
node's kind resolved as containerlab does (the node's own, else its group's, else the defaults';
the group is the node's or the defaults'); links given as endpoint pairs (short form, or
`type: veth` with endpoint objects) -> links, with their interface names, MTU (containerlab's
default 9500 when a link names none) and `ipv4`/`ipv6` addresses. Everything else (other kinds
and their links, images from kinds or defaults, exec on bridges, other link types, settings linklab has no field
for) is listed as not imported: on stderr by the CLI (also when the result does not validate)
and as comments at the top of the YAML written — never silently dropped.

Names are shortened so that every exporter's derived names stay valid: hosts to linklab's 12
characters, switches to 9 (Mininet names a switch port `<switch>-eth<N>`, at most 15). The
source map kept beside the result points linklab's problems back into the containerlab file.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from linklab.errors import UsageError, ValidationFailed
from linklab.model.loader import LineMap
from linklab.model.topology import IFNAME_RE, NAME_RE

CLAB_DEFAULT_MTU = 9500  # containerlab/constants DefaultLinkMTU
HOST_KINDS = {"linux"}
SWITCH_KINDS = {"bridge": "bridge", "ovs-bridge": "ovs"}
NODE_KEYS_MAPPED = {"kind", "group", "sysctls", "exec"}
CONTAINER_KEYS = ("image", "cmd", "env")  # a linux node's that linklab's container nodes take as they are
MAGIC = re.compile(r"__clab[A-Za-z]*__")  # containerlab's own variables (its lab directory, the node's name)
MAX_IFNAME = 15  # Linux
HOST_NAME_MAX = 12  # linklab's NAME_RE
SWITCH_NAME_MAX = MAX_IFNAME - len("-eth99")  # Mininet's switch ports: <switch>-eth<N>
TEMPLATE = re.compile(r"\{\{.*?\}\}")


@dataclass
class SourceMap:
    """Where the parts of an imported topology came from in the containerlab file."""

    source: str
    lines: LineMap
    nodes: dict[str, str] = field(default_factory=dict)  # linklab name -> containerlab name
    links: list[int] = field(default_factory=list)  # linklab links[i] -> containerlab links[j]

    def locate(self, problem: str) -> str:
        """A linklab problem ("links[1].mtu (line 9): ...") told in the containerlab file's terms."""
        m = re.match(r"^(?P<path>[^\s:]+)(?: \(line \d+\))?: (?P<msg>.*)$", problem, re.S)
        if not m:
            return problem
        loc, where = self._loc(m.group("path"))
        line = self.lines.line(loc)
        return f"{where}{f' (line {line})' if line else ''}: {m.group('msg')}"

    def _loc(self, path: str) -> tuple[tuple, str]:
        parts = path.split(".")
        head = parts[0]
        if (m := re.match(r"^links\[(\d+)\]$", head)) and int(m.group(1)) < len(self.links):
            j = self.links[int(m.group(1))]
            rest = ".".join(parts[1:])
            return ("topology", "links", j), f"links[{j}]" + (f" ({rest})" if rest else "")
        if head in ("hosts", "switches"):
            if len(parts) > 1 and parts[1] in self.nodes:
                name = self.nodes[parts[1]]
                return ("topology", "nodes", name), f"topology.nodes.{name}"
            return ("topology", "nodes"), "topology.nodes"
        if head == "name":
            return ("name",), "name"
        return ("topology",), f"topology ({path})"


@dataclass
class Imported:
    topology: dict[str, Any]
    not_imported: list[str] = field(default_factory=list)
    renamed: dict[str, str] = field(default_factory=dict)
    source_map: SourceMap | None = None
    mapped: list[str] = field(default_factory=list)  # exec: commands read as what they do (routers, routes)

    def yaml_text(self, source: str) -> str:
        lines = [f"# Imported from containerlab topology {source} by `linklab import containerlab`."]
        if self.mapped:
            lines.append("# Mapped from exec: commands:")
            lines += [f"#   - {x}" for x in self.mapped]
        if self.renamed:
            lines.append(f"# Renamed (linklab names: a-z, 0-9, _; hosts at most {HOST_NAME_MAX}, switches at most "
                         f"{SWITCH_NAME_MAX}): " + ", ".join(f"{a} -> {b}" for a, b in self.renamed.items()))
        if self.not_imported:
            lines.append("# Not imported:")
            lines += [f"#   - {x}" for x in self.not_imported]
        return "\n".join(lines) + "\n" + yaml.safe_dump(self.topology, sort_keys=False, width=120)

    def relocate(self, e: ValidationFailed) -> ValidationFailed:
        """linklab's problems with the result, located in the containerlab file."""
        if self.source_map is None:
            return e
        return ValidationFailed(f"{self.source_map.source}, as a linklab topology",
                                [self.source_map.locate(p) for p in e.problems])


def _linklab_name(name: str, taken: set[str], limit: int = HOST_NAME_MAX) -> str:
    base = re.sub(r"[^a-z0-9_]", "_", name.lower())
    if not base or not base[0].isalpha():
        base = "n" + base
    base = base[:limit].rstrip("_")
    cand, k = base, 1
    while cand in taken:
        suffix = str(k)
        cand, k = base[:limit - len(suffix)] + suffix, k + 1
    return cand


def resolve_kind(spec: dict, topo: dict) -> str | None:
    """The node's kind as containerlab resolves it: the node's own, else its group's (the node's
    group, else the defaults' group), else the defaults' kind."""
    defaults = topo.get("defaults") or {}
    if spec.get("kind"):
        return spec["kind"]
    group = spec.get("group") or defaults.get("group")
    if group and ((topo.get("groups") or {}).get(group) or {}).get("kind"):
        return topo["groups"][group]["kind"]
    return defaults.get("kind")


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


def _parse(text: str, source: str) -> dict:
    if m := TEMPLATE.search(text):
        line = text.count("\n", 0, m.start()) + 1
        raise UsageError(f"{source}: a Go template (`{m.group(0)}` on line {line}), not a topology: containerlab "
                         "renders such files with its variables before it reads them",
                         hint="render it first (containerlab deploy --vars, or by hand), then import the result")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark else ""
        raise UsageError(f"{source}{where}: not YAML: {getattr(e, 'problem', None) or e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("topology"), dict):
        raise UsageError(f"{source}: not a containerlab topology (no `topology:` mapping)")
    return data


def _section_notes(data: dict, topo: dict) -> list[str]:
    skipped = [f"top-level `{key}`" for key in sorted(set(data) - {"name", "topology"})]
    skipped += [f"topology.{key}" for key in sorted(set(topo) - {"nodes", "links", "kinds", "defaults", "groups"})]
    for section in ("kinds", "defaults", "groups"):
        if topo.get(section):
            skipped.append(f"topology.{section} (images and other settings; kinds, exec and binds were "
                           "resolved through them)")
    return skipped


def merged(spec: dict, topo: dict, kind: str | None, key: str) -> list:
    """A list setting of a node as containerlab merges it (types/topology.go mergeStringSliceFields):
    the defaults', its kind's, its group's, then its own, each item once, in that order."""
    defaults = topo.get("defaults") or {}
    group = ((topo.get("groups") or {}).get(spec.get("group") or defaults.get("group")) or {})
    kind_spec = (topo.get("kinds") or {}).get(kind) or {}
    out: list = []
    for level in (defaults, kind_spec, group, spec):
        for item in level.get(key) or []:
            if item not in out:
                out.append(item)
    return out


def _binds(spec: dict, topo: dict, kind: str, node: str, places: tuple[Path, Path | None],
           skipped: list[str]) -> list[str]:
    """A container node's binds as containerlab merges them (one per container path, the more
    specific level winning: GetNodeBinds) with each host path as it resolves it (against the
    topology file's directory), written so that they resolve the same from where the import is
    saved: relative to that directory, or absolute when it is not known (stdout)."""
    source_dir, dest_dir = places
    by_target: dict[str, str] = {}
    for bind in merged(spec, topo, kind, "binds"):
        parts = str(bind).split(":")
        by_target[parts[1] if len(parts) > 1 else str(bind)] = str(bind)
    out = []
    for bind in by_target.values():
        host, sep, rest = bind.partition(":")
        if MAGIC.search(host):
            skipped.append(f"node {node}: bind {bind} (containerlab's own lab directory: linklab has none)")
            continue
        if sep and host and not host.startswith(("/", "~")):
            path = os.path.normpath(source_dir / host)
            host = os.path.relpath(path, dest_dir) if dest_dir is not None else path
        out.append(f"{host}{sep}{rest}")
    return out


def _nodes(topo: dict, smap: SourceMap, skipped: list[str], renamed: dict[str, str],
           places: tuple[Path, Path | None]):
    names: dict[str, str] = {}
    hosts: dict[str, Any] = {}
    switches: dict[str, Any] = {}
    taken: set[str] = set()
    for name, spec in (topo.get("nodes") or {}).items():
        spec = spec or {}
        kind = resolve_kind(spec, topo)
        if kind not in HOST_KINDS and kind not in SWITCH_KINDS:
            skipped.append(f"node {name} (kind {kind or 'unset'}: linklab maps only linux, bridge and ovs-bridge)")
            continue
        limit = HOST_NAME_MAX if kind in HOST_KINDS else SWITCH_NAME_MAX
        fits = NAME_RE.match(name) and len(name) <= limit and name not in taken
        new = name if fits else _linklab_name(name, taken, limit)
        if new != name:
            renamed[name] = new
        taken.add(new)
        names[name] = new
        smap.nodes[new] = name
        mapped = set(NODE_KEYS_MAPPED)
        commands = merged(spec, topo, kind, "exec")
        if kind in HOST_KINDS:
            hosts[new] = {}
            if spec.get("sysctls"):
                hosts[new]["sysctls"] = dict(spec["sysctls"])
            if spec.get("image"):  # a node of its own image: a container node (kinds/defaults images are not)
                hosts[new] = {"kind": "container", **hosts[new],
                              **{k: spec[k] for k in CONTAINER_KEYS if spec.get(k)}}
                binds = _binds(spec, topo, kind, name, places, skipped)
                if binds:
                    hosts[new]["binds"] = binds
                mapped |= {*CONTAINER_KEYS, "binds"}
            if commands:  # run after the lab is up, as containerlab runs them after deploy
                hosts[new]["exec"] = commands
        else:
            switches[new] = {"kind": SWITCH_KINDS[kind]}
            if commands:
                skipped.append(f"node {name}: exec ({len(commands)} commands: containerlab runs none on a {kind} node)")
        for key in sorted(set(spec) - mapped):
            skipped.append(f"node {name}: {key} (not mapped)")
    return names, hosts, switches


def _endpoint(names: dict[str, str], switches: dict, node: str, ifname: str, i: int, skipped: list[str]) -> str:
    new = names[node]
    # A switch port's name becomes part of Mininet's `<switch>-<port>`: keep it only if that fits.
    limit = MAX_IFNAME - len(new) - 1 if new in switches else MAX_IFNAME
    if IFNAME_RE.match(ifname) and len(ifname) <= limit:
        return f"{new}:{ifname}"
    why = ("not a Linux name" if not IFNAME_RE.match(ifname) else
           f"over {limit} characters: Mininet names this port {new}-<name>, at most {MAX_IFNAME}")
    skipped.append(f"links[{i}]: interface name {node}:{ifname} ({why}; linklab picks one)")
    return new


def _link(link: dict, i: int, eps, names, hosts, switches, skipped, ifaddrs=None) -> dict[str, Any]:
    endpoints = [_endpoint(names, switches, node, ifname, i, skipped) for node, ifname in eps]
    out: dict[str, Any] = {"endpoints": endpoints, "mtu": int(link.get("mtu") or CLAB_DEFAULT_MTU)}
    addresses: dict[str, Any] = {}
    for node, ifname in eps:  # a routed lab's `ip addr add` commands (_routing)
        for fam, addr in ((ifaddrs or {}).get((names[node], ifname)) or {}).items():
            addresses.setdefault(names[node], {})[fam] = addr
    for fam in ("ipv4", "ipv6"):
        for (node, _), addr in zip(eps, link.get(fam) or []):
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
    return out


def import_clab(text: str, source: str = "<clab>", dest_dir: Path | str | None = None) -> Imported:
    """`dest_dir`: where the result will be saved (its relative binds are written from there);
    None: not known (stdout), binds are written absolute."""
    data = _parse(text, source)
    topo = data["topology"]
    skipped = _section_notes(data, topo)
    smap = SourceMap(source, LineMap(text))
    renamed: dict[str, str] = {}
    places = (Path(source).parent.absolute(), Path(dest_dir).absolute() if dest_dir is not None else None)
    names, hosts, switches = _nodes(topo, smap, skipped, renamed, places)
    routing = _routing(hosts)
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
        links.append(_link(link, i, eps, names, hosts, switches, skipped, routing.addresses if routing else None))
        smap.links.append(i)
    name = _linklab_name(str(data.get("name") or "clab"), set())
    if name != data.get("name"):
        renamed[str(data.get("name"))] = name
    topology: dict[str, Any] = {"name": name, "description": f"imported from containerlab {Path(source).name}",
                                "hosts": hosts}
    if switches:
        topology["switches"] = switches
    mapped: list[str] = []
    if routing:
        mapped = routing.apply(topology, links)
    topology["links"] = links
    return Imported(topology, skipped, renamed, smap, mapped)


# ---- routed labs: nodes whose exec: turns on forwarding are routers -----------------------------

FORWARDING_KEYS = ("net.ipv4.ip_forward", "net.ipv6.conf.all.forwarding")
HASH_KEYS = ("net.ipv4.fib_multipath_hash_policy", "net.ipv6.fib_multipath_hash_policy")
HASH_POLICIES = {"0": "l3", "1": "l4"}


def _sysctl_sets(argv: list[str]) -> dict[str, str] | None:
    """`sysctl [-w] [-q] key=value ...` -> {key: value}; None when argv is no such command."""
    if not argv or argv[0] != "sysctl":
        return None
    words = [w for w in argv[1:] if w not in ("-w", "-q")]
    if not words or not all("=" in w and not w.startswith("-") for w in words):
        return None
    return dict(w.split("=", 1) for w in words)


def _ip(argv: list[str]) -> tuple[int | None, list[str]] | None:
    """`ip [-4|-6] WORDS` -> (family or None, WORDS); None when argv is no plain ip command."""
    if not argv or argv[0] != "ip":
        return None
    rest, family = argv[1:], None
    if rest and rest[0] in ("-4", "-6"):
        family, rest = int(rest[0][1]), rest[1:]
    if not rest or rest[0].startswith("-"):
        return None
    return family, rest


def _route(words: list[str], family: int | None) -> tuple[str, list[str]] | None:
    """`route add|replace PREFIX via GW [dev IF]` or `... nexthop via GW dev IF nexthop ...` ->
    (prefix, gateways); None for any other shape (kept as a command)."""
    if len(words) < 5 or words[0] not in ("route", "r", "ro") or words[1] not in ("add", "replace", "append"):
        return None
    to, rest = words[2], words[3:]
    if to == "default":
        to = "::/0" if family == 6 else "0.0.0.0/0"
    gateways, k = [], 0
    while k < len(rest):
        w = rest[k]
        if w == "nexthop":
            k += 1
            continue
        if w in ("via", "dev") and k + 1 < len(rest):
            if w == "via":
                gateways.append(rest[k + 1])
            k += 2
            continue
        return None  # metric, proto, src, table...: not a plain route
    try:
        net = ipaddress.ip_network(to, strict=False)
        if not gateways or any(ipaddress.ip_address(g).version != net.version for g in gateways):
            return None
    except ValueError:
        return None
    return str(net), gateways


def _address(words: list[str]) -> tuple[str, str, int] | None:
    """`addr add A/LEN dev IF [nodad]` -> (ifname, A/LEN, family)."""
    if len(words) < 5 or words[0] not in ("addr", "address", "a") or words[1] != "add" or words[3] != "dev":
        return None
    if any(w != "nodad" for w in words[5:]):
        return None
    try:
        iface = ipaddress.ip_interface(words[2])
    except ValueError:
        return None
    if "/" not in words[2]:
        return None
    return words[4], words[2], iface.version


@dataclass
class Routing:
    """What a routed lab's exec: commands say: which nodes forward, each interface's addresses,
    each node's routes (prefix, gateways), the multipath hash policy; what stays a command."""

    routers: list[str]
    addresses: dict[tuple[str, str], dict[str, str]]
    routes: dict[str, list[tuple[str, list[str], str]]]  # node -> (prefix, gateways, the command)
    hash_policy: str | None
    notes: list[str]

    def apply(self, topology: dict[str, Any], links: list[dict[str, Any]]) -> list[str]:
        """Move the routers to `routers:`, give nodes their routes (each gateway named by the
        neighbour that has its address), the lab `routing: none` (the file's routes are all it
        has); returns what was mapped. A route whose gateways are not one neighbour's stays a command."""
        owner: dict[str, str] = {}
        for link in links:
            for node, fams in (link.get("addresses") or {}).items():
                for addr in fams.values():
                    owner[str(ipaddress.ip_interface(addr).ip)] = node
        hosts = topology["hosts"]
        notes = list(self.notes)
        multipath = False
        for node, routes in self.routes.items():
            for prefix, gateways, cmd in routes:
                vias = {owner.get(str(ipaddress.ip_address(g))) for g in gateways}
                if len(vias) != 1 or None in vias:
                    hosts[node].setdefault("exec", []).append(cmd)
                    notes.append(f"node {node}: `{cmd}` kept as a command (its gateways are not one lab neighbour's)")
                    continue
                multipath |= len(gateways) > 1
                hosts[node].setdefault("routes", []).append({"to": prefix, "via": vias.pop()})
        for node, spec in hosts.items():
            if "exec" in spec and not spec["exec"]:
                del spec["exec"]
        routers = {}
        for name in self.routers:
            spec = hosts.pop(name)
            routers[name] = spec
        # the order of keys as linklab writes them: hosts, routers, routing, switches, links
        rest = {k: topology.pop(k) for k in list(topology) if k not in ("name", "description", "hosts")}
        topology["routers"] = routers
        routing: dict[str, Any] = {"protocol": "none"}
        if multipath:
            routing["ecmp"] = True
        if self.hash_policy:
            routing["hash_policy"] = self.hash_policy
        topology["routing"] = routing
        topology.update(rest)
        described = [f"routers {', '.join(self.routers)} (their exec: turns on forwarding); routing: none "
                     "(the routes are the file's own)"]
        counted = {n: len(spec.get("routes", [])) for n, spec in {**hosts, **routers}.items() if spec.get("routes")}
        if counted:
            described.append("routes: " + ", ".join(f"{n} {k}" for n, k in counted.items()) +
                             " (from ip route commands, each gateway named by the neighbour with its address)")
        return described + notes


def _routing(hosts: dict[str, Any]) -> Routing | None:
    """A lab is routed when one of its (image-less) linux nodes turns on forwarding, by an exec:
    sysctl command or its sysctls:. Then every such node's exec: is read: forwarding and the
    multipath hash policy are what a router has, `ip addr add` on an interface is its link's
    address, `ip link set ... up|mtu` is what linklab does itself, `ip route add|replace` with
    gateways is a route; anything else stays a command. None: not routed (nothing changes)."""
    plain = {n: spec for n, spec in hosts.items() if spec.get("kind") != "container"}

    def forwards(spec) -> bool:
        sets = {k: str(v) for k, v in (spec.get("sysctls") or {}).items()}
        for cmd in spec.get("exec", []):
            sets.update(_sysctl_sets(_split(cmd)) or {})
        return any(sets.get(k) == "1" for k in FORWARDING_KEYS)

    routers = [n for n, spec in plain.items() if forwards(spec)]
    if not routers:
        return None
    out = Routing(routers, {}, {}, None, [])
    for node, spec in plain.items():
        keep = []
        for cmd in spec.get("exec", []):
            argv = _split(cmd)
            sets = _sysctl_sets(argv)
            if sets is not None and set(sets) <= {*FORWARDING_KEYS, *HASH_KEYS} and node in routers:
                for k in HASH_KEYS:
                    if k in sets and sets[k] in HASH_POLICIES:
                        out.hash_policy = HASH_POLICIES[sets[k]]
                continue
            ip = _ip(argv)
            if ip is not None:
                family, words = ip
                if (addr := _address(words)) is not None:
                    ifname, a, fam = addr
                    out.addresses.setdefault((node, ifname), {})[f"ipv{fam}"] = a
                    continue
                if words[:2] == ["link", "set"] and (words[-1] == "up" or "mtu" in words):
                    continue  # linklab brings links up at their link's MTU
                if (route := _route(words, family)) is not None:
                    out.routes.setdefault(node, []).append((route[0], route[1], cmd))
                    continue
            keep.append(cmd)
        if "exec" in spec:
            spec["exec"] = keep
        if node in routers and spec.get("sysctls"):
            spec["sysctls"] = {k: v for k, v in spec["sysctls"].items() if k not in FORWARDING_KEYS + HASH_KEYS}
            if not spec["sysctls"]:
                del spec["sysctls"]
    return out


def _split(cmd: Any) -> list[str]:
    try:
        return shlex.split(str(cmd))
    except ValueError:
        return []
