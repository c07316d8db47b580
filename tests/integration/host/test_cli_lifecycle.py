"""The user's path through the real CLI, from this host: up (booting the lab VM where this
kernel lacks bonding/netem), status, exec with name resolution, bad input, down."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from linklab import kernel
from linklab.errors import EXIT_NO_LAB
from tests.integration.host.cli import linklab

ROOT = Path(__file__).resolve().parents[3]
LAB = "itcli"
# `up` of bond2 boots the lab VM where this kernel lacks bonding (its test says which it did)
pytestmark = pytest.mark.lab_vm


def qemu_with_our_mark() -> list[int]:
    from linklab import state
    from linklab.vm.launcher import find_orphan_vms
    return find_orphan_vms(state.state_dir())


@pytest.fixture(scope="module")
def lab_up():
    res = linklab("up", "topologies/bond2.yaml", "--name", LAB)
    assert res.returncode == 0, res.stdout + res.stderr
    yield res
    linklab("down", LAB)


def test_bad_topology_exits_2_and_changes_nothing(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nhosts: {h1: {}, h2: {}}\nlinks: [{endpoints: [h1, h2], bond: {mode: rr}}]\n")
    vms_before = qemu_with_our_mark()
    res = linklab("up", str(bad))
    assert res.returncode == 2
    assert "links[0].bond.mode (line 3): unknown mode 'rr' (valid: balance-rr, active-backup" in res.stderr
    assert qemu_with_our_mark() == vms_before  # no VM booted for a file that cannot be built
    assert "bad" not in linklab("vm", "status").stdout


def test_up_says_where_it_runs(lab_up):
    out = lab_up.stdout
    if kernel.missing_features():
        assert "runs in the lab VM" in out and "this kernel lacks" in out
    assert f"lab {LAB} is up" in out


def test_status_reads_the_bond_back_live(lab_up):
    res = linklab("status", LAB)
    assert res.returncode == 0, res.stderr
    assert "h1:bond0 balance-rr, members 2/2 up" in res.stdout and "h2:bond0 balance-rr" in res.stdout
    assert "htb rate 100mbit" in res.stdout or "htb rate 1gbit" in res.stdout
    # The default host-port queue: 10 ms at any scale (100 Mbit/s in the VM, 1 Gbit/s natively).
    assert "bfifo limit 125000b" in res.stdout or "bfifo limit 1250000b" in res.stdout


def test_exec_resolves_lab_host_names(lab_up):
    res = linklab("exec", "--lab", LAB, "h1", "--", "ping", "-c", "3", "-i", "0.2", "h2")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "3 received" in res.stdout and "(10.77.0.2)" in res.stdout


def test_exec_exit_code_comes_back(lab_up):
    res = linklab("exec", "--lab", LAB, "h1", "--", "sh", "-c", "exit 7")
    assert res.returncode == 7


def test_exec_sees_the_nodes_own_network_and_sysfs_and_leaves_the_machines_alone(lab_up):
    # What `ip netns exec` gives a command, whichever way linklab enters the node: its own
    # interfaces, a /sys that describes them, the lab's hosts file; the machine's own /sys
    # (the lab VM's, or this host's) untouched afterwards.
    res = linklab("exec", "--lab", LAB, "h1", "--", "sh", "-c", "ls /sys/class/net; echo --; cat /etc/hosts")
    assert res.returncode == 0, res.stdout + res.stderr
    sysfs, hosts = res.stdout.split("--\n")
    assert set(sysfs.split()) - {"bonding_masters"} == {"lo", "bond0", "bond0-m0", "bond0-m1"}, sysfs
    assert "10.77.0.2" in hosts and "h2" in hosts, hosts
    outside = ["vm", "run", "--", "ls", "/sys/class/net"] if kernel.missing_features() else None
    mine = linklab(*outside).stdout if outside else "\n".join(os.listdir("/sys/class/net"))
    assert "bond0" not in mine.split(), mine


def test_the_prompt_runs_node_commands_and_pingall_from_this_host(lab_up):
    res = subprocess.run([sys.executable, "-m", "linklab", "cli", "--lab", LAB], cwd=ROOT, capture_output=True,
                         text=True, timeout=300, input="pingall\nh2 ip -br link show bond0\nh1 sh -c 'exit 4'\nexit\n")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "*** Results: 0% dropped (2/2 received)" in res.stdout, res.stdout
    assert re.search(r"bond0\s+UP\s", res.stdout), res.stdout


def test_exec_names_the_valid_nodes_of_an_unknown_one(lab_up):
    res = linklab("exec", "--lab", LAB, "h9", "--", "true")
    assert res.returncode == 2
    assert f"unknown node 'h9' in lab {LAB} (valid: h1, h2)" in res.stderr


def test_set_changes_the_running_lab(lab_up):
    res = linklab("set", "--lab", LAB, "links[bond].bond.mode=active-backup")
    assert res.returncode == 0, res.stderr
    assert "active-backup, members 2/2 up" in linklab("status", LAB).stdout
    bad = linklab("set", "--lab", LAB, "links[bond].bond.mode=rr")
    assert bad.returncode == 2 and "unknown mode 'rr'" in bad.stderr
    assert "active-backup" in linklab("status", LAB).stdout  # a bad change changed nothing


def test_down_removes_the_lab_and_stops_the_vm(lab_up):
    res = linklab("down", LAB)
    assert res.returncode == 0, res.stdout + res.stderr
    assert linklab("status", LAB).returncode == EXIT_NO_LAB
    if kernel.missing_features():
        assert "stopping the lab VM" in res.stdout
        assert qemu_with_our_mark() == []
