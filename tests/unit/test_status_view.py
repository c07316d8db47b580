"""`linklab status` text: every bond is named by its node, whatever order the kernel lists it in."""

from linklab.status_view import render


def iface(name, kind, **kw):
    return {"ifname": name, "kind": kind, "state": "UP", "mtu": 1500, "addresses": [], "master": None,
            "bond_member": None, "bond": None, "qdiscs": [], **kw}


def node(mode, aggregated=True, distributing=2):
    members = [iface(f"bond0-m{i}", "veth", master="bond0",
                     bond_member={"mii": "up", "aggregator": 1, "state": "active" if i < distributing else "backup"})
               for i in range(2)]
    ad = {"aggregator": 1, "num_ports": 2, "partner_mac": "02:00:00:00:00:02" if aggregated else "00:00:00:00:00:00"}
    bond = iface("bond0", "bond", addresses=["10.77.0.1/24"], bond={"mode": mode, "ad_info": ad})
    return {"present": True, "netns": "ll-t-h", "interfaces": members + [bond]}  # members first, as the kernel lists them


def data(nodes):
    return {"state": {"lab": "t", "status": "up", "kernel": "6.1", "placement": {"kind": "native"},
                      "topology": {"path": "t.yaml", "sha256": "ab" * 32},
                      "resolved": {"scale": 1.0, "scale_source": "topology"}},
            "live": {"nodes": nodes}}


def test_bond_lines_name_their_node_and_lacp_state():
    text = render(data({"h1": node("802.3ad"), "h2": node("802.3ad", aggregated=False),
                        "h3": node("802.3ad", distributing=1)}))
    assert "  h1:bond0 802.3ad, members 2/2 up, aggregator 1, partner 02:00:00:00:00:02 — LACP aggregated" in text
    assert "  h2:bond0 802.3ad, members 2/2 up" in text and "NOT aggregated" in text
    assert "  h3:bond0 802.3ad, members 2/2 up, aggregator 1, partner 02:00:00:00:00:02 — NOT aggregated " \
           "(1/2 members distributing)" in text
    assert "?:" not in text


def test_node_name_shown_once_per_node_in_table():
    text = render(data({"h1": node("balance-rr")}))
    table = [ln for ln in text.splitlines() if "bond0" in ln and not ln.startswith("  h1:")]
    assert [ln.split()[0] for ln in table] == ["h1", "bond0-m1", "bond0"]


def test_exec_lines_show_each_command_and_how_many_ran():
    d = data({"h1": node("balance-rr")})
    d["state"]["resolved"]["nodes"] = [
        {"name": "h1", "exec": [["ip", "addr", "add", "192.0.2.1/24", "dev", "eth1"], ["sh", "-c", "echo a > /tmp/x"]]},
        {"name": "h2", "exec": [["ip", "link", "set", "eth1", "up"], ["false"]]}, {"name": "s1"}]
    d["state"]["owned"] = {"exec": {"h1": {"ran": d["state"]["resolved"]["nodes"][0]["exec"]},
                                    "h2": {"ran": [["ip", "link", "set", "eth1", "up"]],
                                           "failed": "node h2: exec command 2 of 2 exited 1: false\n    (x)"}}}
    lines = render(d).splitlines()
    at = lines.index("exec (commands run in the node once the lab is up; + ran):")
    assert lines[at + 1:] == [
        "  h1: 2 of 2 ran, each exit 0",
        "    + ip addr add 192.0.2.1/24 dev eth1",
        "    + sh -c 'echo a > /tmp/x'",
        "  h2: 1 of 2 ran; exec command 2 of 2 exited 1: false",
        "    + ip link set eth1 up",
        "    - false"]
    assert "exec (" not in render(data({"h1": node("balance-rr")}))  # no commands: no section


def test_routes_shown_per_node_with_forwarding_and_multipath_only_when_the_lab_routes():
    connected = {"to": "10.77.1.0/24", "nexthops": [{"via": None, "dev": "eth1"}], "proto": "kernel"}
    r1 = {**node("balance-rr"), "router": {"forwarding": {"ipv4": True, "ipv6": False}},
          "routes": [connected, {"to": "10.77.3.0/24", "proto": "linklab",
                                 "nexthops": [{"via": "10.77.1.2", "dev": "eth2"}, {"via": "10.77.2.2", "dev": "eth3"}]}]}
    h1 = {**node("balance-rr"), "routes": [{"to": "default", "nexthops": [{"via": "10.77.0.2", "dev": "eth1"}],
                                            "proto": "linklab"}]}
    text = render(data({"h1": h1, "r1": r1}))
    assert "  h1:\n    default via 10.77.0.2 dev eth1 (linklab)" in text
    assert "  r1: forwarding IPv4 on, IPv6 OFF" in text
    assert "    10.77.3.0/24 nexthops via 10.77.1.2 dev eth2, via 10.77.2.2 dev eth3 (linklab)" in text
    assert "    10.77.1.0/24 dev eth1 (kernel)" in text
    flat = render(data({"h1": {**node("balance-rr"), "routes": [connected]}}))
    assert "routes (" not in flat  # nothing routed: the section would only repeat the addresses
