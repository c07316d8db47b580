"""Kernel feature detection looks at /sys/module and /lib/modules without loading anything."""

from __future__ import annotations

from linklab import kernel


def test_loaded_module_counts(tmp_path):
    (tmp_path / "sys" / "module" / "bonding").mkdir(parents=True)
    assert kernel.feature_available("bonding", sys_root=tmp_path / "sys", lib_root=tmp_path / "lib")
    assert not kernel.feature_available("sch_netem", sys_root=tmp_path / "sys", lib_root=tmp_path / "lib")


def test_builtin_and_loadable_modules_count(tmp_path):
    moddir = tmp_path / "lib" / "6.1.0-test"
    moddir.mkdir(parents=True)
    (moddir / "modules.builtin").write_text("kernel/net/sched/sch_netem.ko\n")
    (moddir / "modules.dep").write_text(
        "kernel/net/openvswitch/openvswitch.ko.xz: kernel/net/nsh/nsh.ko.xz\nkernel/drivers/net/bonding/bonding.ko.xz:\n")
    kw = dict(release="6.1.0-test", sys_root=tmp_path / "sys", lib_root=tmp_path / "lib")
    assert kernel.feature_available("sch_netem", **kw)
    assert kernel.feature_available("openvswitch", **kw)
    assert kernel.feature_available("bonding", **kw)
    assert not kernel.feature_available("8021q", **kw)
    assert not kernel.feature_available("nsh_missing", **kw)


def test_in_lab_vm(monkeypatch):
    monkeypatch.setenv("LINKLAB_IN_VM", "1")
    assert kernel.in_lab_vm()
    monkeypatch.setenv("LINKLAB_IN_VM", "0")
    assert not kernel.in_lab_vm()
    monkeypatch.delenv("LINKLAB_IN_VM")
    assert not kernel.in_lab_vm()


def test_missing_features_lists_feature_names(monkeypatch):
    monkeypatch.setattr(kernel, "feature_available", lambda module: module == "bonding")
    assert kernel.missing_features() == ["sch_netem", "openvswitch"]


def test_load_modules_reports_failures(monkeypatch):
    from linklab.errors import CommandFailed

    calls = []

    def fake_run(argv, timeout):
        calls.append(argv)
        if argv[1] == "nope":
            raise CommandFailed(argv, 1, "", "modprobe: FATAL: Module nope not found")

    monkeypatch.setattr(kernel, "run", fake_run)
    assert kernel.load_modules(["bonding", "nope", "tun"]) == ["nope"]
    assert calls == [["modprobe", "bonding"], ["modprobe", "nope"], ["modprobe", "tun"]]
