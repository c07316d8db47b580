"""Typed, frozen models of a topology file, as the user wrote it (before resolution).

Independent of any backend: nothing here knows about namespaces, netlink or VMs, so the same
model can be realized by the Linux backend, exported to Mininet or containerlab, or drawn.
Structural checks live here (types, units, enums, per-field ranges); checks that relate
several parts of the file (endpoints name real nodes, bond modes that need a switch) live in
linklab/model/checks.py.
"""

from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (AfterValidator, BeforeValidator, ConfigDict, Discriminator, Field, StringConstraints, Tag,
                      WithJsonSchema, field_validator, model_validator)

from linklab import units
from linklab.model.aqm import AQMS, PARAMS
from linklab.model.base import Model, cmd_words, words, written
from linklab.model.ready import Ready, Seconds, regex  # noqa: F401  (Seconds, regex: for experiment files too)

NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,11}$")
IFNAME_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9_-]{0,14}$")

BOND_MODES = ("balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb")
# Kernel mode numbers (include/uapi/linux/if_bonding.h), used by netlink.
BOND_MODE_NUMBER = {m: i for i, m in enumerate(BOND_MODES)}
SWITCH_KINDS = ("bridge", "ovs")
FAIL_MODES = ("secure", "standalone")
DATAPATHS = ("kernel", "netdev")
OVS_BOND_MODES = ("active-backup", "balance-slb", "balance-tcp")
SHAPERS = ("netem", "tbf", "htb")
LAG_KINDS = ("auto", "lacp", "static", "none")

MIN_IPV6_MTU = 1280


def _unit(parse, what):
    def conv(v):
        if v is None:
            return None
        try:
            return parse(v)
        except ValueError as e:
            raise ValueError(str(e)) from None
    return BeforeValidator(conv)


Rate = Annotated[float, _unit(units.parse_rate, "rate"), Field(gt=0),
                 written({"type": "number", "exclusiveMinimum": 0}, ["", *units.RATE_UNITS])]
# A link's delay or jitter: a minute is far beyond any real path (a geostationary hop is
# 0.25 s), and a bound keeps queue sizes derived from rate x delay within the kernel's u32 limits.
MAX_LINK_TIME_S = 60.0


def _link_time(v: float) -> float:
    if v > MAX_LINK_TIME_S:
        raise ValueError(f"{units.format_time(v)} is longer than a link delay can be here (at most {MAX_LINK_TIME_S:g}s)")
    return v


Time = Annotated[float, _unit(units.parse_time, "time"), Field(ge=0), AfterValidator(_link_time),
                 written({"type": "number", "minimum": 0, "maximum": MAX_LINK_TIME_S}, ["", *units.TIME_UNITS])]
Percent = Annotated[float, _unit(units.parse_percent, "percent"),
                    written({"type": "number", "minimum": 0, "maximum": 100}, ["", "%"])]
Size = Annotated[int, _unit(units.parse_size, "size"), Field(gt=0),
                 written({"type": "number", "exclusiveMinimum": 0}, units.SIZE_UNITS)]
Mtu = Annotated[int, Field(ge=68, le=65535)]


def _queue(v):
    if v is None or isinstance(v, tuple):
        return v
    try:
        return units.parse_queue(v)
    except ValueError as e:
        raise ValueError(str(e)) from None


# ('time', seconds) | ('bytes', n) | ('packets', n): see units.parse_queue.
Queue = Annotated[tuple[Literal["time", "bytes", "packets"], float], BeforeValidator(_queue),
                  written({"type": "integer", "exclusiveMinimum": 0}, units.PACKET_UNITS, units.TIME_UNITS,
                          units.SIZE_UNITS)]


def _aqm_schema() -> dict:
    """JSON Schema (for editors): the parameters each discipline takes; the loader's checks say the
    same with more words, and also where `aqm:` is written in a block above (linklab/model/checks.py)."""
    return {"allOf": [{"if": {"properties": {"aqm": {"const": name}}, "required": ["aqm"]},
                       # ecn: false is accepted by any discipline (it drops), true only where it can mark
                       "then": {"properties": {"aqm_params": {"propertyNames": {"enum": [*dict.fromkeys([*params, "ecn"])]}}}}}
                      for name, params in PARAMS.items()]}


