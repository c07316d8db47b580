"""`linklab doctor`'s decision (linklab/doctor.py assess): made-up machines in, findings and the
exit code out. One probe of this machine checks that looking changes nothing."""

import os
from dataclasses import replace

import pytest

from linklab import doctor
from linklab.cli import main
from linklab.doctor import Probes, assess, render

TOOLS = {"iperf3": "/usr/bin/iperf3", "ping": "/usr/bin/ping", "tc": "/usr/sbin/tc"}
NO_FEATURES = {"bonding": False, "netem": False, "openvswitch": False, "namespaces": True, "forwarding": True}
ALL_FEATURES = {k: True for k in NO_FEATURES}
GiB = 1 << 30

# This machine's kind: a kernel without bonding or netem, QEMU and a Debian kernel for the lab VM.
VM_MACHINE = Probes(
    root=True, in_lab_vm=False, kernel_release="6.18.44-fc", kernel=NO_FEATURES,
    programs={**TOOLS, "qemu-system-x86_64": "/usr/bin/qemu-system-x86_64", "strings": "/usr/bin/strings", "file": "/usr/bin/file"}, kvm=True, kvm_failed=None,
    vm_kernel="/boot/vmlinuz-6.1.0-57-amd64", vm_kernel_features={"bonding": True, "netem": True, "openvswitch": True},
    virtme="/venv/bin/virtme-run", extras_missing={"sdn": [], "cluster": ["ray"], "docs": ["mkdocs"], "test": []},
    vm=None, vm_boot_s={}, images=[], disk_free=50 * GiB, mem_available=8 * GiB, cpus=2,
    install_commands={"cluster": "/venv/bin/python -m pip install 'ray[client]<3,>=2.60'", "docs": "pip install mkdocs"})
# A kernel that has it all, run as root, no QEMU at all.
NATIVE_MACHINE = replace(VM_MACHINE, kernel=ALL_FEATURES, programs=TOOLS, vm_kernel=None, vm_kernel_features={})


def finding(v, name):
    (f,) = [f for f in v.findings if f.name == name]
    return f


def test_a_kernel_without_bonding_runs_the_main_job_in_the_lab_vm():
    v = assess(VM_MACHINE)
    assert (v.native, v.vm, v.exit_code) == (False, True, 0)
    assert v.summary == "the main job can run in the lab VM (KVM)"
    assert not finding(v, "bonding").ok and not finding(v, "bonding").blocks_main


def test_a_full_kernel_runs_it_natively_without_qemu():
    v = assess(NATIVE_MACHINE)
    assert (v.native, v.vm, v.exit_code) == (True, False, 0)
    assert v.summary == "the main job can run natively on this kernel"
    assert finding(v, "qemu").fix == "apt-get install qemu-system-x86"  # root: no sudo


def test_natively_it_needs_root():
    v = assess(replace(NATIVE_MACHINE, root=False))
    assert (v.native, v.exit_code) == (False, 4)
    assert finding(v, "root").blocks_main and finding(v, "qemu").fix == "sudo apt-get install qemu-system-x86"


def test_neither_path_exits_4_and_marks_what_each_lacks():
    v = assess(replace(VM_MACHINE, programs=TOOLS, root=False))
    assert (v.native, v.vm, v.exit_code) == (False, False, 4)
    blocking = {f.name for f in v.findings if f.blocks_main}
    assert blocking == {"qemu", "bonding", "netem", "root"}
    assert "cannot run here" in v.summary
    text = render(v)
    assert "  !! qemu" in text and "fix: sudo apt-get install qemu-system-x86" in text
    assert text.splitlines()[-2].endswith("(exit 4)")


@pytest.mark.parametrize("prog, pkg", [("iperf3", "iperf3"), ("ping", "iputils-ping"), ("tc", "iproute2")])
def test_a_missing_measurement_tool_blocks_both_paths(prog, pkg):
    tools = {k: v for k, v in TOOLS.items() if k != prog}
    v = assess(replace(VM_MACHINE, kernel=ALL_FEATURES, programs={**tools, "qemu-system-x86_64": "/q"}))
    assert v.exit_code == 4 and finding(v, prog).blocks_main and finding(v, prog).fix == f"apt-get install {pkg}"


def test_a_vm_kernel_without_the_modules_is_no_way_out():
    v = assess(replace(VM_MACHINE, vm_kernel_features={"bonding": False, "netem": True}))
    assert v.exit_code == 4
    k = finding(v, "kernel")
    assert not k.ok and "lack bonding" in k.detail and k.fix == "apt-get install linux-image-amd64"


@pytest.mark.parametrize("mem, code", [(2 * GiB, 4), (2 * GiB + 256 * (1 << 20), 0), (None, 0)])
def test_the_lab_vm_needs_its_memory(mem, code):
    v = assess(replace(VM_MACHINE, mem_available=mem))
    assert v.exit_code == code and finding(v, "memory").ok == (code == 0)


