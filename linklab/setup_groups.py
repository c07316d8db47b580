"""What `make setup` and each optional feature install: the Debian packages and linklab's extras of
each group, written once. scripts/setup.sh installs groups (`--with NAME`), `linklab doctor` and
the features that find a part missing name the command that installs its group (fix_command).

Runs as a script too, with no third-party import (setup.sh calls it with the system's python3,
before the virtualenv exists):  python3 linklab/setup_groups.py apt|extras|requirements GROUP...
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Group:
    what: str  # what it is for (messages, --help)
    apt: tuple[str, ...] = ()  # Debian packages
    extras: tuple[str, ...] = ()  # pyproject.toml's extras, pinned by requirements.txt
    includes: tuple[str, ...] = ()  # other groups it installs too


GROUPS = {
    # The main job: E1 swept in the lab VM (or natively), the report drawn. The lab VM: QEMU, a
    # Debian kernel whose modules have bonding and netem, and what virtme-ng needs to boot the
    # host's root filesystem (busybox for its initramfs, udev and kmod for the guest's devices and
    # modules). In it a sweep runs the host's programs: iperf3, ping, tc/ip/ss/nstat (iproute2),
    # ethtool (offloads), modprobe (kmod). CPU load and processes are read from /proc: no sysstat,
    # no procps. `linklab check`'s path kind runs traceroute (the Debian package of that name:
    # Butskoy's, whose -n output measure/traceroute.py reads); its service kind, the python3 the
    # host already has. virtme-ng reads the kernel image's version with `file` and `strings`
    # (binutils) and asks `file` whether busybox is static: a fresh Debian has neither, and the VM
    # then does not boot (bench/setup_time.sh found it).
    # The Python side: requirements-main.txt (pyproject.toml's dependencies, no extra).
    "main": Group("the main job: a lab built and swept, natively or in the lab VM",
                  apt=("iproute2", "iputils-ping", "iperf3", "traceroute", "ethtool", "kmod",
                       "qemu-system-x86", "linux-image-amd64", "busybox-static", "udev", "binutils", "file")),
    "ovs": Group("labs with Open vSwitch switches (kind: ovs)", apt=("openvswitch-switch",)),
    "sdn": Group("SDN labs: Open vSwitch switches and their OpenFlow controllers (os-ken)",
                 extras=("sdn",), includes=("ovs",)),
    # docker.io: the engine of container nodes (linklab starts its own dockerd where the lab runs).
    "containers": Group("container nodes (kind: container)", apt=("docker.io",)),
    # `make images` builds the container nodes' base image from Debian packages: no registry.
    "images": Group("`make images`: the container nodes' base image", apt=("mmdebstrap",)),
    # zebra, ospfd and ospf6d in each router of a routing: ospf lab, vtysh to configure and read them.
    "frr": Group("routing: ospf labs: FRR's routing daemons in each router", apt=("frr",)),
    # An exported Mininet script runs on Mininet's Linux bridges.
    "mininet": Group("running a `linklab export --to mininet` script", apt=("mininet", "bridge-utils")),
    # irtt: the UDP round trips flent's RRUL sends beside ICMP ping (linklab/measure/irtt.py).
    "irtt": Group("UDP round trips under load (`measure: [udp_rtt]`, irtt)", apt=("irtt",)),
    "cluster": Group("sweeps across machines, `linklab sweep --cluster` (Ray)", extras=("cluster",)),
    "docs": Group("the documentation site, `make docs` (MkDocs)", extras=("docs",)),
    # What the benchmarks compare against (Mininet on Linux bridges), and Ray's overhead measured.
    "bench": Group("`make bench`: the benchmarks", includes=("mininet", "cluster")),
    # The suite exercises every optional part. chromium: the report tests open each report.html
    # headless; tmux drives `linklab cli` in its terminal test; procps: integration tests pgrep for
    # strays. Its Python side is requirements.txt.
    "test": Group("`make test`: the test suite, which exercises every optional part",
                  apt=("chromium", "tmux", "procps"), extras=("test",),
                  includes=("sdn", "containers", "images", "frr", "mininet", "irtt", "cluster", "docs")),
}


# The package each program linklab looks for comes from (`linklab doctor` names the missing ones).
PROVIDES = {
    "iperf3": "iperf3", "ping": "iputils-ping", "traceroute": "traceroute", "tc": "iproute2", "qemu-system-x86_64": "qemu-system-x86",
    "strings": "binutils", "file": "file",
    "ovs-vswitchd": "openvswitch-switch", "ovsdb-server": "openvswitch-switch", "dockerd": "docker.io",
    "mmdebstrap": "mmdebstrap", "chromium": "chromium", "mn": "mininet", "frr": "frr", "irtt": "irtt",
}


def closure(names: list[str] | tuple[str, ...]) -> list[str]:
    """The groups named and every group they include, in order, once each; main always first."""
    out: list[str] = []

    def visit(name: str) -> None:
        if name not in GROUPS:
            raise KeyError(f"unknown group {name!r}: choose from {', '.join(GROUPS)}")
        if name not in out:
            out.append(name)
            for inc in GROUPS[name].includes:
                visit(inc)
    for n in ("main", *names):
        visit(n)
    return out


def apt(names: list[str] | tuple[str, ...]) -> list[str]:
    """The Debian packages of these groups (and main's), each once."""
    return list(dict.fromkeys(p for g in closure(names) for p in GROUPS[g].apt))


def extras(names: list[str] | tuple[str, ...]) -> list[str]:
    return list(dict.fromkeys(e for g in closure(names) for e in GROUPS[g].extras))


def group_of(package: str) -> str:
    """The group that lists this Debian package (each is listed once)."""
    for name, g in GROUPS.items():
        if package in g.apt:
            return name
    raise KeyError(f"no group installs {package!r}")


def group_of_extra(extra: str) -> str:
    for name, g in GROUPS.items():
        if extra in g.extras:
            return name
    raise KeyError(f"no group installs the extra {extra!r}")


def fix_command(group: str, *, root: bool, checkout: str | Path | None, package: str | None = None) -> str:
    """The command that installs `group`: in a checkout, setup.sh's (`make setup` for main);
    elsewhere (an installed linklab) apt-get of the package that is missing, or the group's."""
    sudo = "" if root else "sudo "
    if checkout is not None:
        if group == "main":
            return f"{sudo}make setup"
        script = Path(checkout) / "scripts" / "setup.sh"
        return f"{sudo}{shlex.quote(str(script))} --with {group}"
    pkgs = [package] if package else [p for g in closure([group]) if g != "main" for p in GROUPS[g].apt]
    return f"{sudo}apt-get install {' '.join(pkgs)}"


def install_command(group: str) -> str:
    """fix_command for this process: root or not, from a checkout or installed."""
    from linklab import bundled  # not at the top: setup.sh runs this file before linklab can import
    return fix_command(group, root=os.geteuid() == 0, checkout=bundled.checkout())


def requirements(extra: str, pyproject: Path) -> list[str]:
    """pyproject.toml's requirements of one extra (setup.sh installs them pinned by requirements.txt)."""
    import tomllib
    data = tomllib.loads(pyproject.read_text())
    return list(data["project"]["optional-dependencies"][extra])


def main(argv: list[str]) -> int:
    if len(argv) < 1 or argv[0] not in ("apt", "extras", "requirements"):
        print(f"usage: {Path(__file__).name} apt|extras|requirements GROUP...", file=sys.stderr)
        return 2
    what, names = argv[0], argv[1:]
    try:
        if what == "requirements":
            pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
            print("\n".join(r for e in names for r in requirements(e, pyproject)))
        else:
            print("\n".join(apt(names) if what == "apt" else extras(names)))
    except KeyError as e:
        print(f"linklab setup: {e.args[0]}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
