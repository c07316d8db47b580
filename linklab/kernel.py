"""What the running kernel offers, and whether we are inside linklab's lab VM.

A lab needs what it is built of: bonding for bonds, sch_netem for impairments, a qdisc module per
shaper and queue discipline, openvswitch for OVS switches (the backend says which:
Backend.kernel_needs). Some kernels (minimal VM kernels) lack some of them and cannot load
modules; a lab that needs one runs inside a VM (linklab.vm) booting a distribution kernel
(linklab/placement.py decides).
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

from linklab.errors import CommandFailed
from linklab.runner import run

# Feature -> kernel module providing it: what a kernel needs to run every kind of lab (`linklab
# vm run --if-needed`: the test suite's kernel tier builds them all).
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


# Kernel config symbols of modules whose name does not give theirs (sch_X: NET_SCH_X, tcp_X: TCP_CONG_X).
CONFIG_SYMBOLS = {"bonding": "BONDING", "openvswitch": "OPENVSWITCH", "veth": "VETH", "bridge": "BRIDGE",
                  "tun": "TUN", "8021q": "VLAN_8021Q"}


def config_symbol(module: str) -> str | None:
    """CONFIG_… of `module` (without the prefix), None when linklab does not know it."""
    m = module.replace("-", "_")
    if m.startswith("sch_"):
        return "NET_SCH_" + m[4:].upper()
    if m.startswith("tcp_"):
        return "TCP_CONG_" + m[4:].upper()
    return CONFIG_SYMBOLS.get(m)


def _config_text(release: str | None, proc_root: Path, boot_root: Path) -> str:
    """The kernel's build configuration: /proc/config.gz for the running kernel, else
    /boot/config-RELEASE ("" when neither is readable)."""
    running = release is None or release == os.uname().release
    if running:
        try:
            return gzip.decompress((proc_root / "config.gz").read_bytes()).decode(errors="replace")
        except (OSError, EOFError, gzip.BadGzipFile):
            pass
    try:
        return (boot_root / f"config-{release or os.uname().release}").read_text(errors="replace")
    except OSError:
        return ""


def _built_in(module: str, config: str) -> bool:
    """Whether the configuration builds `module` into the kernel (=y): a built-in module without
    parameters has no /sys/module entry, and a kernel without modules has no modules.builtin
    (veth, sch_tbf on this kind of machine's kernel)."""
    symbol = config_symbol(module)
    return symbol is not None and f"\nCONFIG_{symbol}=y\n" in f"\n{config}\n"


def feature_available(module: str, *, release: str | None = None, sys_root: Path = Path("/sys"),
                      lib_root: Path = Path("/lib/modules"), proc_root: Path = Path("/proc"),
                      boot_root: Path = Path("/boot")) -> bool:
    """Present (loaded or built in, shown in /sys/module), listed as builtin or loadable for this
    kernel, or built in by its configuration. Only looks: never loads anything."""
    if any((sys_root / "module" / n).exists() for n in _names(module)):
        return True
    moddir = lib_root / (release or os.uname().release)
    return (_listed(moddir / "modules.builtin", module) or _listed(moddir / "modules.dep", module)
            or _built_in(module, _config_text(release, proc_root, boot_root)))


def lab_modules_present(*, release: str | None = None, sys_root: Path = Path("/sys"),
                        lib_root: Path = Path("/lib/modules"), proc_root: Path = Path("/proc"),
                        boot_root: Path = Path("/boot")) -> list[str]:
    """Every module with a configuration symbol linklab knows (config_symbol: the sch_ and tcp_
    modules, bonding, openvswitch, ...) that this kernel has, as feature_available judges each
    (loaded, listed, or built in by its configuration), '_'-spelled and sorted: what the lab VM
    records of its host's kernel (linklab/placement.py: host_has)."""
    found = set()
    if (sys_root / "module").is_dir():
        found |= {p.name for p in (sys_root / "module").iterdir()}
    moddir = lib_root / (release or os.uname().release)
    for listing in (moddir / "modules.builtin", moddir / "modules.dep"):
        try:
            text = listing.read_text()
        except OSError:
            continue
        found |= {line.split(":", 1)[0].strip().rsplit("/", 1)[-1].split(".ko", 1)[0] for line in text.splitlines()}
    by_symbol = {symbol: module for module, symbol in CONFIG_SYMBOLS.items()}
    for line in _config_text(release, proc_root, boot_root).splitlines():
        if line.startswith("CONFIG_") and line.endswith("=y"):
            symbol = line[len("CONFIG_"):-len("=y")]
            for prefix, module_prefix in (("NET_SCH_", "sch_"), ("TCP_CONG_", "tcp_")):
                if symbol.startswith(prefix):
                    found.add(module_prefix + symbol[len(prefix):].lower())
            if symbol in by_symbol:
                found.add(by_symbol[symbol])
    return sorted({n.replace("-", "_") for n in found if n and config_symbol(n) is not None})


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
