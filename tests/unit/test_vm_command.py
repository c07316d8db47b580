"""The lab VM's virtme-run command line: guest kernel options reach the guest under software
emulation only (a KVM guest boots Debian's kernel as it is)."""

from pathlib import Path

from linklab.vm.launcher import LabVM, VMConfig


def _kopts(cmd: list[str]) -> list[str]:
    head = cmd[:cmd.index("--qemu-opts")]  # QEMU's own arguments after it are not virtme's
    return [head[i + 1] for i, a in enumerate(head) if a == "--kopt"]


def test_kernel_options_are_passed_as_kopts_under_tcg_and_not_under_kvm(tmp_path):
    vm = LabVM(tmp_path, VMConfig(tcg_kernel_args=("tsc=reliable", "no5lvl")), rwdirs=[tmp_path])
    tcg = vm._command(Path("/boot/vmlinuz-x"), "tcg", [tmp_path / "s0"], [])
    assert _kopts(tcg) == ["tsc=reliable", "no5lvl"] and "--disable-kvm" in tcg
    kvm = vm._command(Path("/boot/vmlinuz-x"), "kvm", [tmp_path / "s0"], [])
    assert _kopts(kvm) == [] and "--disable-kvm" not in kvm
    default = LabVM(tmp_path, rwdirs=[tmp_path])._command(Path("/boot/vmlinuz-x"), "tcg", [tmp_path / "s0"], [])
    assert _kopts(default) == []  # Debian's defaults: bench/vm_kernel_args.py found nothing to gain