class ImpairmentFields(Model):
    """What one direction of one veth does to packets. All optional: unset means 'no impairment'."""

    model_config = ConfigDict(json_schema_extra=_aqm_schema())

    rate: Rate | None = None
    delay: Time | None = None
    jitter: Time | None = None
    loss: Percent | None = None
    duplicate: Percent | None = None
    corrupt: Percent | None = None
    reorder: Percent | None = None  # explicit in-link reordering (netem reorder), off by default
    limit: Annotated[int, Field(gt=0)] | None = None  # netem's own limit in packets (prefer queue)
    # The egress queue's bound: a time (5ms: the same delay at every scale), bytes (256kb, scaled
    # with the rate) or packets (100p). Unset: the default port model (linklab/model/queues.py).
    queue: Queue | None = None
    overhead: int | None = None  # per-packet bytes the shaper adds (24 = Ethernet preamble+FCS+IFG)
    shaper: Literal["netem", "tbf", "htb"] | None = None
    burst: Size | None = None  # tbf/htb bucket size
    allow_reorder: bool | None = None  # let jitter reorder packets within the link
    # The queue discipline under the shaper, within the queue's bound (linklab/model/aqm.py):
    # fifo (the byte FIFO, the default) or an AQM, and its parameters as tc names them.
    aqm: Literal[AQMS] | None = None  # type: ignore[valid-type]
    aqm_params: Annotated[dict[str, str | int | float | bool], Field(json_schema_extra={
        "propertyNames": {"enum": sorted({k for ps in PARAMS.values() for k in ps})}})] | None = None


class Impairment(ImpairmentFields):
    """Impairment for both directions, with optional per-direction overrides keyed by the
    sending node: `from: {h1: {delay: 10ms}}` affects traffic h1 sends on this link."""

    from_: dict[str, ImpairmentFields] = Field(default_factory=dict, alias="from")


class BondOptions(Model):
    """Linux bonding options (Documentation/networking/bonding.rst), named as in sysfs."""

    miimon: Annotated[int, Field(ge=0)] | None = None
    updelay: Annotated[int, Field(ge=0)] | None = None
    downdelay: Annotated[int, Field(ge=0)] | None = None
    use_carrier: bool | None = None
    arp_interval: Annotated[int, Field(ge=0)] | None = None
    arp_ip_target: list[ipaddress.IPv4Address] | None = None
    arp_validate: Literal["none", "active", "backup", "all", "filter", "filter_active", "filter_backup"] | None = None
    arp_all_targets: Literal["any", "all"] | None = None
    primary: str | int | None = None  # member index or interface name
    primary_reselect: Literal["always", "better", "failure"] | None = None
    fail_over_mac: Literal["none", "active", "follow"] | None = None
    xmit_hash_policy: Literal["layer2", "layer3+4", "layer2+3", "encap2+3", "encap3+4", "vlan+srcmac"] | None = None
    resend_igmp: Annotated[int, Field(ge=0, le=255)] | None = None
    num_peer_notif: Annotated[int, Field(ge=0, le=255)] | None = None
    all_slaves_active: bool | None = None
    min_links: Annotated[int, Field(ge=0)] | None = None
    lp_interval: Annotated[int, Field(ge=1)] | None = None
    packets_per_slave: Annotated[int, Field(ge=0, le=65535)] | None = None
    lacp_rate: Literal["slow", "fast"] | None = None
    ad_select: Literal["stable", "bandwidth", "count"] | None = None
    ad_actor_sys_prio: Annotated[int, Field(ge=1, le=65535)] | None = None
    ad_user_port_key: Annotated[int, Field(ge=0, le=1023)] | None = None
    ad_actor_system: str | None = None
    tlb_dynamic_lb: bool | None = None


# Options the kernel refuses outside some modes (drivers/net/bonding/bond_options.c, unsuppmodes).
OPTION_MODES: dict[str, tuple[str, ...]] = {
    "packets_per_slave": ("balance-rr",),
    "lacp_rate": ("802.3ad",),
    "ad_select": ("802.3ad",),
    "ad_actor_sys_prio": ("802.3ad",),
    "ad_user_port_key": ("802.3ad",),
    "ad_actor_system": ("802.3ad",),
    "tlb_dynamic_lb": ("balance-tlb",),
    "primary": ("active-backup", "balance-tlb", "balance-alb"),
    "arp_interval": ("balance-rr", "active-backup", "balance-xor", "broadcast"),
    "arp_validate": ("balance-rr", "active-backup", "balance-xor", "broadcast"),
}


