"""Ownership: a lab owns exactly what it made (lab name + id + checkout); `down` removes only
that, `clean` only what is provably abandoned. The kernel is replaced by a dict of namespaces
-> loopback mark, so these run without root."""

import json

import pytest

import linklab.backends.linux.backend as linux
from linklab import cli, lab, placement, state
from linklab.backends.linux.names import current_home, mark, netns_name
from linklab.errors import EXIT_NO_LAB, StateError

TOPO = "tests/integration/data/one_link.yaml"
REAL_REMOVE_DIR = linux.hostsfile.remove_dir  # World replaces it; a test that checks hosts dirs puts it back


class World:
    """Namespaces on a fake machine: name -> lo ifalias (None: a namespace without a mark)."""

    def __init__(self, monkeypatch):
        self.ns = {}
        monkeypatch.setattr(linux.netns, "listnetns", lambda *a: list(self.ns))
        # Never the real kernel from a unit test: creating anything is a test failure.
        monkeypatch.setattr(linux.netns, "create", lambda ns, *a: (_ for _ in ()).throw(AssertionError(f"created {ns}")))
        monkeypatch.setattr(linux.netlink, "create", lambda ns, *a: (_ for _ in ()).throw(AssertionError(f"created {ns}")))
        monkeypatch.setattr(linux, "read_mark", lambda ns: self.ns.get(ns))
        monkeypatch.setattr(linux, "remove_netns", lambda ns, *table: self.ns.pop(ns, None))
        monkeypatch.setattr(linux.hostsfile, "remove_dir", lambda d, name: False)


@pytest.fixture
def world(tmp_path, monkeypatch):
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("LINKLAB_IN_VM", raising=False)
    return World(monkeypatch)


def lab_state(name, lab_id, status="up", nodes=("h1", "h2"), kind="native"):
    nss = [netns_name(name, n) for n in nodes]
    state.save({"lab": name, "status": status, "backend": "linux", "placement": {"kind": kind},
                "topology": {"path": TOPO, "overrides": []},
                "owned": {"id": lab_id, "home": current_home(), "namespaces": nss}})
    return nss


def mark_all(world, nss, name, lab_id, home=None):
    for ns in nss:
        world.ns[ns] = mark(name, lab_id, home)


def test_clean_without_a_name_leaves_live_labs_and_removes_crashed_ones(world):
    live_a = lab_state("a", "id-a")
    mark_all(world, live_a, "a", "id-a")
    live_b = lab_state("b", "id-b")
    mark_all(world, live_b, "b", "id-b")
    crashed_building = lab_state("c", "id-c", status="building")  # killed during up: no command holds it
    mark_all(world, crashed_building, "c", "id-c")
    mark_all(world, ["ll-d-h1"], "d", "id-d")  # killed before... or its state file lost: no state
    world.ns["ll-user-own"] = None  # a user's namespace, never linklab's
    removed = lab.clean(None, say=lambda *_: None)
    assert set(world.ns) == {*live_a, *live_b, "ll-user-own"}
    assert state.all_labs() == ["a", "b"]
    assert any(r.startswith("netns ll-d-h1") for r in removed) and "state c" in " ".join(removed)


def test_clean_dry_run_changes_nothing_and_says_why(world):
    mark_all(world, ["ll-d-h1"], "d", "id-d")
    lab_state("c", "id-c", status="building")
    before = dict(world.ns)
    removed = lab.clean(None, say=lambda *_: None, dry_run=True)
    assert world.ns == before and state.all_labs() == ["c"]
    assert any("ll-d-h1" in r and "no live lab" in r for r in removed)
    assert any(r.startswith("state c (crashed while building") for r in removed)


def test_clean_leaves_other_checkouts_labs_unless_told(world):
    mark_all(world, ["ll-x-h1"], "x", "id-x", home="0th3rch3ck0")
    said = []
    lab.clean(None, say=said.append)
    assert "ll-x-h1" in world.ns and any("another checkout" in s for s in said)
    lab.clean(None, say=said.append, other_checkouts=True)
    assert "ll-x-h1" not in world.ns


def test_clean_leaves_a_lab_another_command_is_changing(world):
    nss = lab_state("busy", "id-busy", status="building")
    mark_all(world, nss, "busy", "id-busy")
    with state.locked("busy"):
        lab.clean(None, say=lambda *_: None)
    assert set(nss) <= set(world.ns) and state.all_labs() == ["busy"]


