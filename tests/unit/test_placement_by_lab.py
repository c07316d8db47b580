"""Where a lab runs is decided by the lab (linklab/placement.py want_vm_for_up): the kernel modules
its build uses (linklab/backends/linux/needs.py), against a faked set of what this kernel has.
`up` names a missing Python extra before anything is built; doctor tells each bundled lab's place."""

from pathlib import Path

import pytest

from linklab import kernel, lab, placement, provision
from linklab.cli import main
from linklab.errors import EXIT_ENV

ROOT = Path(__file__).resolve().parents[2]
TOPOS = ROOT / "topologies"
# This machine's kind of kernel: htb, tbf and bridges built in; no bonding, netem or OVS.
THIS_KIND = {"sch_htb", "sch_tbf", "bridge", "tun", "tcp_cubic"}
EVERYTHING = THIS_KIND | {"bonding", "sch_netem", "openvswitch", "sch_fq_codel", "sch_cake"}


@pytest.fixture(autouse=True)
def on_the_host(monkeypatch):
    monkeypatch.delenv("LINKLAB_IN_VM", raising=False)


def aqm_lab(tmp_path, aqm="fq_codel", delay=None):
    p = tmp_path / "aqm.yaml"
    extra = f", delay: {delay}" if delay else ""
    p.write_text(f"name: q\nhosts: {{a: {{}}, b: {{}}}}\nlinks: [{{endpoints: [a, b], impair: {{rate: 20mbit, "
                 f"aqm: {aqm}{extra}}}}}]\n")
    return lab.build_lab(p, [])


def test_what_each_kind_of_lab_needs(tmp_path):
    assert list(placement.kernel_needs(lab.build_lab(TOPOS / "bond2.yaml", []))) == ["bonding", "sch_htb"]
    assert placement.kernel_needs(lab.build_lab(TOPOS / "ospf3.yaml", [])) == {}  # routers: netns, veth, forwarding
    assert list(placement.kernel_needs(lab.build_lab(TOPOS / "routed_chain.yaml", []))) == ["sch_netem"]
    assert placement.kernel_needs(lab.build_lab(TOPOS / "sdn_pair.yaml", [])) == {
        "openvswitch": "Open vSwitch switches (switch s1)"}
    assert placement.kernel_needs(aqm_lab(tmp_path)) == {"sch_htb": "htb rate limits (link a-b)",
                                                        "sch_fq_codel": "aqm: fq_codel queues (link a-b)"}
    assert list(placement.kernel_needs(aqm_lab(tmp_path, "cake", "10ms"))) == ["sch_htb", "sch_netem", "sch_cake"]
    # A sweep's point may add what the lab as written does not have.
    assert "sch_netem" in placement.kernel_needs(lab.build_lab(TOPOS / "jumbo_pair.yaml", [("links[0].impair.delay", "5ms")]))


@pytest.mark.parametrize("topo, missing, why", [
    ("bond2.yaml", "bonding", "this kernel lacks bonding, which this lab's bonds (link bond) need"),
    ("routed_chain.yaml", "sch_netem", "this kernel lacks sch_netem, which this lab's netem impairments (link core) need"),
    ("sdn_pair.yaml", "openvswitch", "this kernel lacks openvswitch, which this lab's Open vSwitch switches (switch s1) need"),
])
def test_a_lab_runs_natively_with_all_it_needs_and_in_the_vm_naming_what_is_missing(topo, missing, why):
    built = lab.build_lab(TOPOS / topo, [])
    assert placement.want_vm_for_up(False, False, built, available=EVERYTHING.__contains__)[0] is False
    assert placement.want_vm_for_up(False, False, built, available=(EVERYTHING - {missing}).__contains__) == (True, why)


