"""What `make setup` and each optional group install (linklab/setup_groups.py, scripts/setup.sh),
that each package is listed once, that the doctor's and the features' fix commands are the
groups', and that `make setup` asks for the main group only."""

import os
import re
import subprocess
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
from tests.unit.test_doctor import VM_MACHINE

from linklab import doctor, extras, setup_groups
from linklab.doctor import assess
from linklab.setup_groups import GROUPS, apt, closure, fix_command, group_of

ROOT = Path(__file__).resolve().parents[2]
MAIN = ["iproute2", "iputils-ping", "iperf3", "traceroute", "ethtool", "kmod", "qemu-system-x86", "linux-image-amd64",
        "busybox-static", "udev", "binutils", "file"]
OPTIONAL = ["openvswitch-switch", "docker.io", "mmdebstrap", "chromium", "mininet", "bridge-utils", "tmux", "frr",
            "procps"]
ALL_PACKAGES = {p for g in GROUPS.values() for p in g.apt}


def test_the_main_group_is_what_a_sweep_in_the_lab_vm_runs():
    assert apt([]) == MAIN == list(GROUPS["main"].apt)
    assert not set(OPTIONAL) & set(apt([])) and "sysstat" not in ALL_PACKAGES  # nothing runs sysstat
    assert setup_groups.extras([]) == []  # the main job's Python side: pyproject.toml's dependencies


@pytest.mark.parametrize("group, adds, extras_", [
    ("ovs", ["openvswitch-switch"], []),
    ("sdn", ["openvswitch-switch"], ["sdn"]),
    ("containers", ["docker.io"], []),
    ("images", ["mmdebstrap"], []),
    ("frr", ["frr"], []),
    ("mininet", ["mininet", "bridge-utils"], []),
    ("cluster", [], ["cluster"]),
    ("docs", [], ["docs"]),
    ("bench", ["mininet", "bridge-utils"], ["cluster"]),
])
def test_each_group_adds_its_own_to_the_main_job(group, adds, extras_):
    assert apt([group]) == MAIN + adds
    assert setup_groups.extras([group]) == extras_


def test_the_test_group_is_everything_the_suite_uses():
    assert set(apt(["test"])) == ALL_PACKAGES  # frr too: the host tier runs an OSPF lab
    assert sorted(setup_groups.extras(["test"])) == sorted(extras.EXTRAS)


def test_no_package_or_extra_is_listed_twice():
    listed = [p for g in GROUPS.values() for p in g.apt]
    assert len(listed) == len(set(listed)), [p for p in listed if listed.count(p) > 1]
    named = [e for g in GROUPS.values() for e in g.extras]
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert sorted(named) == sorted(extras.EXTRAS) == sorted(pyproject)
    assert closure(["test", "sdn"]) == ["main", "test", "sdn", "ovs", "containers", "images", "frr", "mininet", "irtt", "cluster",
                                        "docs"]


# Files that may name packages: the groups themselves; the container image's own contents (what runs
# inside a container node, not on this machine); prose.
NOT_LISTS = {"linklab/setup_groups.py", "linklab/docker/images.py"}


