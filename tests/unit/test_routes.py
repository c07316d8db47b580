"""Static routing (linklab/model/routes.py): the cheapest paths from every host and router to every
link's subnet, as resolve turns them into each node's routes; and the errors a routed file gets."""

import pytest

from linklab.errors import LinklabError
from linklab.model import load_topology, resolve
from linklab.model.routes import Graph, Hop, Port


def lab_from(tmp_path, text):
    p = tmp_path / "t.yaml"
    p.write_text(text)
    return resolve(load_topology(p))


def routes(lab, node, family=4):
    """{prefix: [(neighbour, dev), ...]} of a node's routes of one family."""
    return {r.to: [(h.node, h.dev) for h in r.nexthops] for r in lab.node(node).routes
            if (":" in r.to) == (family == 6)}


def problems(tmp_path, text) -> str:
    with pytest.raises(LinklabError) as err:
        lab_from(tmp_path, text)
    assert err.value.exit_code == 2
    return err.value.render()


CHAIN = ("name: c\nhosts: {h1: {}, h2: {}}\nrouters: {r1: {}, r2: {}, r3: {}}\nlinks:\n"
         "  - {endpoints: [h1, r1]}\n  - {endpoints: [r1, r2]}\n  - {endpoints: [r2, r3]}\n  - {endpoints: [r3, h2]}\n")


def test_a_chain_routes_every_subnet_both_ways_and_hosts_take_a_default_route(tmp_path):
    lab = lab_from(tmp_path, CHAIN)
    # subnets: 0 h1-r1, 1 r1-r2, 2 r2-r3, 3 r3-h2
    assert routes(lab, "r1") == {"10.77.2.0/24": [("r2", "eth2")], "10.77.3.0/24": [("r2", "eth2")]}
    assert routes(lab, "r2") == {"10.77.0.0/24": [("r1", "eth1")], "10.77.3.0/24": [("r3", "eth2")]}
    assert routes(lab, "r3") == {"10.77.0.0/24": [("r2", "eth1")], "10.77.1.0/24": [("r2", "eth1")]}
    assert [r.cost for r in lab.node("r3").routes if r.to == "10.77.0.0/24"] == [2]
    assert routes(lab, "h1") == {"0.0.0.0/0": [("r1", "eth1")]}
    assert routes(lab, "h2", 6) == {"::/0": [("r3", "eth1")]}
    assert routes(lab, "r1", 6) == {"fd00:77:0:2::/64": [("r2", "eth2")], "fd00:77:0:3::/64": [("r2", "eth2")]}
    gw = lab.node("h1").routes[0].nexthops[0]
    assert gw.via == "10.77.0.2" and lab.node("r1").sysctls["net.ipv4.ip_forward"] == "1"
    assert lab.node("r1").sysctls["net.ipv6.conf.all.forwarding"] == "1" and "net.ipv4.ip_forward" not in lab.node("h1").sysctls


RING = ("name: r\nhosts: {h1: {}, h2: {}}\nrouters: {r1: {}, r2: {}, r3: {}, r4: {}}\n%s\nlinks:\n"
        "  - {endpoints: [h1, r1]}\n  - {name: a, endpoints: [r1, r2]%s}\n  - {name: b, endpoints: [r2, r3]}\n"
        "  - {name: c, endpoints: [r3, r4]}\n  - {name: d, endpoints: [r4, r1]}\n  - {endpoints: [r3, h2]}\n")


def test_a_ring_ties_give_one_next_hop_first_in_file_order_without_ecmp_and_both_with_it(tmp_path):
    # r1 reaches h2's subnet (r3-h2) at 2 hops through r2 (link a) and through r4 (link d).
    plain = lab_from(tmp_path, RING % ("", ""))
    assert routes(plain, "r1")["10.77.5.0/24"] == [("r2", "eth2")]  # link a comes first in the file
    assert "net.ipv4.fib_multipath_hash_policy" not in plain.node("r1").sysctls
    ecmp = lab_from(tmp_path, RING % ("routing: {ecmp: true}", ""))
    assert routes(ecmp, "r1")["10.77.5.0/24"] == [("r2", "eth2"), ("r4", "eth3")]
    assert routes(ecmp, "r1", 6)["fd00:77:0:5::/64"] == [("r2", "eth2"), ("r4", "eth3")]
    assert ecmp.node("r1").sysctls["net.ipv4.fib_multipath_hash_policy"] == "1"  # l4 by default
    assert ecmp.node("r1").sysctls["net.ipv6.fib_multipath_hash_policy"] == "1"
    assert "net.ipv4.fib_multipath_hash_policy" not in ecmp.node("h1").sysctls  # no multipath route there
    l3 = lab_from(tmp_path, RING % ("routing: {ecmp: true, hash_policy: l3}", ""))
    assert l3.node("r1").sysctls["net.ipv4.fib_multipath_hash_policy"] == "0"