def test_down_removes_its_own_lab_only_not_a_same_named_lab_of_another_checkout(world):
    mine = lab_state("bond2", "id-mine", nodes=("h1",))
    mark_all(world, mine, "bond2", "id-mine")
    mark_all(world, ["ll-bond2-h9"], "bond2", "id-theirs", home="0th3rch3ck0")
    mark_all(world, ["ll-bond2-h8"], "bond2", "id-older")  # same name, this checkout, another id
    lab.down("bond2", say=lambda *_: None)
    assert "ll-bond2-h1" not in world.ns
    assert {"ll-bond2-h9", "ll-bond2-h8"} <= set(world.ns)


def test_a_users_namespace_that_blocks_up_is_never_recorded_nor_removed_by_down(world):
    world.ns["ll-onelink-h1"] = None  # the user's own, made before linklab ran
    with pytest.raises(StateError, match="not this lab's"):
        lab.up(TOPO, say=lambda *_: None)
    assert state.all_labs() == []  # nothing recorded: `down` has nothing to remove
    with pytest.raises(StateError, match="no lab named"):
        lab.down("onelink")
    assert "ll-onelink-h1" in world.ns


def test_destroy_leaves_a_listed_namespace_now_marked_by_someone_else(world):
    world.ns["ll-a-h1"] = mark("a", "other-id")
    said = []
    linux.LinuxBackend().destroy("a", {"id": "id-a", "namespaces": ["ll-a-h1"]}, say=said.append)
    assert "ll-a-h1" in world.ns and "leaving ll-a-h1" in said[0]


# -- the lab VM: only stopped when no lab uses it; never booted for nothing ---------------------

class FakeVM:
    def __init__(self, pid=111, running=True):
        self.pid, self._running, self.stopped = pid, running, False
        self.json_path = None

    def running(self):
        return self._running

    def info(self):
        return {"pid": self.pid}

    def stop(self, say=print):
        self.stopped = True

    def sessions(self):
        return []  # no other process's `vm run` (LabVM.sessions)

    def ensure_running(self, say=print):
        raise AssertionError("booted the lab VM")


def test_clean_lab_kills_only_vms_that_are_not_the_live_one(world, monkeypatch):
    vm = FakeVM()
    killed = []
    monkeypatch.setattr(placement, "lab_vm", lambda: vm)
    monkeypatch.setattr(placement, "forward", lambda *a, **k: 0)
    monkeypatch.setattr(placement, "vm_labs", lambda: ["other-lab"])
    monkeypatch.setattr("linklab.vm.launcher.find_orphan_vms", lambda d: [111, 222])
    monkeypatch.setattr("linklab.procs.stop", lambda pids, **k: killed.extend(pids) or [])
    assert cli.main(["clean", "bond2"]) == 0
    assert killed == [222] and not vm.stopped


def test_exec_on_a_lab_that_does_not_exist_never_boots_the_vm(world, monkeypatch, capsys):
    monkeypatch.setattr(placement, "lab_vm", lambda: FakeVM(running=False))
    monkeypatch.setattr(placement, "forward", lambda *a, **k: (_ for _ in ()).throw(AssertionError("forwarded")))
    assert cli.main(["exec", "--lab", "bond2", "h1", "--", "ping", "-c1", "h2"]) == EXIT_NO_LAB
    assert "no lab named 'bond2'" in capsys.readouterr().err


def test_exec_into_a_vm_lab_goes_straight_to_the_nodes_namespace(world, monkeypatch, capsys):
    lab_state("vmlab", "00000001", kind="vm")
    rec = state.load("vmlab")
    forwarded = []
    monkeypatch.setattr(placement, "forward", lambda argv, **k: forwarded.append((argv, k.get("netns"))) or 0)
    # A state file written before namespaces were recorded: linklab in the guest works it out.
    assert cli.main(["exec", "--lab", "vmlab", "h1", "--", "ping", "-c1", "h2"]) == 0
    assert forwarded[-1] == (["exec", "--lab", "vmlab", "h1", "--", "ping", "-c1", "h2"], None)
    state.save({**rec, "netns": {"h1": netns_name("vmlab", "h1"), "h2": netns_name("vmlab", "h2")}})
    assert cli.main(["exec", "--lab", "vmlab", "h2", "--", "ping", "-c1", "h1"]) == 0
    assert forwarded[-1] == (["ping", "-c1", "h1"], netns_name("vmlab", "h2"))
    assert cli.main(["exec", "--lab", "vmlab", "h9", "--", "true"]) == 2
    assert "unknown node 'h9' in lab vmlab (valid: h1, h2)" in capsys.readouterr().err
    assert len(forwarded) == 2


