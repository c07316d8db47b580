"""`linklab doctor`: what this machine offers linklab, what is missing for which feature, and the
command that fixes each. Exit 0 when the main job (a sweep: natively, or in the lab VM) can run
here, 4 when it cannot.

Read-only: probe() looks (files, PATH, /dev/kvm, the lab VM's records) and changes nothing, boots
nothing, loads no module. assess() is a pure function from those probes to findings and the exit
code, tested on made-up machines (tests/unit/test_doctor.py).
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from linklab import bundled, extras, kernel, setup_groups
from linklab.errors import EXIT_ENV, EXIT_OK

GiB = 1 << 30
MiB = 1 << 20
# A sweep writes each repetition's raw output; E1 quick's run is a few MiB, a full one tens.
DISK_NEEDED = 500 * MiB
# The lab VM's memory (linklab/vm/launcher.py VMConfig.memory, 2G) and a little for QEMU itself.
VM_MEMORY_NEEDED = 2 * GiB + 256 * MiB
# Findings whose absence blocks one of the main job's two paths (natively, in the lab VM).
MAIN_PATH_NEEDS = {"root", "bonding", "netem", "namespaces", "qemu", "virtme-ng", "kernel", "memory"}

# The programs linklab runs, by what they are for (the packages they come from, and the groups
# that install those: linklab/setup_groups.py).
MAIN_TOOLS = ("iperf3", "ping", "tc")
VM_HELPERS = ("strings", "file")  # virtme-ng runs them on the kernel image and busybox before it boots
VM_TOOLS = ("qemu-system-x86_64", *VM_HELPERS)
OPTIONAL_TOOLS = (
    ("ovs-vswitchd", "labs with Open vSwitch switches (kind: ovs, SDN labs)"),
    ("ovsdb-server", "labs with Open vSwitch switches (kind: ovs, SDN labs)"),
    ("dockerd", "container nodes (kind: container)"),
    ("mmdebstrap", "`make images`: the container nodes' base image"),
    ("chromium", "the test suite's look at report.html in a headless browser"),
    ("mn", "running a `linklab export --to mininet` script"),
    ("frr", "routers of a routing: ospf lab (FRR's zebra, ospfd, ospf6d)"),
    ("irtt", "UDP round trips under load beside the ping (measure: [udp_rtt], flent's RRUL)"),
)
SEARCH_PATH = ("/usr/sbin", "/sbin")  # beside PATH: daemons live here
# Programs found by another name, or outside PATH: FRR is its daemons (zebra, under /usr/lib/frr).
FOUND_AS = {"frr": ("zebra", "/usr/lib/frr")}
AREAS = ("kernel", "machine", "programs", "lab VM", "labs", "cached", "Python")
# What a bundled lab is, by the modules its build uses (the rest: plain or routed).
LAB_KINDS = (("bonding", "bonds"), ("sch_netem", "netem"), ("openvswitch", "OVS"), ("tun", "OVS"))
# Kernel features: (name, module or None for a /proc check, what needs it).
KERNEL_FEATURES = (
    ("bonding", "bonding", "the main job natively: bonded links (E1's lab)"),
    ("netem", "sch_netem", "the main job natively: impaired links (delay, loss, rate)"),
    ("openvswitch", "openvswitch", "Open vSwitch switches natively"),
)


@dataclass(frozen=True)
class Probes:
    """What probe() saw; every field plain data, so tests can describe any machine."""
    root: bool
    in_lab_vm: bool
    kernel_release: str
    kernel: dict[str, bool]  # KERNEL_FEATURES' names, and "namespaces", "forwarding"
    programs: dict[str, str | None]  # program -> its path, or None
    kvm: bool  # /dev/kvm opens and answers
    kvm_failed: str | None  # why a KVM boot failed here before (the machine cache), else None
    vm_kernel: str | None  # the lab VM's kernel image (/boot/vmlinuz-*), or None
    vm_kernel_features: dict[str, bool]  # the VM kernel's modules: bonding, netem, openvswitch
    virtme: str | None  # virtme-run beside this interpreter (virtme-ng, a declared dependency)
    extras_missing: dict[str, list[str]]  # extra -> its modules that cannot be imported
    vm: dict | None  # the running lab VM's record (pid, accel, labs), or None
    vm_boot_s: dict[str, float]  # accel -> the last boot's seconds (the machine cache)
    images: list[str]  # cached container images (tarballs)
    disk_free: int  # bytes free where results go (the working directory)
    mem_available: int | None  # bytes (MemAvailable), None if unknown
    cpus: int
    install_commands: dict[str, str] = field(default_factory=dict)  # extra -> its install command
    checkout: str | None = None  # the git checkout linklab runs from (its scripts/setup.sh), or None
    labs: dict[str, dict[str, str]] = field(default_factory=dict)  # bundled topology -> module -> what needs it
    lab_modules: dict[str, bool] = field(default_factory=dict)  # those modules -> this kernel has it


@dataclass(frozen=True)
class Finding:
    area: str  # kernel, lab VM, programs, Python, machine
    name: str
    ok: bool
    detail: str
    needed_for: str
    fix: str | None = None
    blocks_main: bool = False  # missing, and the main job cannot run without it


@dataclass(frozen=True)
class Verdict:
    findings: list[Finding]
    native: bool  # the main job can run on this kernel
    vm: bool  # the main job can run in the lab VM
    exit_code: int
    summary: str


def _install(pkg: str, p: Probes) -> str:
    """The command that installs Debian's `pkg`: its group's (scripts/setup.sh in a checkout),
    else apt-get of the package."""
    return setup_groups.fix_command(setup_groups.group_of(pkg), root=p.root, checkout=p.checkout, package=pkg)


def _size(n: float) -> str:
    return f"{n / GiB:.1f} GiB" if n >= GiB else f"{n / MiB:.0f} MiB"


def assess(p: Probes) -> Verdict:
    """Findings, and whether the main job runs natively, in the lab VM, or not at all. Pure."""
    f: list[Finding] = []
    add = f.append
    # -- the main job natively: root, bonding and netem, the tools a sweep runs
    for name, _, why in KERNEL_FEATURES:
        ok = p.kernel.get(name, False)
        add(Finding("kernel", name, ok, "present or loadable" if ok else f"not in kernel {p.kernel_release}",
                    why, None if ok else "the lab VM runs labs on a kernel that has it (linklab does that by itself)"))
    for name, why in (("namespaces", "every lab (network namespaces)"), ("forwarding", "routed paths (IP forwarding)")):
        ok = p.kernel.get(name, False)
        add(Finding("kernel", name, ok, "present" if ok else "missing", why,
                    None if ok else "the lab VM runs labs on a kernel that has it"))
    add(Finding("machine", "root", p.root, "running as root" if p.root else "not root", "labs natively (the lab VM needs no root)",
                None if p.root else "sudo linklab ... (or let labs run in the lab VM)"))
    tools_missing = [prog for prog in MAIN_TOOLS if not p.programs.get(prog)]
    for prog in MAIN_TOOLS:
        where = p.programs.get(prog)
        add(Finding("programs", prog, bool(where), where or "not found", "every sweep (natively and in the lab VM, "
                    "which runs the host's programs)", None if where else _install(setup_groups.PROVIDES[prog], p), blocks_main=not where))
    kernel_ok = p.kernel.get("bonding", False) and p.kernel.get("netem", False) and p.kernel.get("namespaces", False)
    native = kernel_ok and p.root and not tools_missing

    # -- the main job in the lab VM: QEMU, virtme-ng, a kernel with the modules, memory
    qemu = p.programs.get("qemu-system-x86_64")
    add(Finding("lab VM", "qemu", bool(qemu), qemu or "not found", "the lab VM", None if qemu else _install("qemu-system-x86", p)))
    for prog in VM_HELPERS:
        where = p.programs.get(prog)
        add(Finding("lab VM", prog, bool(where), where or "not found", "the lab VM (virtme-ng runs it on the kernel "
                    "image and busybox before it boots)", None if where else _install(setup_groups.PROVIDES[prog], p)))
    helpers = all(p.programs.get(prog) for prog in VM_HELPERS)
    add(Finding("lab VM", "virtme-ng", bool(p.virtme), p.virtme or "virtme-run not beside this Python",
                "the lab VM (linklab's declared dependency)",
                None if p.virtme else ("make setup" if p.checkout else f"{sys.executable} -m pip install 'virtme-ng>=1.42,<2'")))
    vk_missing = [n for n in ("bonding", "netem") if not p.vm_kernel_features.get(n, False)]
    if p.vm_kernel is None:
        add(Finding("lab VM", "kernel", False, "no /boot/vmlinuz-*", "the lab VM", _install("linux-image-amd64", p)))
    else:
        add(Finding("lab VM", "kernel", not vk_missing, p.vm_kernel + (f" (its modules lack {', '.join(vk_missing)})" if vk_missing else ""),
                    "the lab VM", _install("linux-image-amd64", p) if vk_missing else None))
    if p.kvm_failed:
        kvm_detail = f"/dev/kvm usable, but a guest did not boot with it before: {p.kvm_failed} (software emulation is used)"
    else:
        kvm_detail = ("/dev/kvm answers: the lab VM tries hardware virtualization first (whether a guest boots "
                      "with it shows at the first boot, then is remembered)") if p.kvm else \
            "not usable: the lab VM runs under software emulation (slower: E1 quick takes minutes)"
    add(Finding("lab VM", "KVM", p.kvm and not p.kvm_failed, kvm_detail, "a fast lab VM (not required)",
                None if p.kvm else "enable virtualization (VT-x/AMD-V, nested for a VM) and give this user /dev/kvm"))
    mem_ok = p.mem_available is None or p.mem_available >= VM_MEMORY_NEEDED
    add(Finding("machine", "memory", mem_ok, "unknown" if p.mem_available is None else f"{_size(p.mem_available)} available",
                f"the lab VM ({_size(VM_MEMORY_NEEDED)})", None if mem_ok else "free memory, or run natively on a kernel with bonding and netem"))
    vm = (not p.in_lab_vm and bool(qemu) and helpers and bool(p.virtme) and p.vm_kernel is not None and not vk_missing
          and mem_ok and not tools_missing)
    state = (f"running (pid {p.vm.get('pid')}, {p.vm.get('accel')}, labs: {', '.join(p.vm.get('labs') or []) or 'none'})"
             if p.vm else "not running (booted by the first command that needs it)")
    boots = ", ".join(f"{a} {s:.0f} s" for a, s in sorted(p.vm_boot_s.items()))
    add(Finding("lab VM", "state", True, state, "labs on a kernel that lacks features"))
    f += _lab_findings(p, vm)
    add(Finding("cached", "boots", True, f"last lab VM boot: {boots}" if boots else "no lab VM boot recorded",
                "knowing what a boot costs here (the machine cache)"))

    # -- everything else: optional, each named with what needs it
    disk_ok = p.disk_free >= DISK_NEEDED
    add(Finding("machine", "disk", disk_ok, f"{_size(p.disk_free)} free here", f"results (>= {_size(DISK_NEEDED)})",
                None if disk_ok else "free disk space, or sweep with --results DIR on another disk", blocks_main=not disk_ok))
    add(Finding("machine", "cpus", True, str(p.cpus), "labs and the lab VM (2 vCPUs)"))
    for prog, why in OPTIONAL_TOOLS:
        where = p.programs.get(prog)
        add(Finding("programs", prog, bool(where), where or "not found", why, None if where else _install(setup_groups.PROVIDES[prog], p)))
    add(Finding("cached", "images", bool(p.images), ", ".join(p.images) or "none cached", "container nodes' base image",
                None if p.images else f"make images (in a checkout), or: {sys.executable} -m linklab.docker.images --if-missing"))
    for name, gone in p.extras_missing.items():
        add(Finding("Python", f"[{name}]", not gone, "installed" if not gone else f"missing ({', '.join(gone)})",
                    extras.EXTRAS[name].what, None if not gone else p.install_commands.get(name)))

    disk_and_tools = disk_ok and not tools_missing
    native, vm = native and disk_and_tools, vm and disk_and_tools
    if native:
        summary = "the main job can run natively on this kernel" + (" (and in the lab VM)" if vm else "")
    elif vm:
        summary = "the main job can run in the lab VM (" + ("KVM" if p.kvm and not p.kvm_failed else "software emulation") + ")"
    else:
        summary = "the main job cannot run here: neither natively nor in the lab VM (see the fixes above)"
    if not native and not vm:  # what is missing on either path is what blocks the main job
        f = [replace(x, blocks_main=True) if not x.ok and x.name in MAIN_PATH_NEEDS else x for x in f]
    return Verdict(f, native, vm, EXIT_OK if native or vm else EXIT_ENV, summary)


def lab_kind(needs: dict[str, str]) -> str:
    """"bonds, netem", "OVS", ... or "plain/routed": what a lab is, by the modules it uses."""
    return ", ".join(dict.fromkeys(kind for module, kind in LAB_KINDS if module in needs)) or "plain/routed"


def _lab_findings(p: Probes, vm: bool) -> list[Finding]:
    """Per bundled topology: natively here, or in the lab VM and for lack of what."""
    out = []
    for name, needs in p.labs.items():
        lacking = [m for m in needs if not p.lab_modules.get(m, False)]
        if not lacking:
            detail = "runs on this kernel" + (f" (it has {', '.join(needs)})" if needs else "")
        else:
            detail = "needs the lab VM: this kernel lacks " + "; ".join(f"{m} ({needs[m]})" for m in lacking)
        out.append(Finding("labs", name, not lacking or vm, detail, lab_kind(needs),
                           None if not lacking or vm else "the lab VM's findings above"))
    return out


def render(v: Verdict) -> str:
    lines = []
    for area in AREAS:
        of_area = [x for x in v.findings if x.area == area]
        if of_area:
            lines.append(f"{area}:")
        lines += _lines(of_area)
    lines.append(f"linklab doctor: {v.summary} (exit {v.exit_code})")
    lines.append("  ok present, -- missing (the feature in [] needs it), !! missing and the main job needs it")
    return "\n".join(lines)


def _lines(findings: list[Finding]) -> list[str]:
    lines = []
    for x in findings:
        mark = "ok " if x.ok else ("!! " if x.blocks_main else "-- ")
        lines.append(f"  {mark}{x.name:<20} {x.detail}  [{x.needed_for}]")
        if not x.ok and x.fix:
            lines.append(f"  {'':<23} fix: {x.fix}")
    return lines


# -- looking (impure, read-only) -----------------------------------------------------------------


def _which(prog: str) -> str | None:
    name, *more = FOUND_AS.get(prog, (prog,))
    path = os.pathsep.join([os.environ.get("PATH", ""), *SEARCH_PATH, *more])
    return shutil.which(name, path=path)


def _mem_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _bundled_lab_needs() -> dict[str, dict[str, str]]:
    """Each bundled topology -> the kernel modules its build uses (one that does not resolve is left out)."""
    from linklab import lab, placement
    from linklab.errors import LinklabError
    out = {}
    for path in sorted(bundled.folder("topologies").glob("*.yaml")):
        try:
            out[path.stem] = placement.kernel_needs(lab.build_lab(path, []))
        except LinklabError:
            continue
    return out


def probe() -> Probes:
    from linklab import placement
    from linklab.docker import images
    from linklab.fsutil import read_json_record
    from linklab.vm.host import kernel_release_of, kvm_usable, newest_kernel
    from linklab.vm.launcher import machine_cache_dir
    release = os.uname().release
    feats = {name: kernel.feature_available(module) for name, module, _ in KERNEL_FEATURES}
    feats["namespaces"] = Path("/proc/self/ns/net").exists()
    feats["forwarding"] = Path("/proc/sys/net/ipv4/ip_forward").exists()
    programs = {prog: _which(prog) for prog in (*MAIN_TOOLS, *VM_TOOLS, *(prog for prog, _ in OPTIONAL_TOOLS))}
    try:
        vm_kernel = newest_kernel()
    except Exception:
        vm_kernel = None
    vm_feats = {}
    if vm_kernel is not None:
        vrel = kernel_release_of(vm_kernel)
        nowhere = Path("/nonexistent")  # only the VM kernel's module lists, not this kernel's /sys
        vm_feats = {name: kernel.feature_available(module, release=vrel, sys_root=nowhere)
                    for name, module, _ in KERNEL_FEATURES}
    virtme = Path(sys.executable).parent / "virtme-run"
    cache = read_json_record(machine_cache_dir() / "vm-accel.json") or {}
    failed = (cache.get("kvm_failed") or {}).get(f"{vm_kernel}|host {release}") if vm_kernel else None
    vm = placement.lab_vm()
    info = vm.info() if vm.running() else None
    vm_rec = {"pid": info.get("pid"), "accel": info.get("accel"), "labs": placement.vm_labs()} if info else None
    img_dir = images.images_dir()
    cached = sorted(p.name for p in img_dir.glob("*.tar")) if img_dir.is_dir() else []
    labs = _bundled_lab_needs()
    modules = {m for needs in labs.values() for m in needs}
    return Probes(
        labs=labs, lab_modules={m: kernel.feature_available(m) for m in sorted(modules)},
        root=os.geteuid() == 0, in_lab_vm=kernel.in_lab_vm(), kernel_release=release, kernel=feats,
        programs=programs, kvm=kvm_usable(), kvm_failed=(failed or {}).get("reason") if failed else None,
        vm_kernel=str(vm_kernel) if vm_kernel else None, vm_kernel_features=vm_feats,
        virtme=str(virtme) if virtme.exists() else None,
        extras_missing={name: extras.missing(name) for name in extras.EXTRAS}, vm=vm_rec,
        vm_boot_s={k: float(v) for k, v in (cache.get("last_ready_s") or {}).items() if isinstance(v, (int, float))},
        images=cached, disk_free=shutil.disk_usage(Path.cwd()).free, mem_available=_mem_available(),
        cpus=os.cpu_count() or 1, install_commands={name: extras.install_command(name) for name in extras.EXTRAS},
        checkout=str(top) if (top := bundled.checkout()) is not None else None)
