"""The interpreter's libraries shared cached with the lab VM (linklab/vm/pylibs.py): which
directories, how QEMU and the guest's agent are told, and what says that they changed."""

from __future__ import annotations

import sysconfig

from linklab.vm import pylibs


def paths(tmp_path, **kw):
    base = {"stdlib": tmp_path / "py/lib/python3.11", "platstdlib": tmp_path / "venv/lib/python3.11",
            "purelib": tmp_path / "venv/lib/python3.11/site-packages",
            "platlib": tmp_path / "venv/lib/python3.11/site-packages"}
    base.update(kw)
    for p in base.values():
        p.mkdir(parents=True, exist_ok=True)
    return {k: str(v) for k, v in base.items()}


def test_library_dirs_each_once_and_none_inside_another(tmp_path, monkeypatch):
    monkeypatch.setattr(sysconfig, "get_paths", lambda: paths(tmp_path))
    # A venv: its platstdlib holds its site-packages, which is not mounted a second time.
    assert pylibs.library_dirs() == [tmp_path / "py/lib/python3.11", tmp_path / "venv/lib/python3.11"]
    # No venv: site-packages under the stdlib directory (a source build) is inside it.
    monkeypatch.setattr(sysconfig, "get_paths", lambda: paths(
        tmp_path, platstdlib=tmp_path / "py/lib/python3.11", purelib=tmp_path / "py/lib/python3.11/site-packages",
        platlib=tmp_path / "py/lib/python3.11/site-packages"))
    assert pylibs.library_dirs() == [tmp_path / "py/lib/python3.11"]
    # A directory that does not exist is left out.
    monkeypatch.setattr(sysconfig, "get_paths", lambda: {**paths(tmp_path), "platstdlib": str(tmp_path / "gone")})
    assert pylibs.library_dirs() == [tmp_path / "py/lib/python3.11", tmp_path / "venv/lib/python3.11/site-packages"]


def test_qemu_and_the_agent_are_told_the_same_tags(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    args = pylibs.qemu_args(dirs)
    assert args == ["-fsdev", f"local,id=llpy0,path={dirs[0]},security_model=none,readonly=on,multidevs=remap",
                    "-device", "virtio-9p-pci,fsdev=llpy0,mount_tag=llpy0",
                    "-fsdev", f"local,id=llpy1,path={dirs[1]},security_model=none,readonly=on,multidevs=remap",
                    "-device", "virtio-9p-pci,fsdev=llpy1,mount_tag=llpy1"]
    assert pylibs.agent_arg(dirs) == f"llpy0={dirs[0]},llpy1={dirs[1]}"
    assert pylibs.qemu_args([]) == [] and pylibs.agent_arg([]) == ""


def test_the_stamp_changes_with_an_installed_package_not_with_a_written_pyc(tmp_path, monkeypatch):
    p = paths(tmp_path)
    monkeypatch.setattr(sysconfig, "get_paths", lambda: p)
    site = tmp_path / "venv/lib/python3.11/site-packages"
    (site / "yaml").mkdir()
    before = pylibs.stamp()
    (site / "yaml" / "__pycache__").mkdir()  # a host process wrote a missing .pyc
    assert pylibs.stamp() == before
    (site / "newpkg-1.0.dist-info").mkdir()  # pip installed something
    assert pylibs.stamp() != before


def test_the_guest_mounts_each_tag_cached_and_read_only_and_survives_a_failure(monkeypatch):
    from linklab.errors import CommandFailed
    ran = []

    def run(argv, **kw):
        ran.append(argv)
        if argv[-1] == "/bad":
            raise CommandFailed(argv, 32, "", "mount: unknown tag")
    monkeypatch.setattr(pylibs.runner, "run", run)
    assert pylibs.mount("llpy0=/lib/py,llpy1=/bad") == ["/lib/py"]
    assert ran[0] == ["mount", "-t", "9p", "-o", pylibs.MOUNT_OPTS, "llpy0", "/lib/py"]
    assert "cache=loose" in pylibs.MOUNT_OPTS.split(",") and "ro" in pylibs.MOUNT_OPTS.split(",")
    assert pylibs.mount("") == []
