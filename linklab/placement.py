"""Where a command runs: on this kernel, or inside the lab VM.

Decided by the lab (want_vm_for_up, the one decision every command that builds labs asks): the
kernel modules its build uses (the backend says which: bonding for bonds, sch_netem for
impairments, a qdisc module per shaper and `aqm:` discipline, openvswitch for OVS switches).
A lab whose modules this kernel has (a plain or routed lab: namespaces, veth and forwarding)
runs natively; one that needs a module this kernel lacks, or any lab with --vm, runs in a
persistent VM (virtme-ng over the host's root filesystem): the whole linklab command is
forwarded there. The project directory is shared, so state files and results land on the host
as usual. A command on a lab that is up follows it to where it is (lab_is_in_vm).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from linklab import kernel, state
from linklab.model.resolved import Lab

# Pure commands never need a lab kernel.
LOCAL_COMMANDS = {"validate", "show", "schema", "report", "vm", "results", "export", "import", "init", "doctor"}


def lab_vm():
    from linklab.vm.launcher import LabVM
    return LabVM(state.state_dir(), rwdirs=_rwdirs())


def vm_running_in(state_dir: Path) -> bool:
    """Whether the lab VM of another state directory runs (a local cluster node's)."""
    from linklab.vm.launcher import LabVM
    return LabVM(state_dir, rwdirs=[]).running()


def _rwdirs() -> list[Path]:
    dirs = [Path.cwd().resolve()]
    sd = state.state_dir().resolve()
    if not any(sd == d or d in sd.parents for d in dirs):
        dirs.append(sd)
    return dirs


def host_cpu_probe():
    """The probe of the host's CPU around a repetition (linklab/vm/hostcpu.py: HostCpu) where
    the lab runs in the lab VM, whose host records it; None natively."""
    if not kernel.in_lab_vm():
        return None
    from linklab.vm import hostcpu
    told = os.environ.get(hostcpu.ENV)  # the VM's host says where it writes (launcher.run)
    return hostcpu.HostCpu(Path(told) if told else state.state_dir() / "vm" / hostcpu.FILE)


def shared_with_vm() -> list[Path]:
    """Host directories the lab VM writes through to (everything else it writes is lost when it stops)."""
    vm = lab_vm()
    info = vm.info() if vm.running() else None
    return [Path(d) for d in (info or {}).get("rwdirs", [])] or list(vm.rwdirs)


def is_shared_with_vm(path: Path) -> bool:
    """Whether what the lab VM writes at `path` reaches the host (and outlives the VM): under a
    directory the running VM shares, or the one a VM booted now would share."""
    p = Path(path).resolve()
    return any(p == d or d in p.parents for d in shared_with_vm())


def require_shared_with_vm(path: Path, what: str) -> None:
    """Refuse, before anything runs, to let the lab VM read or write `what` where it does not reach
    the host (`linklab ab`'s run directory, `linklab check`'s files; a sweep goes through a spool
    instead: results/spool.py)."""
    if not is_shared_with_vm(path):
        from linklab.errors import UsageError
        shared = shared_with_vm()
        raise UsageError(f"{what} {Path(path).resolve()} is not shared with the lab VM: what it writes there would be "
                         "lost when the VM stops", hint=f"use a path under {' or '.join(map(str, shared))}")


def kernel_needs(labs: Lab | Iterable[Lab]) -> dict[str, str]:
    """The kernel modules these labs' builds use -> what needs each (the first lab that does)."""
    from linklab.backends import get_backend
    backend = get_backend()
    out: dict[str, str] = {}
    for lab in [labs] if isinstance(labs, Lab) else labs:
        for module, why in backend.kernel_needs(lab).items():
            out.setdefault(module, why)
    return out


def machine_wide(labs: Lab | Iterable[Lab]) -> dict[str, str]:
    """The settings these labs ask for that this kernel keeps for the whole machine -> who asks
    (Backend.machine_wide): such a lab runs in the lab VM, whose kernel is the lab's own."""
    from linklab.backends import get_backend
    return get_backend().machine_wide([labs] if isinstance(labs, Lab) else list(labs))


def lacking(needs: dict[str, str], available: Callable[[str], bool]) -> list[str]:
    """The modules of `needs` (kernel_needs) that `available` says a kernel lacks, in order."""
    return [m for m in needs if not available(m)]


def host_has(module: str) -> bool:
    """Whether the host's kernel has `module`: this kernel's answer (kernel.feature_available)
    natively; inside the lab VM, the host's, as it recorded it when it booted the VM
    (host_kernel, kernel.lab_modules_present): what the host would build natively, for a command
    there that must tell (the test suite's split of the exercises between its tiers)."""
    if not kernel.in_lab_vm():
        return kernel.feature_available(module)
    from linklab.errors import EnvironmentProblem
    record = json.loads(os.environ.get("LINKLAB_VM_INFO") or "{}").get("host_kernel")
    if record is None:
        raise EnvironmentProblem("this lab VM has no record of its host's kernel (booted by an older linklab)",
                                 hint="`linklab vm stop` on the host, then run the command again")
    if kernel.config_symbol(module) is None:
        raise EnvironmentProblem(f"whether the host's kernel has {module} is not recorded in the lab VM "
                                 "(only modules linklab knows a configuration symbol of: linklab/kernel.py)")
    return module.replace("-", "_") in record["lab_modules"]


def want_vm_for_up(force_vm: bool, force_native: bool, labs: Lab | Iterable[Lab],
                   available: Callable[[str], bool] | None = None) -> tuple[bool, str]:
    """Whether `labs` (a lab, or every lab a command may build: a sweep's points) run in the lab
    VM, and why, in words for "runs in the lab VM (WHY)". `available`: whether this kernel has a
    module (kernel.feature_available)."""
    if kernel.in_lab_vm():
        return False, "inside the lab VM"
    if force_native:
        return False, "--native"
    if force_vm:
        return True, "--vm"
    needs = kernel_needs(labs)
    missing = lacking(needs, available or kernel.feature_available)
    if missing:
        first, *more = missing
        return True, (f"this kernel lacks {first}, which this lab's {needs[first]} need"
                      + "".join(f", and {m}, which its {needs[m]} need" for m in more))
    shared = machine_wide(labs)
    if shared:
        return True, ("this kernel keeps " + ", ".join(f"{k} ({who})" for k, who in shared.items())
                      + " for the whole machine, not per namespace: set here it would change the host")
    if needs:
        return False, f"this kernel has what this lab needs: {', '.join(needs)}"
    return False, "this lab needs only namespaces, veth pairs and IP forwarding"


def lab_is_in_vm(lab_name: str) -> bool:
    st = state.load(lab_name)
    return bool(st) and st.get("placement", {}).get("kind") == "vm"


def forget_lab_gone_with_vm(lab_name: str) -> bool:
    """A lab recorded in the lab VM while that VM is not running (`linklab vm stop`, a reboot)
    went with it: forget its record, as `linklab down` does, so that it can be built again.
    Whether it was forgotten."""
    if not (lab_is_in_vm(lab_name) and not lab_vm().running()):
        return False
    state.remove(lab_name)
    return True


def forward(argv: list[str], say=print, boot: bool = True, raw: bool = False, netns: str | None = None) -> int:
    """Run `linklab <argv>` (or, with raw, any command; with netns, any command inside that
    namespace of the guest) inside the lab VM, booting it if `boot`, streaming its output;
    returns its exit code."""
    vm = lab_vm()
    if boot:
        info = vm.ensure_running(say=say)
    else:
        if not vm.running():
            from linklab.errors import NoLabUp
            raise NoLabUp("the lab VM is not running (stopped, or the machine restarted)",
                             hint="`linklab up` rebuilds the lab; `linklab clean` forgets it")
        info = vm.info() or {}
    env = {
        "LINKLAB_STATE_DIR": str(state.state_dir().resolve()),
        "LINKLAB_VM_ACCEL_USED": str(info.get("accel", "")),
        "LINKLAB_VM_INFO": json.dumps({k: info.get(k) for k in ("kernel_release", "accel", "cpus", "memory",
                                                                "started_at", "kernel", "host_kernel")}),
        "PYTHONUNBUFFERED": "1",
    }
    for passthrough in ("LINKLAB_DEBUG", "COLUMNS"):
        if passthrough in os.environ:
            env[passthrough] = os.environ[passthrough]
    if raw or netns:
        return vm.run(list(argv), cwd=str(Path.cwd()), env=env, netns=netns)
    # warm: forked from the guest's pre-imported interpreter; a cold import costs 12 s or more under TCG
    return vm.run_linklab(list(argv), cwd=str(Path.cwd()), env=env)


def vm_labs() -> list[str]:
    return [name for name in state.all_labs() if lab_is_in_vm(name)]


def forward_booting(argv: list[str], say=print) -> int:
    """forward(), booting the VM if needed; a VM booted for a command that then leaves no lab
    in it (bad input found in the VM, a refused `up`) is stopped again: no VM runs for nothing."""
    was_running = lab_vm().running()
    try:
        return forward(argv, say=say, boot=True)
    finally:
        if not was_running:
            stop_vm_if_unused(say=say)


def keep_vm() -> None:
    """Mark the running VM as started by the user (`linklab vm start`): kept with no lab."""
    vm = lab_vm()
    info = vm.info()
    if info:
        from linklab.fsutil import write_json_atomic
        write_json_atomic(vm.json_path, {**info, "kept": True})


def stop_vm_if_unused(say=print) -> bool:
    """Stop the lab VM when no lab uses it and no other process runs a command in it (`linklab
    vm run`), unless the user started it with `linklab vm start`."""
    vm = lab_vm()
    if not vm.running() or vm_labs() or (vm.info() or {}).get("kept"):
        return False
    others = vm.sessions()
    if others:
        say(f"linklab: the lab VM stays up: no lab uses it, but `linklab vm run` does (pid {', '.join(map(str, others))})")
        return False
    say("linklab: stopping the lab VM (no lab uses it)")
    vm.stop(say=say)
    return True