def test_a_costly_link_moves_the_path_the_other_way_round(tmp_path):
    lab = lab_from(tmp_path, RING % ("routing: {ecmp: true}", ", cost: 5"))
    assert routes(lab, "r1")["10.77.5.0/24"] == [("r4", "eth3")]
    assert [r.cost for r in lab.node("r1").routes if r.to == "10.77.5.0/24"] == [2]
    # a link costs the same both ways: r2 reaches h1's subnet round the ring (3) rather than across a (5)
    assert routes(lab, "r2")["10.77.0.0/24"] == [("r3", "eth2")]
    assert [r.cost for r in lab.node("r2").routes if r.to == "10.77.0.0/24"] == [3]


def test_parallel_links_are_two_equal_paths(tmp_path):
    text = ("name: e\nhosts: {h1: {}, h2: {}}\nrouters: {r1: {}, r2: {}}\nrouting: {ecmp: true}\nlinks:\n"
            "  - {endpoints: [h1, r1]}\n  - {endpoints: [r1, r2]}\n  - {endpoints: [r1, r2]}\n  - {endpoints: [r2, h2]}\n")
    lab = lab_from(tmp_path, text)
    assert routes(lab, "r1")["10.77.3.0/24"] == [("r2", "eth2"), ("r2", "eth3")]
    assert [h.via for h in lab.node("r1").routes[0].nexthops] == ["10.77.1.2", "10.77.2.2"]


def test_hand_written_routes_win_over_computed_ones_and_names_resolve(tmp_path):
    text = RING % ("", "") + ("  - {endpoints: [h1, r2]}\n")  # h1 on two routers: a route per subnet
    text = text.replace("h1: {}", "h1: {routes: [{to: h2, via: r2}, {to: b, via: r2}, {to: 192.0.2.0/24, via: r1}]}")
    text = text.replace("r4: {}", "r4: {routes: [{to: default, via: r3}]}")
    lab = lab_from(tmp_path, text)
    h1 = {r.to: r for r in lab.node("h1").routes}
    assert h1["10.77.2.0/24"].source == "written" and [x.node for x in h1["10.77.2.0/24"].nexthops] == ["r2"]
    assert h1["10.77.5.2/32"].source == "written"  # to a node: a host route to its address
    assert h1["fd00:77:0:5::2/128"].source == "written"
    assert h1["192.0.2.0/24"].nexthops[0].via == "10.77.0.2"
    assert h1["10.77.3.0/24"].source == "computed"  # c: nothing written, computed stays
    assert {r.to: r.source for r in lab.node("r4").routes}["0.0.0.0/0"] == "written"


def test_unreachable_subnets_are_named_with_the_routers_that_miss_them(tmp_path):
    text = ("name: u\nhosts: {h1: {}, h2: {}, h3: {}}\nrouters: {r1: {}, r2: {}}\nlinks:\n"
            "  - {endpoints: [h1, r1]}\n  - {endpoints: [r1, h2]}\n  - {name: far, endpoints: [h3, r2]}\n"
            "  - {endpoints: [r2, h2]}\n")
    out = problems(tmp_path, text)
    # h2 is on both routers' links but does not forward: two islands
    assert "links[0] (line 5): the subnet of link h1-r1 cannot be reached from r2" in out
    assert "links[2] (line 7): the subnet of link far cannot be reached from r1" in out
    lab_from(tmp_path, text.replace("routers:", "routing: none\nrouters:"))  # none: nothing to reach


def test_a_router_on_one_link_and_a_via_beyond_the_neighbours_are_errors(tmp_path):
    out = problems(tmp_path, "name: o\nhosts: {h1: {routes: [{to: h2, via: r2}]}, h2: {}}\nrouters: {r1: {}, r2: {}}\n"
                             "links:\n  - {endpoints: [h1, r1]}\n  - {endpoints: [r1, r2]}\n  - {endpoints: [r1, h2]}\n")
    assert "routers.r2 (line 3): router 'r2' is on 1 link: a router forwards between links" in out
    assert "hosts.h1.routes[0].via (line 2): 'r2' is not a neighbour of 'h1'" in out and "(h1's neighbours: r1)" in out


def test_a_via_without_the_prefix_family_is_an_error_once_addresses_are_known(tmp_path):
    text = ("name: f\nhosts: {h1: {routes: [{to: 'fd00:9::/48', via: r1}]}, h2: {}}\nrouters: {r1: {}}\n"
            "links:\n  - {endpoints: [h1, r1], ipv6: false}\n  - {endpoints: [r1, h2]}\n")
    assert "hosts.h1.routes[0]: r1 has no IPv6 address on a link it shares with h1" in problems(tmp_path, text)


def test_graph_only_routers_carry_paths():
    # h - x - h2 where x is a host: h cannot reach beyond x
    g = Graph([Port("h", 0, 0), Port("x", 0, 0), Port("x", 1, 1), Port("h2", 1, 1)], routers=[])
    assert g.paths() == {"h": {}, "x": {}, "h2": {}}
    g = Graph([Port("h", 0, 0), Port("x", 0, 0), Port("x", 1, 1), Port("h2", 1, 1)], routers=["x"])
    assert g.paths()["h"][1].hops == (Hop(0, "x", 0),) and g.gateway("h") == (Hop(0, "x", 0),)
    assert g.unreachable() == {}