def test_plain_and_routed_labs_run_natively_on_this_kind_of_kernel(tmp_path):
    have = THIS_KIND.__contains__
    assert placement.want_vm_for_up(False, False, lab.build_lab(TOPOS / "ospf3.yaml", []), available=have) == (
        False, "this lab needs only namespaces, veth pairs and IP forwarding")
    assert placement.want_vm_for_up(False, False, lab.build_lab(TOPOS / "jumbo_pair.yaml", []), available=have) == (
        False, "this kernel has what this lab needs: sch_htb")
    # An AQM lab: natively only where its discipline's module is.
    assert placement.want_vm_for_up(False, False, aqm_lab(tmp_path), available=have) == (
        True, "this kernel lacks sch_fq_codel, which this lab's aqm: fq_codel queues (link a-b) need")
    assert placement.want_vm_for_up(False, False, aqm_lab(tmp_path), available=(THIS_KIND | {"sch_fq_codel"}).__contains__)[0] is False


def test_every_missing_module_is_named_and_the_flags_still_decide():
    labs = [lab.build_lab(TOPOS / "bond2.yaml", []), lab.build_lab(TOPOS / "routed_chain.yaml", [])]
    use_vm, why = placement.want_vm_for_up(False, False, labs, available=THIS_KIND.__contains__)
    assert use_vm and why == ("this kernel lacks bonding, which this lab's bonds (link bond) need, "
                              "and sch_netem, which its netem impairments (link core) need")
    plain = lab.build_lab(TOPOS / "ospf3.yaml", [])
    assert placement.want_vm_for_up(True, False, plain, available=EVERYTHING.__contains__) == (True, "--vm")
    assert placement.want_vm_for_up(False, True, labs, available=set().__contains__) == (False, "--native")


def test_the_kernel_config_counts_built_in_modules(tmp_path):
    # A built-in module without parameters has no /sys/module entry, and a kernel without
    # modules no modules.builtin: its configuration says what it has (=y only: =m must be loadable).
    (tmp_path / "boot").mkdir()
    (tmp_path / "boot" / "config-6.9-x").write_text("CONFIG_VETH=y\nCONFIG_NET_SCH_TBF=y\nCONFIG_BONDING=m\n"
                                                   "# CONFIG_NET_SCH_NETEM is not set\nCONFIG_TCP_CONG_BBR=y\n")
    kw = dict(release="6.9-x", sys_root=tmp_path / "sys", lib_root=tmp_path / "lib", proc_root=tmp_path / "proc",
              boot_root=tmp_path / "boot")
    assert [m for m in ("veth", "sch_tbf", "tcp_bbr", "bonding", "sch_netem", "sch_htb") if kernel.feature_available(m, **kw)] \
        == ["veth", "sch_tbf", "tcp_bbr"]


def test_up_of_an_sdn_lab_without_the_sdn_extra_exits_4_before_anything(monkeypatch, capsys, tmp_path):
    from linklab import extras
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path))
    monkeypatch.setattr(extras, "_importable", lambda module: module not in ("os_ken", "eventlet"))
    built = []
    monkeypatch.setattr(lab, "up", lambda *a, **k: built.append(a))
    monkeypatch.setattr(placement, "forward_booting", lambda *a, **k: built.append(a) or 0)
    monkeypatch.setattr(provision, "missing", lambda *a, **k: pytest.fail("packages looked at before the extra"))
    assert main(["up", str(TOPOS / "sdn_pair.yaml")]) == EXIT_ENV == 4
    err = capsys.readouterr().err
    assert "lab sdn_pair's OpenFlow controller (switch s1) needs linklab's optional part [sdn]" in err
    assert f"pip install -e '{ROOT}[sdn]'" in err and built == []


def test_a_lab_without_controllers_needs_no_extra():
    assert provision.extras_needed(lab.build_lab(TOPOS / "bond2.yaml", [])) == {}
    assert list(provision.extras_needed(lab.build_lab(TOPOS / "sdn_pair.yaml", []))) == ["sdn"]


def test_up_says_where_the_lab_runs_and_why(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path))
    monkeypatch.setattr(kernel, "feature_available", lambda m, **k: m in THIS_KIND)
    monkeypatch.setattr(provision, "ensure", lambda *a, **k: [])
    forwarded = []
    monkeypatch.setattr(placement, "forward_booting", lambda argv, say: forwarded.append(argv) or 0)
    assert main(["up", str(TOPOS / "bond2.yaml")]) == 0
    assert forwarded == [["up", str(TOPOS / "bond2.yaml")]]
    assert ("linklab: lab bond2 runs in the lab VM (this kernel lacks bonding, which this lab's bonds (link bond) need)"
            in capsys.readouterr().out)
    monkeypatch.setattr(lab, "up", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("built natively")))
    with pytest.raises(RuntimeError, match="built natively"):
        main(["up", str(TOPOS / "ospf3.yaml")])
    assert "lab ospf3 runs on this kernel (this lab needs only namespaces" in capsys.readouterr().out
    assert forwarded == [["up", str(TOPOS / "bond2.yaml")]]