def test_vm_run_help_is_help_not_a_command_for_the_vm(monkeypatch, capsys):
    monkeypatch.setattr(placement, "forward", lambda *a, **k: (_ for _ in ()).throw(AssertionError("forwarded")))
    with pytest.raises(SystemExit) as e:
        cli.main(["vm", "run", "--help"])
    assert e.value.code == 0 and "--if-needed" in capsys.readouterr().out


def test_a_vm_booted_for_a_command_that_leaves_no_lab_is_stopped(world, monkeypatch):
    vm = FakeVM(running=False)

    def forward(argv, say=print, boot=True):
        vm._running = True  # booted; the command then failed inside
        return 2
    monkeypatch.setattr(placement, "lab_vm", lambda: vm)
    monkeypatch.setattr(placement, "forward", forward)
    assert placement.forward_booting(["up", "x.yaml"], say=lambda *_: None) == 2
    assert vm.stopped


def test_a_vm_the_user_started_is_kept_with_no_lab(world, monkeypatch, tmp_path):
    vm = FakeVM()
    vm.json_path = tmp_path / "vm.json"
    vm.info = lambda: json.loads(vm.json_path.read_text()) if vm.json_path.exists() else {"pid": 111}
    monkeypatch.setattr(placement, "lab_vm", lambda: vm)
    placement.keep_vm()
    assert placement.stop_vm_if_unused(say=lambda *_: None) is False and not vm.stopped


def test_hosts_dir_left_empty_by_a_killed_down_is_removed_but_not_one_with_files(tmp_path):
    from linklab.backends.linux.hostsfile import remove_dir
    empty = tmp_path / "ll-lab-h2"
    empty.mkdir()
    (empty / ".hosts.tmp").write_text("partial")
    assert remove_dir(empty, "lab") is True and not empty.exists()
    someone = tmp_path / "ll-lab-h3"
    someone.mkdir()
    (someone / "resolv.conf").write_text("nameserver 1.1.1.1\n")  # not ours: kept
    assert remove_dir(someone, "lab") is False and (someone / "resolv.conf").exists()


def test_clean_of_a_container_killed_mid_up_removes_its_hosts_dir_too(tmp_path, monkeypatch):
    # Killed after the node's hosts file was written but before the state listed it: the
    # container is the orphan clean finds, and its hosts dir (same namespace name) goes with it;
    # a directory of that name holding only someone else's file stays.
    from linklab.backends.linux import hostsfile
    monkeypatch.setattr(linux, "hosts_dir", lambda ns: str(tmp_path / ns))
    for kind in linux.kinds.REGISTRY.values():
        monkeypatch.setattr(kind, "remove_marked", lambda names: [])
    (tmp_path / "ll-lab-c1").mkdir()
    (tmp_path / "ll-lab-c1" / "hosts").write_text(f"# {mark('lab', 'ab12', current_home())}: written by linklab\n")
    (tmp_path / "ll-lab-c2").mkdir()
    (tmp_path / "ll-lab-c2" / "resolv.conf").write_text("nameserver 192.0.2.1\n")
    removed = linux.LinuxBackend().remove_orphans(["container ll-lab-c1", "container ll-lab-c2"])
    assert removed == [f"hosts {tmp_path / 'll-lab-c1'}"] and not (tmp_path / "ll-lab-c1").exists()
    assert hostsfile.mark_of(tmp_path / "ll-lab-c2") is None and (tmp_path / "ll-lab-c2" / "resolv.conf").exists()


def test_down_removes_the_hosts_dir_of_each_namespace_it_owned_even_unlisted(world, tmp_path, monkeypatch):
    # Killed after writing h1's hosts file but before the state listed it: the namespace is
    # listed, so its hosts dir (same name, this lab's mark) goes too; another lab's stays.
    monkeypatch.setattr(linux.hostsfile, "remove_dir", REAL_REMOVE_DIR)
    monkeypatch.setattr(linux, "hosts_dir", lambda ns: str(tmp_path / "etc" / ns))
    nss = lab_state("lab", "ab12")
    mark_all(world, nss, "lab", "ab12", current_home())
    for ns, owner in ((nss[0], "lab"), (nss[1], "other")):
        d = tmp_path / "etc" / ns
        d.mkdir(parents=True)
        (d / "hosts").write_text(f"# {mark(owner, 'ab12', current_home())}: written by linklab\n")
    owned = state.load("lab")["owned"]
    removed = linux.LinuxBackend().destroy("lab", owned, say=lambda *_: None)
    assert f"hosts {tmp_path / 'etc' / nss[0]}" in removed and not (tmp_path / "etc" / nss[0]).exists()
    assert (tmp_path / "etc" / nss[1] / "hosts").exists()
