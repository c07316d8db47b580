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


def test_a_vm_run_session_keeps_the_vm_from_an_automatic_stop_until_it_ends(tmp_path, monkeypatch):
    """Another process's `linklab vm run` counts as a use of the VM (the last lab's `down`
    stopped the VM under a running session); this process's own session does not count for
    itself, and a session whose process is gone counts for nothing and its record goes."""
    import json
    import os
    import subprocess

    from linklab import placement, procs

    vm = LabVM(tmp_path, rwdirs=[tmp_path])
    with vm.session():
        assert (vm.dir / "sessions" / str(os.getpid())).exists() and vm.sessions() == []
    assert not (vm.dir / "sessions" / str(os.getpid())).exists()
    other = subprocess.Popen(["sleep", "30"])
    try:
        (vm.dir / "sessions" / str(other.pid)).write_text(json.dumps(procs.identity(other.pid)))
        (vm.dir / "sessions" / "999999999").write_text(json.dumps({"pid": 999999999, "start": 1, "comm": "python"}))
        assert vm.sessions() == [other.pid] and not (vm.dir / "sessions" / "999999999").exists()
        stopped, said = [], []
        monkeypatch.setattr(placement, "lab_vm", lambda: vm)
        monkeypatch.setattr(placement, "vm_labs", lambda: [])
        monkeypatch.setattr(LabVM, "running", lambda self: True)
        monkeypatch.setattr(LabVM, "info", lambda self: {"pid": 1})
        monkeypatch.setattr(LabVM, "stop", lambda self, say=print: stopped.append(True))
        assert placement.stop_vm_if_unused(say=said.append) is False and not stopped
        assert f"pid {other.pid}" in said[0]
    finally:
        other.kill()
        other.wait()
    assert vm.sessions() == [] and placement.stop_vm_if_unused(say=said.append) is True and stopped == [True]
