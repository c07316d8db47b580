"""routing: ospf (linklab/model/frr.py, resolve, checks): what each router's FRR is told, hosts'
static routes toward their router, a router's own frr_config, the subnets `up` waits for, what a
status shows of ospfd's neighbours, and the FRR the lab needs before it is built."""

import ipaddress

import pytest

from linklab import provision
from linklab.backends.linux.kinds.frr import neighbours
from linklab.errors import EnvironmentProblem, LinklabError
from linklab.model import frr, load_topology, resolve
from linklab.model.routes import cheapest_interfaces

TRIANGLE = ("name: tri\nhosts: {h1: {}, h2: {}, h3: {}}\nrouters: {r1: {}, r2: {}, r3: {}}\nrouting: %s\nlinks:\n"
            "  - {endpoints: [h1, r1]}\n  - {endpoints: [h2, r2]}\n  - {endpoints: [h3, r3]}\n"
            "  - {name: a, endpoints: [r1, r2]}\n  - {name: b, endpoints: [r2, r3]}\n"
            "  - {name: c, endpoints: [r1, r3], cost: 5}\n")


def lab_from(tmp_path, text, name="t.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return resolve(load_topology(p))


def block(conf: str, head: str) -> list[str]:
    """The lines of one `interface X` / `router Y` block of a frr.conf, without its head."""
    lines = conf.splitlines()
    start = lines.index(head)
    return lines[start + 1:lines.index("exit", start)]


def test_each_router_runs_ospf_on_its_interfaces_at_the_link_cost(tmp_path):
    lab = lab_from(tmp_path, TRIANGLE % "ospf")
    r1 = lab.node("r1")
    assert r1.frr is not None and r1.frr.router_id == "10.77.0.2" and r1.frr.config_file is None
    conf = frr.config(lab, r1)
    assert conf == frr.generated(lab, r1)
    assert "hostname r1" in conf.splitlines()
    # eth1 faces h1 only: passive; eth2 (link a) and eth3 (link c, cost 5) face one router each
    assert block(conf, "interface eth1") == [
        " ip ospf cost 1", " ip ospf hello-interval 1", " ip ospf dead-interval 4", " ip ospf passive",
        " ipv6 ospf6 area 0.0.0.0", " ipv6 ospf6 cost 1", " ipv6 ospf6 hello-interval 1",
        " ipv6 ospf6 dead-interval 4", " ipv6 ospf6 passive"]
    assert " ip ospf cost 5" in block(conf, "interface eth3") and " ipv6 ospf6 cost 5" in block(conf, "interface eth3")
    assert " ip ospf network point-to-point" in block(conf, "interface eth2")
    assert " ip ospf passive" not in block(conf, "interface eth2")
    assert block(conf, "router ospf") == [" ospf router-id 10.77.0.2", " maximum-paths 1",
                                          " network 10.77.0.0/24 area 0.0.0.0", " network 10.77.3.0/24 area 0.0.0.0",
                                          " network 10.77.5.0/24 area 0.0.0.0"]
    assert block(conf, "router ospf6") == [" ospf6 router-id 10.77.0.2", " maximum-paths 1"]
    assert lab.link("c").cost == 5 and lab.link("a").cost == 1


def test_ecmp_lets_ospf_install_every_equal_path_and_sets_the_hash_policy(tmp_path):
    lab = lab_from(tmp_path, TRIANGLE % "{protocol: ospf, ecmp: true, hash_policy: l3}")
    r2 = lab.node("r2")
    assert r2.frr.ecmp and "maximum-paths" not in frr.generated(lab, r2)
    assert r2.sysctls["net.ipv4.fib_multipath_hash_policy"] == "0"
    assert "net.ipv4.fib_multipath_hash_policy" not in lab.node("h1").sysctls


def test_routers_learn_their_routes_and_hosts_keep_a_static_default_route(tmp_path):
    lab = lab_from(tmp_path, TRIANGLE % "ospf")
    assert [n.name for n in lab.nodes if n.frr] == ["r1", "r2", "r3"]
    assert all(not lab.node(r).routes for r in ("r1", "r2", "r3"))  # ospfd's to learn
    assert [(r.to, r.nexthops[0].node, r.source) for r in lab.node("h2").routes] == [
        ("0.0.0.0/0", "r2", "computed"), ("::/0", "r2", "computed")]
    static = lab_from(tmp_path, TRIANGLE % "static")
    assert all(n.frr is None for n in static.nodes) and static.node("r1").routes


def test_up_waits_for_every_subnet_of_both_families(tmp_path):
    lab = lab_from(tmp_path, TRIANGLE % "ospf")
    nets = frr.subnets(lab)
    assert nets[:6] == [f"10.77.{i}.0/24" for i in range(6)]
    assert nets[6:] == ["fd00:77::/64", *(f"fd00:77:0:{i}::/64" for i in range(1, 6))]
    # a core link without IPv6: ospf6d cannot cross it, so only IPv4 is waited for
    no6 = lab_from(tmp_path, (TRIANGLE % "ospf").replace("[r1, r2]}", "[r1, r2], ipv6: false}"))
    assert frr.subnets(no6) == nets[:6]


def test_a_routers_own_frr_config_is_loaded_as_written(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "r1.conf").write_text("hostname mine\nrouter ospf\n network 10.77.0.0/16 area 0\n")
    text = (TRIANGLE % "ospf").replace("r1: {}, r2", "r1: {frr_config: conf/r1.conf}, r2")
    lab = lab_from(tmp_path, text)
    r1 = lab.node("r1")
    assert r1.frr.config_file == str(tmp_path / "conf" / "r1.conf")
    assert frr.config(lab, r1) == "hostname mine\nrouter ospf\n network 10.77.0.0/16 area 0\n"
    assert frr.config(lab, lab.node("r2")) == frr.generated(lab, lab.node("r2"))


def test_frr_config_needs_ospf_and_a_file_that_exists(tmp_path):
    (tmp_path / "r1.conf").write_text("hostname r1\n")
    with pytest.raises(LinklabError) as err:
        lab_from(tmp_path, (TRIANGLE % "static").replace("r1: {}", "r1: {frr_config: r1.conf}"))
    assert err.value.exit_code == 2
    assert "routers.r1.frr_config (line 3): frr_config applies only with routing: ospf (this lab's routing is static)" \
        in err.value.render()
    with pytest.raises(LinklabError) as err:
        lab_from(tmp_path, (TRIANGLE % "ospf").replace("r2: {}", "r2: {frr_config: nowhere.conf}"))
    assert "routers.r2.frr_config (line 3): no such file" in err.value.render()
    assert "nowhere.conf" in err.value.render()


def test_an_unknown_routing_lists_the_choices(tmp_path):
    with pytest.raises(LinklabError) as err:
        lab_from(tmp_path, TRIANGLE % "rip")
    assert "unknown protocol 'rip' (valid: static, ospf, none)" in err.value.render()


def test_status_reads_ospfds_neighbours():
    # `show ip ospf neighbor json` of FRR 8.4, as r1 of the triangle printed it
    text = ('{"neighbors":{"10.77.1.2":[{"priority":1,"state":"Full/-","nbrState":"Full/-","converged":"Full",'
            '"role":"DROther","upTimeInMsec":7567,"address":"10.77.3.2","ifaceAddress":"10.77.3.2",'
            '"ifaceName":"eth2:10.77.3.1"}],"10.77.2.2":[{"nbrState":"Init/-","ifaceAddress":"10.77.5.2",'
            '"ifaceName":"eth3:10.77.5.1"}]}}')
    assert neighbours(text) == [
        {"router_id": "10.77.1.2", "state": "Full/-", "address": "10.77.3.2", "interface": "eth2"},
        {"router_id": "10.77.2.2", "state": "Init/-", "address": "10.77.5.2", "interface": "eth3"}]
    assert neighbours("") == [] and neighbours("% ospfd is not running") == []


def test_an_ospf_lab_without_frr_is_refused_before_anything_is_built(tmp_path):
    lab = lab_from(tmp_path, TRIANGLE % "ospf")
    assert provision.needs(lab) == {"frr": "routing: ospf on routers r1, r2, r3"}
    assert provision.missing(lab, found=lambda prog: prog != "ospf6d") == {"frr": "routing: ospf on routers r1, r2, r3"}
    with pytest.raises(EnvironmentProblem) as err:
        provision.ensure(lab, found=lambda prog: False, root=False, checkout=None, in_lab_vm=False)
    assert err.value.exit_code == 4
    assert "needs frr for its routing: ospf on routers r1, r2, r3" in err.value.render()
    assert "apt-get install" in err.value.render()
    assert provision.needs(lab_from(tmp_path, TRIANGLE % "static")) == {}


def cheapest_routes(lab, router):
    """prefix -> interfaces of a router whose every route takes a cheapest path (connected: its own)."""
    have = dict(cheapest_interfaces(lab.links, {n.name: n.kind for n in lab.nodes})[router])
    have.update({str(ipaddress.ip_interface(a).network): {end.ifname} for link in lab.links for end in link.ends
                 if end.node == router for a in (end.ipv4, end.ipv6) if a})
    return have


def test_up_fails_naming_each_routers_missing_subnets_when_ospf_does_not_converge(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from linklab.backends.linux import build
    lab = lab_from(tmp_path, TRIANGLE % "ospf")
    have = {r: cheapest_routes(lab, r) for r in ("r1", "r2", "r3")}
    assert frr.converged(lab, "r1", have["r1"]) == []
    assert have["r1"]["10.77.2.0/24"] == {"eth2"}  # h3's subnet through r2 (cost 2), not the direct cost-5 link
    have["r1"]["10.77.2.0/24"] = {"eth3"}  # learned over the dearer link first
    del have["r2"]["10.77.2.0/24"]
    del have["r3"]["10.77.0.0/24"], have["r3"]["fd00:77::/64"]
    reads = []
    monkeypatch.setattr(build, "_routes_by_prefix", lambda b, node: reads.append(node) or have[node])
    monkeypatch.setattr(build, "CONVERGE_DEADLINE_S", 0.3)
    with pytest.raises(LinklabError) as err:
        build.learned(SimpleNamespace(lab=lab, say=lambda *_: None))
    assert str(err.value) == ("routing: ospf did not converge within 0 s: "
                              "r1: 10.77.2.0/24 through eth3, not the cheapest path's eth2; "
                              "r2: no route to 10.77.2.0/24; r3: no route to 10.77.0.0/24, no route to fd00:77::/64")
    assert "linklab status" in err.value.render() and set(reads) == {"r1", "r2", "r3"}
    have = {r: cheapest_routes(lab, r) for r in ("r1", "r2", "r3")}  # converged: returns
    said = []
    build.learned(SimpleNamespace(lab=lab, say=said.append))
    assert said and said[0].startswith("  OSPF converged: 3 routers, 12 subnets")


def test_a_routers_own_configuration_is_converged_on_reaching_every_subnet(tmp_path):
    (tmp_path / "r1.conf").write_text("hostname r1\n")
    lab = lab_from(tmp_path, (TRIANGLE % "ospf").replace("r1: {}", "r1: {frr_config: r1.conf}"))
    have = cheapest_routes(lab, "r1")
    have["10.77.2.0/24"] = {"eth3"}  # its own costs may differ from the topology's: any path will do
    assert frr.converged(lab, "r1", have) == []
    del have["10.77.2.0/24"]
    assert frr.converged(lab, "r1", have) == ["no route to 10.77.2.0/24"]