class Built(Exception):
    """Stops a sweep at the build of its lab (nothing touches the kernel)."""


def test_a_sweep_builds_its_lab_with_the_overrides_placement_judged(monkeypatch, tmp_path):
    # ecmp_vs_bond's topology has an 802.3ad bond: in the lab VM on this kind of kernel, unless
    # --set takes it out; then the sweep runs here and builds the lab it judged, without it.
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path))
    monkeypatch.setattr(kernel, "feature_available", lambda m, **k: m in THIS_KIND)
    forwarded, ups = [], []
    monkeypatch.setattr(placement, "forward_booting", lambda argv, say: forwarded.append(argv) or 0)

    def up(topo, **kw):
        ups.append((Path(topo).name, kw.get("overrides")))
        raise Built
    monkeypatch.setattr(lab, "up", up)
    exp = str(ROOT / "experiments" / "ecmp_vs_bond.yaml")
    args = ["sweep", exp, "--quick", "--lab", "sf", "--results", str(tmp_path / "results")]
    assert main(args) == 0 and len(forwarded) == 1 and ups == []  # the bond: the lab VM's
    with pytest.raises(Built):
        main([*args, "--set", "links[lag].bond=null"])
    assert ups == [("ecmp_bond.yaml", [("links[lag].bond", None)])] and len(forwarded) == 1
    first = lab.build_lab(ROOT / "topologies" / "ecmp_bond.yaml", ups[0][1])
    assert "bonding" not in placement.kernel_needs(first) and [lk.name for lk in first.links if lk.bonds] == []


def test_the_labs_placement_judges_for_a_sweep_begin_with_the_one_it_brings_up():
    from linklab.sweep.plan import load_experiment, point_labs
    exp_path = ROOT / "experiments" / "ecmp_vs_bond.yaml"
    exp = load_experiment(exp_path, quick=True)
    topo = ROOT / "topologies" / "ecmp_bond.yaml"
    labs = point_labs(exp_path, exp, (("links[lag].bond", None),))
    assert labs[0] == lab.build_lab(topo, [("links[lag].bond", None)])
    assert len(labs) == 1 + 8 and not any(lk.bonds for x in labs for lk in x.links)  # 8 quick points, none with events that impair
    assert point_labs(exp_path, exp)[0] == lab.build_lab(topo, [])  # no --set: the topology as written


def test_the_modules_recorded_of_a_kernel_are_those_feature_available_finds(tmp_path):
    # What the lab VM records of its host's kernel (kernel.lab_modules_present) answers as
    # feature_available does for every module linklab knows a configuration symbol of: loaded
    # (/sys/module), listed as built in or loadable, built in by the configuration (=y only).
    (tmp_path / "sys" / "module" / "sch_htb").mkdir(parents=True)
    (tmp_path / "lib" / "6.9-x").mkdir(parents=True)
    (tmp_path / "lib" / "6.9-x" / "modules.dep").write_text("kernel/net/sched/sch-cake.ko.xz: \nkernel/fs/ext4.ko:\n")
    (tmp_path / "lib" / "6.9-x" / "modules.builtin").write_text("kernel/drivers/net/bonding/bonding.ko\n")
    (tmp_path / "boot").mkdir()
    (tmp_path / "boot" / "config-6.9-x").write_text("CONFIG_VETH=y\nCONFIG_NET_SCH_TBF=y\nCONFIG_OPENVSWITCH=m\n"
                                                   "# CONFIG_NET_SCH_NETEM is not set\nCONFIG_TCP_CONG_BBR=y\n")
    kw = dict(release="6.9-x", sys_root=tmp_path / "sys", lib_root=tmp_path / "lib", proc_root=tmp_path / "proc",
              boot_root=tmp_path / "boot")
    present = kernel.lab_modules_present(**kw)
    assert present == ["bonding", "sch_cake", "sch_htb", "sch_tbf", "tcp_bbr", "veth"]
    asked = ["bonding", "sch_cake", "sch_htb", "sch_tbf", "tcp_bbr", "veth", "openvswitch", "sch_netem", "tcp_cubic"]
    assert [m for m in asked if kernel.feature_available(m, **kw)] == present