class Member(Model):
    """Per-member settings of a bond (member i is the i-th veth pair)."""

    impair: Impairment | None = None


class Bond(Model):
    members: Annotated[int, Field(ge=1, le=16)] = 2
    mode: Literal[BOND_MODES] = "balance-rr"  # type: ignore[valid-type]
    options: BondOptions = BondOptions()
    member_impair: list[Member] = Field(default_factory=list, alias="member")
    # What a switch at the far end does with the members: auto = LACP for 802.3ad, a static LAG
    # for balance-rr/xor/broadcast, plain ports for active-backup/tlb/alb (as a real switch would).
    switch_lag: Literal[LAG_KINDS] = "auto"  # type: ignore[valid-type]
    # An OVS switch's own bond as the far end (default: by switch_lag: LACP -> balance-tcp with
    # lacp active, static -> balance-slb, none -> separate ports); ignored by Linux bridges
    ovs_bond_mode: Literal[OVS_BOND_MODES] | None = None  # type: ignore[valid-type]


class IfaceSettings(Model):
    txqueuelen: Annotated[int, Field(ge=0)] | None = None
    offloads: dict[Literal["tso", "gso", "gro", "lro", "tx", "rx", "sg"], bool] = Field(default_factory=dict)


class Addresses(Model):
    ipv4: ipaddress.IPv4Interface | None = None
    ipv6: ipaddress.IPv6Interface | None = None


class Endpoint(Model):
    node: str
    ifname: str | None = None

    @classmethod
    def parse(cls, text: str) -> "Endpoint":
        node, _, ifname = str(text).partition(":")
        return cls(node=node, ifname=ifname or None)

    def __str__(self) -> str:
        return f"{self.node}:{self.ifname}" if self.ifname else self.node


# "h1" or "h1:eth5", as the schema tells editors (the node's name is checked against the file's nodes).
EndpointText = Annotated[str, StringConstraints(pattern=rf"^[^:\s]+(:{IFNAME_RE.pattern[1:-1]})?$")]


def _endpoint(v):
    if isinstance(v, str):
        node, _, ifname = v.partition(":")
        if ifname and not IFNAME_RE.match(ifname):
            raise ValueError(f"bad interface name {ifname!r} (letters, digits, _ and -, at most 15)")
        return {"node": node, "ifname": ifname or None}
    return v


class Link(Model):
    endpoints: Annotated[list[Annotated[Endpoint, BeforeValidator(_endpoint, json_schema_input_type=EndpointText | Endpoint)]],
                         Field(min_length=2, max_length=2)]
    name: str | None = None
    mtu: Mtu | None = None
    bond: Bond | None = None
    impair: Impairment | None = None
    addresses: dict[str, Addresses] = Field(default_factory=dict)  # keyed by node name
    interfaces: dict[str, IfaceSettings] = Field(default_factory=dict)  # keyed by node name
    ipv6: bool | None = None
    # What crossing this link costs a routed path (routing: static adds them up; fewest hops when
    # every link costs 1). Out of the sending node's end, as OSPF counts an interface's cost.
    cost: Annotated[int, Field(ge=1, le=65535)] = 1


HOST_KINDS = ("host", "container")
CONTAINER_ONLY = ("image", "cmd", "env", "binds")
OVS_ONLY = ("controller", "fail_mode")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _command(v):
    argv = words(v, "command")
    if isinstance(argv, list) and not argv:
        raise ValueError("an empty command: write the program and its arguments")
    return argv


SERVICE_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,31}$")


def _service_name(v: str) -> str:
    if not SERVICE_NAME_RE.match(v):
        raise ValueError(f"bad service name {v!r} (lowercase letters, digits, _ . -; at most 32, e.g. web)")
    return v


class Service(Model):
    """An `exec:` item written as a mapping: `{run: CMD}` is a command like any other;
    `{run: CMD, background: true, ready: {...}}` a long-running service the lab owns (started in
    exec order, waited for until ready, stopped by `down`, its output kept in a log)."""

    run: Annotated[list[str], BeforeValidator(_command, json_schema_input_type=Annotated[str, StringConstraints(min_length=1)]
                                              | Annotated[list[str], Field(min_length=1)]), Field(min_length=1)]
    background: bool = False
    # The service's name in its node (`linklab set --restart NODE/NAME`, its log file, status):
    # default the program's file name.
    name: Annotated[str, AfterValidator(_service_name), Field(json_schema_extra={"pattern": SERVICE_NAME_RE.pattern})] | None = None
    ready: Ready | None = None

    @model_validator(mode="after")
    def _background_only(self):
        if not self.background:
            extra = [k for k in ("name", "ready") if getattr(self, k) is not None]
            if extra:
                raise ValueError(f"{' and '.join(extra)} {'apply' if len(extra) > 1 else 'applies'} to a background "
                                 "service only: add background: true")
        return self

    def service_name(self) -> str:
        return self.name or default_service_name(self.run)