def test_too_little_disk_for_results_blocks_the_job():
    v = assess(replace(VM_MACHINE, disk_free=100 << 20))
    assert v.exit_code == 4 and finding(v, "disk").blocks_main and "100 MiB free" in finding(v, "disk").detail


def test_kvm_is_not_required_and_a_failed_kvm_boot_is_told():
    v = assess(replace(VM_MACHINE, kvm_failed="no console output for 15 s"))
    assert v.exit_code == 0 and v.summary == "the main job can run in the lab VM (software emulation)"
    assert not finding(v, "KVM").ok and "no console output for 15 s" in finding(v, "KVM").detail
    assert assess(replace(VM_MACHINE, kvm=False)).exit_code == 0


def test_inside_the_lab_vm_only_the_native_path_counts():
    assert assess(replace(VM_MACHINE, in_lab_vm=True)).exit_code == 4
    assert assess(replace(VM_MACHINE, in_lab_vm=True, kernel=ALL_FEATURES)).exit_code == 0


def test_missing_extras_are_named_with_their_install_command_and_block_nothing():
    v = assess(VM_MACHINE)
    c = finding(v, "[cluster]")
    assert not c.ok and c.detail == "missing (ray)" and c.fix == "/venv/bin/python -m pip install 'ray[client]<3,>=2.60'"
    assert finding(v, "[sdn]").ok and v.exit_code == 0


def test_the_running_vm_and_the_cache_are_shown():
    v = assess(replace(VM_MACHINE, vm={"pid": 42, "accel": "tcg", "labs": ["bond2"]}, vm_boot_s={"tcg": 50.2},
                       images=["linklab_base.tar"]))
    assert finding(v, "state").detail == "running (pid 42, tcg, labs: bond2)"
    assert finding(v, "boots").detail == "last lab VM boot: tcg 50 s"
    assert finding(v, "images").ok and finding(v, "images").detail == "linklab_base.tar"


def test_probing_this_machine_changes_nothing(monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LINKLAB_STATE_DIR", raising=False)
    p = doctor.probe()
    assert isinstance(p.kernel["bonding"], bool) and set(p.extras_missing) == {"sdn", "cluster", "docs", "test"}
    rc = main(["doctor"])
    out = capsys.readouterr().out
    assert rc in (0, 4) and out.splitlines()[-2].endswith(f"(exit {rc})")
    assert os.listdir(tmp_path) == []


LAB_NEEDS = {"ospf3": {}, "bond2": {"bonding": "bonds (link bond)", "sch_htb": "htb rate limits (link bond)"},
             "routed_chain": {"sch_netem": "netem impairments (link core)"},
             "sdn_pair": {"openvswitch": "Open vSwitch switches (switch s1)"}}


def test_each_bundled_lab_is_told_natively_or_in_the_lab_vm_and_for_lack_of_what():
    have = {"bonding": False, "sch_htb": True, "sch_netem": False, "openvswitch": True}
    out = render(assess(replace(VM_MACHINE, labs=LAB_NEEDS, lab_modules=have))).splitlines()
    labs = out[out.index("labs:") + 1:out.index("labs:") + 5]
    assert labs == [
        "  ok ospf3                runs on this kernel  [plain/routed]",
        "  ok bond2                needs the lab VM: this kernel lacks bonding (bonds (link bond))  [bonds]",
        "  ok routed_chain         needs the lab VM: this kernel lacks sch_netem (netem impairments (link core))  [netem]",
        "  ok sdn_pair             runs on this kernel (it has openvswitch)  [OVS]"]
    # No lab VM either: a lab this kernel cannot host is marked, and pointed at the VM's findings.
    v = assess(replace(VM_MACHINE, labs=LAB_NEEDS, lab_modules=have, programs=TOOLS))
    assert not finding(v, "bond2").ok and finding(v, "bond2").fix == "the lab VM's findings above"
    assert finding(v, "ospf3").ok and finding(v, "sdn_pair").ok


@pytest.mark.parametrize("prog, pkg", [("strings", "binutils"), ("file", "file")])
def test_without_virtme_ngs_helpers_the_lab_vm_cannot_boot_and_their_package_is_the_fix(prog, pkg):
    """virtme-ng runs `file` and `strings` on the kernel image (its version) and `file` on busybox
    (static?) before it boots: a fresh Debian has neither, and its first `make lab-up` failed
    (bench/setup_time.sh in a fresh chroot)."""
    programs = {k: v for k, v in VM_MACHINE.programs.items() if k != prog}
    v = assess(replace(VM_MACHINE, programs=programs))
    assert v.vm is False and finding(v, prog).fix.endswith(f"apt-get install {pkg}")
    assert assess(VM_MACHINE).vm is True