def test_inside_the_lab_vm_the_hosts_kernel_is_the_one_its_host_recorded(monkeypatch):
    import json

    from linklab.errors import EnvironmentProblem
    monkeypatch.setattr(kernel, "feature_available", lambda m, **k: m in EVERYTHING)
    assert placement.host_has("sch_netem") is True  # natively: this kernel's answer
    monkeypatch.setenv("LINKLAB_IN_VM", "1")
    monkeypatch.setenv("LINKLAB_VM_INFO", json.dumps({"host_kernel": {"release": "6.18", "lab_modules": sorted(THIS_KIND)}}))
    assert [m for m in ("sch_netem", "sch_htb", "bonding", "tun") if placement.host_has(m)] == ["sch_htb", "tun"]
    built = lab.build_lab(TOPOS / "routed_chain.yaml", [])
    assert placement.lacking(placement.kernel_needs(built), placement.host_has) == ["sch_netem"]
    with pytest.raises(EnvironmentProblem, match="not recorded"):
        placement.host_has("nf_tables")  # no configuration symbol linklab knows: no answer recorded
    monkeypatch.setenv("LINKLAB_VM_INFO", json.dumps({"kernel_release": "6.1"}))  # a VM of an older linklab
    with pytest.raises(EnvironmentProblem, match="no record of its host's kernel"):
        placement.host_has("sch_htb")


def test_a_lab_setting_a_machine_wide_sysctl_runs_in_the_lab_vm(tmp_path, monkeypatch):
    """A sysctl this kernel keeps for the whole machine (not per network namespace: classify's
    'global', faked here as this kernel's netdev_max_backlog is) would change the host: the lab
    runs in the lab VM, whose kernel is its own, and says why; per-namespace ones stay native,
    and so does a key that could not be looked at (not root: 'unsure')."""
    from linklab.backends.linux import sysctl
    p = tmp_path / "s.yaml"
    p.write_text("name: s\nhosts: {a: {sysctls: {net.core.netdev_max_backlog: 2000, net.ipv4.tcp_ecn: 1}}, b: {}}\n"
                 "links: [{endpoints: [a, b]}]\n")
    built = lab.build_lab(p, [])
    where = {"net.core.netdev_max_backlog": "global", "net.ipv4.tcp_ecn": "netns"}
    monkeypatch.setattr(sysctl, "classify", lambda keys: {k: where[k] for k in keys})
    assert placement.want_vm_for_up(False, False, built, available=lambda m: True) == (
        True, "this kernel keeps net.core.netdev_max_backlog (hosts.a.sysctls) for the whole machine, "
              "not per namespace: set here it would change the host")
    assert placement.want_vm_for_up(False, True, built, available=lambda m: True)[0] is False  # --native: refused later
    for kind in ("netns", "unsure"):
        where["net.core.netdev_max_backlog"] = kind
        assert placement.want_vm_for_up(False, False, built, available=lambda m: True)[0] is False


def test_sysctls_are_classified_once_per_process_for_the_same_keys(monkeypatch):
    """`up` asks where a lab's sysctls live twice (where it runs, then what it cannot set): one
    throwaway namespace answers both."""
    import os

    from linklab.backends.linux import sysctl
    sysctl._looked.cache_clear()
    forks = []
    real_fork = os.fork
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or real_fork())
    keys = ["net.ipv4.ip_forward", "net.core.somaxconn"]
    first = sysctl.classify(keys)
    assert sysctl.classify(list(reversed(keys))) == first and len(forks) == 1
    assert set(first) == set(keys) and set(first.values()) <= {"netns", "global", "unsure"}
    sysctl._looked.cache_clear()