def default_service_name(argv: list[str]) -> str:
    """A service's name when none is written: its program's file name, cut to a valid name."""
    base = re.sub(r"[^a-z0-9_.-]", "_", os.path.basename(argv[0]).lower()).lstrip("._-") or "service"
    return base[:32]


def _exec_item_kind(v) -> str:
    return "Service" if isinstance(v, (dict, Service)) else "Command"


# One command of a node's `exec:` list: "ip addr add 192.0.2.1/24 dev eth1" or an argv list.
Command = Annotated[list[str], BeforeValidator(_command, json_schema_input_type=Annotated[str, StringConstraints(min_length=1)]
                                                | Annotated[list[str], Field(min_length=1)]), Field(min_length=1)]
EXEC_HELP = ("commands run in the node, in order, once the lab is up; an item {run: CMD, background: true, "
             "ready: {port: N}} is a service the lab keeps running")
# An `exec:` item: a command, or a mapping ({run: ..., background: true, ready: ...}: a service).
ExecItem = Annotated[Annotated[Command, Tag("Command")] | Annotated[Service, Tag("Service")],
                     Discriminator(_exec_item_kind)]

BIND_PATTERN = r"^[^:]+:/[^:]*(:(ro|rw))?$"  # what _bind accepts, for editors
SYSCTL_NAME = r"[a-z0-9_]+(\.[a-z0-9_]+)+"  # dotted, as sysctl(8) writes it
SYSCTL_NAMES = {"propertyNames": {"pattern": f"^{SYSCTL_NAME}$"}}
BIND_HELP = ("write HOST_PATH:/container/path, optionally :ro or :rw (a relative HOST_PATH is from the "
             "topology file's directory, ~ is the home directory, as in containerlab)")


def _bind(v: str) -> str:
    """HOST_PATH:CONTAINER_PATH[:ro|rw]; the container path absolute, the host path absolute,
    ~-relative or relative to the topology file (made absolute by `absolute_bind` on loading)."""
    parts = v.split(":")
    if len(parts) not in (2, 3) or not parts[0] or not parts[1].startswith("/") or parts[2:] not in ([], ["ro"], ["rw"]):
        raise ValueError(f"bad bind {v!r}: {BIND_HELP}")
    return v


def absolute_bind(bind: str, base: Path) -> str:
    """A valid bind with its host path made absolute as containerlab makes it (utils.ResolvePath):
    ~ expanded, a relative path joined to `base` (the topology file's directory), cleaned."""
    host, rest = bind.split(":", 1)
    path = Path(os.path.expanduser(host))
    return f"{os.path.normpath(path if path.is_absolute() else Path(base) / path)}:{rest}"


def _only_if(field: str, value: str, fields: tuple[str, ...], then: dict | None = None) -> dict:
    """JSON Schema (for editors) of settings that apply only when `field` is `value`; the loader's
    checks say the same with more words (linklab/model/checks.py)."""
    when = {"properties": {field: {"const": value}}, "required": [field]}
    return {"if": when, "then": then or {}, "else": {"properties": {f: False for f in fields}}}


class Route(Model):
    """A route written by hand (`routes: [{to: h2, via: r2}]`): it wins over a computed one to
    the same destination. Names resolve to addresses (linklab/model/routes.py)."""

    # default, a node (its addresses), a link (its subnet) or a prefix (10.9.0.0/16, fd00:9::/48)
    to: Annotated[str, StringConstraints(min_length=1)]
    via: Annotated[str, StringConstraints(min_length=1)]  # a neighbour: a node sharing a link or a switch


ROUTES_HELP = "routes written by hand, e.g. {to: h2, via: r1}: they win over computed ones"
FRR_CONFIG_HELP = ("routing: ospf: this router's own frr.conf (a path relative to the topology file), "
                   "loaded instead of the generated one")


