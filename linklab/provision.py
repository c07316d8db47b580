"""A lab's optional parts, before `linklab up` builds it: Python extras (the [sdn] extra's os-ken
for OpenFlow controllers: named with its install command, exit 4, never installed here) and
Debian packages: Open vSwitch for OVS switches (and their controllers), Docker for container
nodes, FRR for the routers of a routing: ospf lab. `make setup` installs only the main job's.

Decided: as root in a checkout, the missing group is installed by scripts/setup.sh --with GROUP
(the one list of its packages, and the installer that keeps the distro's OVS and Docker services
from starting on this machine), with a line saying so; root has already let linklab change this
machine. Otherwise exit 4 (nothing changed) naming the command: without root nothing can be
installed; an installed linklab has no setup.sh, and apt-get run by a lab command would start the
distro's daemons; inside the lab VM the root filesystem is the host's, installed on the host.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from linklab import bundled, extras, kernel, runner, setup_groups
from linklab.errors import EnvironmentProblem
from linklab.model.resolved import Lab

# What each group gives a lab, looked for as programs (PATH, and /usr/sbin where daemons live).
PROGRAMS = {
    "ovs": ("ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovsdb-tool"),
    "containers": ("dockerd", "containerd"),
    "frr": ("zebra", "ospfd", "ospf6d", "vtysh"),
}
SEARCH_PATH = ("/usr/sbin", "/sbin", "/usr/lib/frr")  # Debian's FRR keeps its daemons off PATH
INSTALL_TIMEOUT_S = 1800.0  # a Debian download on a slow mirror


def needs(lab: Lab) -> dict[str, str]:
    """The optional groups this lab needs -> why (its nodes that need it), in a stable order."""
    ovs = sorted(n.name for n in lab.nodes if n.switch_kind == "ovs")
    containers = sorted(n.name for n in lab.nodes if n.container is not None)
    out = {}
    if ovs:
        out["ovs"] = f"Open vSwitch switch{'es' if len(ovs) > 1 else ''} {', '.join(ovs)}"
    if containers:
        out["containers"] = f"container node{'s' if len(containers) > 1 else ''} {', '.join(containers)}"
    routers = sorted(n.name for n in lab.nodes if n.frr is not None)
    if routers:
        out["frr"] = f"routing: ospf on router{'s' if len(routers) > 1 else ''} {', '.join(routers)}"
    return out


def extras_needed(lab: Lab) -> dict[str, str]:
    """The Python extras this lab needs -> what needs it (its nodes), in a stable order."""
    controlled = sorted(n.name for n in lab.nodes if n.controller)
    if not controlled:
        return {}
    return {"sdn": f"lab {lab.name}'s OpenFlow controller{'s' if len(controlled) > 1 else ''} "
                   f"(switch{'es' if len(controlled) > 1 else ''} {', '.join(controlled)})"}


def _found(prog: str) -> bool:
    return shutil.which(prog, path=os.pathsep.join([os.environ.get("PATH", ""), *SEARCH_PATH])) is not None


def missing(lab: Lab, found=_found) -> dict[str, str]:
    """The groups this lab needs whose programs are not all here -> why."""
    return {g: why for g, why in needs(lab).items() if not all(found(p) for p in PROGRAMS[g])}


def ensure(lab: Lab, *, say=print, found=_found, root: bool | None = None, checkout: Path | None | bool = True,
           in_lab_vm: bool | None = None, run=runner.run) -> list[str]:
    """Install what this lab lacks (root, in a checkout), else exit 4 naming the command. The
    groups installed (none when nothing was missing). A missing Python extra is named first
    (exit 4): nothing is installed for a lab that could not run anyway."""
    for extra, why in extras_needed(lab).items():
        extras.require(extra, why)
    gone = missing(lab, found)
    if not gone:
        return []
    root = os.geteuid() == 0 if root is None else root
    top = bundled.checkout() if checkout is True else checkout
    in_vm = kernel.in_lab_vm() if in_lab_vm is None else in_lab_vm
    installed = []
    for group, why in gone.items():
        pkgs = " ".join(setup_groups.GROUPS[group].apt)
        cmd = setup_groups.fix_command(group, root=root, checkout=top)
        what = f"lab {lab.name} needs {pkgs} for its {why}, and it is not installed"
        if in_vm:
            raise EnvironmentProblem(f"{what} (the lab VM runs the host's programs)", hint=f"on the host: {cmd}")
        if not root or top is None:
            raise EnvironmentProblem(what, hint=f"install it: {cmd}")
        say(f"linklab: {what}: installing it ({cmd})")
        run(["bash", str(Path(top) / "scripts" / "setup.sh"), "--with", group], timeout=INSTALL_TIMEOUT_S)
        installed.append(group)
    return installed
