"""What the running kernel offers, and whether we are inside linklab's lab VM.

Labs need bonding, netem and Open vSwitch. Some kernels (minimal VM kernels) have none of them and
cannot load modules; then linklab runs the lab inside a VM (linklab.vm) booting a distribution kernel.
"""

from __future__ import annotations

import os
from pathlib import Path

from linklab.errors import CommandFailed
from linklab.runner import run

# Feature -> kernel module providing it.
REQUIRED_FEATURES = {
    "bonding": "bonding",
    "sch_netem": "sch_netem",
    "openvswitch": "openvswitch",
}

# Everything a lab may use; the VM agent loads these once at boot so labs never wait on modprobe.
LAB_MODULES = ("bonding", "sch_netem", "sch_tbf", "sch_htb", "openvswitch", "tcp_bbr", "tun", "8021q")


def in_lab_vm() -> bool:
    """True inside the lab VM, where the agent sets LINKLAB_IN_VM=1 for every command it runs."""
    return os.environ.get("LINKLAB_IN_VM") == "1"


def _names(module: str) -> set[str]:
    # Module files use '-' or '_' interchangeably; the kernel reports '_'.
    return {module, module.replace("_", "-"), module.replace("-", "_")}


def _listed(path: Path, module: str) -> bool:
    """Whether modules.builtin / modules.dep lists `module` (lines like kernel/drivers/net/bonding/bonding.ko[.xz]: ...)."""
    try:
        text = path.read_text()
    except OSError:
        return False
    wanted = _names(module)
    for line in text.splitlines():
        entry = line.split(":", 1)[0].strip()
        base = entry.rsplit("/", 1)[-1].split(".ko", 1)[0]
        if base in wanted:
            return True
    return False


def feature_available(module: str, *, release: str | None = None, sys_root: Path = Path("/sys"), lib_root: Path = Path("/lib/modules")) -> bool:
    """Present (loaded or built in, shown in /sys/module), or listed as builtin or loadable for this kernel.
    Only looks: never loads anything."""
    if any((sys_root / "module" / n).exists() for n in _names(module)):
        return True
    moddir = lib_root / (release or os.uname().release)
    return _listed(moddir / "modules.builtin", module) or _listed(moddir / "modules.dep", module)


def missing_features() -> list[str]:
    """Features from REQUIRED_FEATURES this kernel can neither provide now nor load."""
    return [feature for feature, module in REQUIRED_FEATURES.items() if not feature_available(module)]


def load_modules(names: list[str] | tuple[str, ...], *, timeout: float = 60.0) -> list[str]:
    """modprobe each module (one call each, so one failure does not hide the others).
    Returns the names that failed to load; raises nothing for them."""
    failed = []
    for name in names:
        try:
            run(["modprobe", name], timeout=timeout)
        except CommandFailed:
            failed.append(name)
    return failed