class Host(Model):
    model_config = ConfigDict(json_schema_extra=_only_if("kind", "container", CONTAINER_ONLY, {"required": ["image"]}))
    # host: a network namespace sharing this machine's files; container: a Docker container (its
    # own root filesystem from `image`) whose network namespace joins the lab the same way.
    kind: Literal[HOST_KINDS] = "host"  # type: ignore[valid-type]
    sysctls: dict[str, str | int] = Field(default_factory=dict, json_schema_extra=SYSCTL_NAMES)
    description: str | None = None
    image: Annotated[str, Field(min_length=1)] | None = None  # containers: a local or pullable Docker image
    cmd: Annotated[list[str], BeforeValidator(cmd_words, json_schema_input_type=str | list[str]),
                   Field(min_length=1)] | None = None  # default: the image's
    env: dict[str, str | int | float | bool] = Field(default_factory=dict,
                                                     json_schema_extra={"propertyNames": {"pattern": ENV_NAME_RE.pattern}})
    binds: list[Annotated[str, AfterValidator(_bind), Field(json_schema_extra={"pattern": BIND_PATTERN})]] = \
        Field(default_factory=list)
    exec: list[ExecItem] = Field(default_factory=list, description=EXEC_HELP)
    routes: list[Route] = Field(default_factory=list, description=ROUTES_HELP)

    @field_validator("env")
    @classmethod
    def _env_names(cls, v):
        for k in v:
            if not ENV_NAME_RE.match(k):
                raise ValueError(f"bad environment variable name {k!r} (letters, digits and _, not starting with a digit)")
        return v

    @field_validator("sysctls")
    @classmethod
    def _sysctl_keys(cls, v):
        return _sysctl_names(v)


def _sysctl_names(v: dict) -> dict:
    for k in v:
        if not re.fullmatch(SYSCTL_NAME, k):
            raise ValueError(f"bad sysctl name {k!r} (write it dotted, e.g. net.ipv4.tcp_reordering)")
    return v


class Router(Model):
    """A node that forwards IPv4 and IPv6 between its links (each link its own subnet, as
    everywhere): a namespace with forwarding on, its routes computed (routing: static), learned
    (routing: ospf: FRR in its namespace) or written (`routes:`)."""

    sysctls: dict[str, str | int] = Field(default_factory=dict, json_schema_extra=SYSCTL_NAMES)
    description: str | None = None
    exec: list[ExecItem] = Field(default_factory=list, description=EXEC_HELP)
    routes: list[Route] = Field(default_factory=list, description=ROUTES_HELP)
    # routing: ospf only: the router's own frr.conf (relative to the topology file), loaded
    # instead of the one linklab generates from the topology.
    frr_config: Annotated[str, StringConstraints(min_length=1)] | None = Field(default=None, description=FRR_CONFIG_HELP)

    @field_validator("sysctls")
    @classmethod
    def _sysctl_keys(cls, v):
        return _sysctl_names(v)


ROUTING_PROTOCOLS = ("static", "ospf", "none")
HASH_POLICIES = ("l3", "l4")


class Routing(Model):
    """How a lab's nodes learn routes. static: linklab computes shortest paths (by links' cost)
    from every host and router to every link's subnet and installs them; ospf: FRR's zebra and
    ospfd run in every router (links' cost: the OSPF interface cost) and learn them, hosts get
    static routes toward their router; none: only the routes written by hand."""

    protocol: Literal[ROUTING_PROTOCOLS] = "static"  # type: ignore[valid-type]
    # Equal-cost paths all installed, as one multipath route (else one next hop: the first link
    # in file order); the kernel hashes each flow onto one of them.
    ecmp: bool = False
    # What the kernel's multipath hash reads (fib_multipath_hash_policy): l3 = addresses only
    # (the kernel's own default: one host pair's flows all take one path), l4 = addresses and
    # ports (each flow hashed on its own).
    hash_policy: Literal[HASH_POLICIES] = "l4"  # type: ignore[valid-type]


def _routing(v):
    return {"protocol": v} if isinstance(v, str) else v


class Controller(Model):
    """An OpenFlow controller for an OVS switch: an os-ken app from controllers/<app>.py."""

    app: str
    port: Annotated[int, Field(ge=1024, le=65535)] = 6653  # OpenFlow TCP port inside the switch's namespace


def _controller(v):
    return {"app": v} if isinstance(v, str) else v