def test_no_other_file_writes_a_package_list():
    files = [ROOT / "Makefile", ROOT / ".ci/run", *ROOT.glob("scripts/*.sh"), *ROOT.glob("linklab/**/*.py"),
             *ROOT.glob("bench/*.py"), *ROOT.glob("tests/*.py")]
    # A package named by an English word ("file") is not counted: prose says it without listing.
    words = re.compile(r"(?<![\w.-])(" + "|".join(map(re.escape, ALL_PACKAGES - {"file"})) + r")(?![\w-])")
    lists = []
    for f in files:
        if str(f.relative_to(ROOT)) in NOT_LISTS:
            continue
        for n, line in enumerate(f.read_text().splitlines(), 1):
            if line.strip().startswith("#"):  # prose
                continue
            if len(set(words.findall(line))) >= 3:
                lists.append(f"{f.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not lists


def test_the_doctors_fixes_are_the_groups_commands():
    v = assess(replace(VM_MACHINE, checkout="/src/linklab", programs={}, vm_kernel=None, root=False))
    fixes = {f.name: f.fix for f in v.findings}
    programs = [*doctor.MAIN_TOOLS, *(prog for prog, _ in doctor.OPTIONAL_TOOLS), *doctor.VM_TOOLS]
    for prog in programs:
        pkg = setup_groups.PROVIDES[prog]
        group = group_of(pkg)
        assert pkg in apt([group])
        want = "sudo make setup" if group == "main" else f"sudo /src/linklab/scripts/setup.sh --with {group}"
        assert fixes["qemu" if prog in doctor.VM_TOOLS else prog] == want, prog
    assert fixes["ovs-vswitchd"] == "sudo /src/linklab/scripts/setup.sh --with ovs"
    assert fixes["chromium"] == "sudo /src/linklab/scripts/setup.sh --with test"
    assert fixes["kernel"] == "sudo make setup"


def test_installed_elsewhere_the_fix_is_apt_get_of_the_package():
    assert fix_command("ovs", root=True, checkout=None) == "apt-get install openvswitch-switch"
    assert fix_command("sdn", root=False, checkout=None) == "sudo apt-get install openvswitch-switch"
    assert fix_command("main", root=True, checkout=None, package="iperf3") == "apt-get install iperf3"
    assert fix_command("mininet", root=True, checkout="/c") == "/c/scripts/setup.sh --with mininet"


def test_a_missing_extra_in_a_checkout_names_its_group():
    assert extras.install_command("sdn").startswith(f"{'' if os.geteuid() == 0 else 'sudo '}{ROOT}/scripts/setup.sh --with sdn,")
    assert f"{ROOT}/scripts/setup.sh --with test" in extras.install_command("test")


def _make_n(target):
    out = subprocess.run(["make", "-n", "--no-print-directory", "-C", str(ROOT), target], capture_output=True, text=True,
                         check=True).stdout
    return [line for line in out.splitlines() if not line.startswith("make[")]


@pytest.mark.parametrize("target", ["setup", "lab-up", "sweep", "report"])
def test_make_setup_installs_the_main_group_only(target):
    lines = _make_n(target)
    assert lines[0] == "bash scripts/setup.sh"
    assert not any("--with" in line for line in lines)


@pytest.mark.parametrize("target, group", [("test", "test"), ("test-unit", "test"), ("images", "images"),
                                           ("docs", "docs"), ("bench", "bench")])
def test_a_target_that_needs_a_group_installs_it(target, group):
    lines = _make_n(target)
    assert lines[0] == f"bash scripts/setup.sh --with {group}"
    assert "bash scripts/setup.sh" not in lines[1:]  # not the main group again, as a prerequisite


def _setup_as_user(tmp_path, *args):
    """scripts/setup.sh as a non-root user on a machine with no package installed: it stops at
    the Debian packages (exit 4), before the virtualenv, naming what it would install."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "id").write_text("#!/bin/sh\necho 1000\n")
    (fake / "dpkg-query").write_text("#!/bin/sh\nexit 1\n")
    for f in fake.iterdir():
        f.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    return subprocess.run(["bash", str(ROOT / "scripts/setup.sh"), *args], capture_output=True, text=True, env=env,
                          timeout=60)


def test_setup_sh_alone_asks_for_the_main_group(tmp_path):
    r = _setup_as_user(tmp_path)
    assert r.returncode == 4
    assert f"need root to install: {' '.join(MAIN)}: run  sudo {ROOT}/scripts/setup.sh\n" in r.stderr.replace(
        f"{ROOT}/scripts/../scripts", f"{ROOT}/scripts")


def test_setup_sh_with_a_group_asks_for_it_too(tmp_path):
    r = _setup_as_user(tmp_path, "--with", "sdn")
    assert r.returncode == 4
    assert f"need root to install: {' '.join(MAIN)} openvswitch-switch: run  sudo " in r.stderr
    assert r.stderr.rstrip().endswith("setup.sh --with sdn")


def test_setup_sh_refuses_an_unknown_group(tmp_path):
    r = _setup_as_user(tmp_path, "--with", "ovss")
    assert r.returncode == 2 and "unknown group 'ovss': choose from main, ovs, sdn" in r.stderr


def _pins(name):
    return dict(re.findall(r"^([a-z0-9._-]+)==(\S+)", (ROOT / name).read_text(), re.M))


def test_requirements_main_is_the_main_jobs_subset_at_the_same_pins():
    main, everything = _pins("requirements-main.txt"), _pins("requirements.txt")
    assert main and all(everything.get(k) == v for k, v in main.items())
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.split(r"[<>=!\[ ;]", d, maxsplit=1)[0].lower() for d in deps}
    assert names <= set(main)
    assert not {"os-ken", "ray", "mkdocs", "pytest", "ruff"} & set(main)