class Switch(Model):
    model_config = ConfigDict(json_schema_extra={**_only_if("kind", "ovs", OVS_ONLY),
                                                 "allOf": [{"if": {"properties": {"kind": {"const": "ovs"}}, "required": ["kind"]},
                                                            "then": {"properties": {"stp": {"const": False}}},
                                                            "else": {"properties": {"datapath": {"const": "kernel"}}}}]})
    kind: Literal[SWITCH_KINDS] = "bridge"  # type: ignore[valid-type]
    stp: bool = False
    # OVS only: an OpenFlow controller app (`controller: l2_learning` or `{app: hub, port: 6653}`)
    controller: Annotated[Controller, BeforeValidator(_controller, json_schema_input_type=str | Controller)] | None = None
    # OVS only: what the switch does without its controller: secure = nothing, standalone = learn
    # like a plain switch (default: secure with a controller, standalone without)
    fail_mode: Literal[FAIL_MODES] | None = None  # type: ignore[valid-type]
    datapath: Literal[DATAPATHS] = "kernel"  # type: ignore[valid-type]  # OVS: kernel module or userspace (netdev)
    # MTU of this switch's ports whatever their links say (Mininet leaves switch ports at 1500)
    port_mtu: Mtu | None = None
    description: str | None = None
    exec: list[ExecItem] = Field(default_factory=list, description=EXEC_HELP)  # in the switch's namespace


class Addressing(Model):
    ipv4: ipaddress.IPv4Network = ipaddress.IPv4Network("10.77.0.0/16")
    ipv6: ipaddress.IPv6Network | None = ipaddress.IPv6Network("fd00:77::/48")

    @model_validator(mode="after")
    def _room(self):
        if self.ipv4.prefixlen > 24:
            raise ValueError(f"ipv4 pool {self.ipv4} is too small: linklab gives each segment a /24")
        if self.ipv6 is not None and self.ipv6.prefixlen > 64:
            raise ValueError(f"ipv6 pool {self.ipv6} is too small: linklab gives each segment a /64")
        return self


class Defaults(Model):
    mtu: Mtu = 1500
    ipv6: bool = True
    impair: Impairment | None = None
    sysctls: dict[str, str | int] = Field(default_factory=dict, json_schema_extra=SYSCTL_NAMES)


NODE_NAMES = {"propertyNames": {"pattern": NAME_RE.pattern}}


class Topology(Model):
    name: str = Field(json_schema_extra={"pattern": NAME_RE.pattern})
    description: str | None = None
    scale: Annotated[float | Literal["auto"], WithJsonSchema(
        {"anyOf": [{"const": "auto"}, {"type": "number", "exclusiveMinimum": 0, "maximum": 10}]})] = "auto"
    defaults: Defaults = Defaults()
    addressing: Addressing = Addressing()
    hosts: dict[str, Host | None] = Field(default_factory=dict, json_schema_extra=NODE_NAMES)
    switches: dict[str, Switch | None] = Field(default_factory=dict, json_schema_extra=NODE_NAMES)
    routers: dict[str, Router | None] = Field(default_factory=dict, json_schema_extra=NODE_NAMES)
    links: list[Link] = Field(default_factory=list)
    # `routing: static` (the default when the lab has routers), `ospf`, `none`, or a mapping with ecmp
    # and hash_policy; unset without routers: none.
    routing: Annotated[Routing, BeforeValidator(_routing, json_schema_input_type=Literal[ROUTING_PROTOCOLS] | Routing)] | None = None
    # Per-student variants (linklab/model/variables.py: declared, validated and substituted
    # before this model sees the data) and coursework checks (linklab/check/: validated against
    # the resolved lab by `linklab check` and `linklab validate`); the lab itself ignores both.
    vars: dict[str, Any] = Field(default_factory=dict)
    checks: list[Any] = Field(default_factory=list)

    @property
    def routing_protocol(self) -> str:
        """What routes the lab's nodes get: `routing:` as written, else static when it has routers."""
        if self.routing is not None:
            return self.routing.protocol
        return "static" if self.routers else "none"

    @field_validator("name")
    @classmethod
    def _lab_name(cls, v):
        if not NAME_RE.match(v):
            raise ValueError(f"bad lab name {v!r}: lower-case letters, digits and _, starting with a letter, at most 12")
        return v

    @field_validator("scale")
    @classmethod
    def _scale(cls, v):
        if v != "auto" and not 0 < v <= 10:
            raise ValueError(f"scale must be 'auto' or a factor in (0, 10], got {v}")
        return v
