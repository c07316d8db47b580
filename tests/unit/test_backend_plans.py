"""Pure parts of the Linux backend: tc call plans and bond option translation."""

from pathlib import Path

from linklab.backends.linux import bond as b
from linklab.linux import tc
from linklab.backends.linux.inspect import bond_summary
from linklab.backends.linux.names import mark, parse_mark
from linklab.model.resolved import Qdisc

ROOT_TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"


def test_netem_only_plan_uses_netem_rate():
    plan = tc.plan(Qdisc(shaper="netem", rate_bps=1e8, delay_s=0.005, jitter_s=0.001, loss_pct=0.5), 1500, "m0")
    assert plan == [["tc", "qdisc", "add", "dev", "m0", "root", "handle", "1:", "netem",
                     "delay", "5000us", "1000us", "loss", "0.5%", "rate", "100000000bit"]]


def test_order_keeping_rate_and_overhead():
    q = Qdisc(delay_s=0.001, jitter_s=0.0005, order_rate_bps=30e9)
    assert tc.plan(q, 1500, "e")[0][-2:] == ["rate", "30000000000bit"]
    q = Qdisc(shaper="netem", rate_bps=1e8, overhead=24)
    assert tc.plan(q, 1500, "e")[0][-3:] == ["rate", "100000000bit", "24"]


def test_tbf_with_delay_nests_netem_under_tbf():
    plan = tc.plan(Qdisc(shaper="tbf", rate_bps=1e7, delay_s=0.02, reorder_pct=5), 1500, "e")
    assert [c[8] for c in plan] == ["tbf", "10:"]
    assert plan[1] == ["tc", "qdisc", "add", "dev", "e", "parent", "1:1", "handle", "10:", "netem",
                       "delay", "20000us", "reorder", "5%"]
    assert int(plan[0][plan[0].index("burst") + 1]) >= 20000


def test_htb_plan_has_class_and_leaf():
    plan = tc.plan(Qdisc(shaper="htb", rate_bps=1e8), 9000, "e")
    assert [c[1] for c in plan] == ["qdisc", "class"]
    assert int(plan[1][plan[1].index("burst") + 1]) >= 2 * 9014


def test_no_impairment_no_calls():
    assert tc.plan(None, 1500, "e") == []


def test_bond_options_drop_what_mode_refuses_and_restore_defaults():
    want = b.desired_options("balance-rr", {"miimon": 100})
    assert want["miimon"] == 100 and want["xmit_hash_policy"] == "layer2"
    assert "lacp_rate" not in want and "tlb_dynamic_lb" not in want
    ad = b.desired_options("802.3ad", {"lacp_rate": "fast"})
    assert ad["lacp_rate"] == "fast" and "packets_per_slave" not in ad


def test_to_netlink_maps_enums_booleans_and_primary():
    nl = b.to_netlink({"lacp_rate": "fast", "xmit_hash_policy": "layer3+4", "use_carrier": False,
                       "primary": "bond0-m1"}, {"bond0-m1": 7})
    assert nl == {"bond_ad_lacp_rate": 1, "bond_xmit_hash_policy": 1, "bond_use_carrier": 0, "bond_primary": 7}


def test_differs_reports_mode_first_and_changed_options():
    actual = {"mode": "balance-rr", "miimon": 100, "xmit_hash_policy": "layer2"}
    assert b.differs(actual, "balance-rr", {"miimon": 100, "xmit_hash_policy": "layer2"}, {}) == []
    assert b.differs(actual, "802.3ad", {"miimon": 50}, {}) == ["mode", "miimon"]


def test_lacp_summary_requires_one_aggregator_partner_and_every_member_distributing():
    bond = {"bond": {"mode": "802.3ad", "ad_info": {"aggregator": 1, "num_ports": 2, "partner_mac": "02:00:00:00:00:01"}}}
    members = [{"ifname": "m0", "bond_member": {"mii": "up", "aggregator": 1, "state": "active"}},
               {"ifname": "m1", "bond_member": {"mii": "up", "aggregator": 1, "state": "active"}}]
    assert bond_summary(bond, members)["lacp_aggregated"] is True
    # One aggregator and a partner, but m1 still waits to distribute (its mux not yet at
    # COLLECTING_DISTRIBUTING): a flow started now would move when it starts.
    members[1]["bond_member"]["state"] = "backup"
    s = bond_summary(bond, members)
    assert s["lacp_aggregated"] is False and s["members_distributing"] == 1
    members[1]["bond_member"]["state"] = "active"
    members[1]["bond_member"]["aggregator"] = 2
    assert bond_summary(bond, members)["lacp_aggregated"] is False
    bond["bond"]["ad_info"]["partner_mac"] = "00:00:00:00:00:00"
    assert bond_summary(bond, members[:1])["lacp_aggregated"] is False


def test_ownership_mark_round_trip():
    assert parse_mark(mark("bond2", "ab12cd34", "0123456789ab")) == ("bond2", "ab12cd34", "0123456789ab")
    assert parse_mark("linklab:bond2:ab12cd34") == ("bond2", "ab12cd34", None)  # before checkouts were marked
    assert parse_mark("something else") is None
    assert parse_mark(None) is None


def test_one_tc_batch_per_namespace_removes_only_roots_it_was_told_of():
    shaped = Qdisc(shaper="htb", rate_bps=1e8, queue_bytes=62500)
    lines = tc.batch_lines([("m0", shaped, 1500, True), ("m1", shaped, 1500, False), ("lo2", None, 1500, True)])
    assert lines[0] == "qdisc del dev m0 root"
    assert lines[1:4] == [" ".join(a[1:]) for a in tc.plan(shaped, 1500, "m0")]
    assert lines[4:7] == [" ".join(a[1:]) for a in tc.plan(shaped, 1500, "m1")]  # no del: kernel default
    assert lines[7:] == ["qdisc del dev lo2 root"]  # back to the default: only the del
    assert tc.batch_lines([("m0", None, 1500, False)]) == []


def test_commands_without_lab_names_enter_the_namespace_with_nsenter():
    from linklab import runner
    from linklab.measure.nstat import Nstat
    from linklab.measure.ping import Ping
    assert runner.netns_argv(["nstat", "-a"], "ll-x-h1") == ["ip", "netns", "exec", "ll-x-h1", "nstat", "-a"]
    assert runner.netns_argv(["nstat", "-a"], "ll-x-h1", names=False) == [
        "nsenter", "--net=/var/run/netns/ll-x-h1", "--", "nstat", "-a"]
    assert runner.netns_argv(["true"], None, names=False) == ["true"]
    assert Nstat.needs_names is False and Ping.needs_names is True  # ping resolves h2


def test_ip_and_ss_enter_a_named_namespace_with_their_own_flag():
    from linklab import runner
    assert runner.netns_argv(["ip", "neigh", "flush", "all"], "ll-x-h1") == ["ip", "-n", "ll-x-h1", "neigh", "flush", "all"]
    assert runner.netns_argv(["ss", "-Hltn"], "ll-x-h1", names=False) == ["ss", "-N", "ll-x-h1", "-Hltn"]
    assert runner.netns_argv(["ip", "link"], None) == ["ip", "link"]


def test_netlink_batch_builds_the_requests_iproute2_would_send(tmp_path, monkeypatch):
    # The pipelined build path encodes its own messages: decoded again, each must say what
    # `ip link add ... type veth peer ...`, `ip link set`, `ip addr add` say (names, not indexes).
    import socket

    from pyroute2.netlink import NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REQUEST
    from pyroute2.netlink.rtnl.ifaddrmsg import ifaddrmsg
    from pyroute2.netlink.rtnl.ifinfmsg import IFF_UP, ifinfmsg

    from linklab.linux import netlink

    monkeypatch.setattr(netlink.netns, "NETNS_RUN_DIR", str(tmp_path))
    (tmp_path / "ll-x-h2").write_text("")  # stands in for the peer's namespace file
    b = netlink.Batch("ll-x-h1")
    b.veth("eth0", "eth1", "ll-x-h2", mtu=9000)
    b.set("eth0", alias="linklab:x", master=7, up=False)
    b.addr(3, "fd00::1", 64, nodad=True)
    b.addr(3, "10.0.0.1", 24)
    assert len(b) == 4
    msgs = [data for _, _, data in b._msgs]

    veth = ifinfmsg(msgs[0])
    veth.decode()
    assert veth["header"]["flags"] == NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL
    assert (veth["index"], veth["flags"] & IFF_UP, veth["change"] & IFF_UP) == (0, IFF_UP, IFF_UP)
    assert veth.get_attr("IFLA_IFNAME") == "eth0" and veth.get_attr("IFLA_MTU") == 9000
    info = veth.get_attr("IFLA_LINKINFO")
    assert info.get_attr("IFLA_INFO_KIND") == "veth"
    peer = info.get_attr("IFLA_INFO_DATA").get_attr("VETH_INFO_PEER")
    assert peer.get_attr("IFLA_IFNAME") == "eth1" and peer.get_attr("IFLA_MTU") == 9000
    assert not peer["flags"] & IFF_UP  # a peer made up before the pair is joined: ENOTCONN

    st = ifinfmsg(msgs[1])
    st.decode()
    assert st["index"] == 0 and st.get_attr("IFLA_IFNAME") == "eth0"  # the kernel finds it by name
    assert (st.get_attr("IFLA_IFALIAS"), st.get_attr("IFLA_MASTER")) == ("linklab:x", 7)
    assert (st["flags"] & IFF_UP, st["change"] & IFF_UP) == (0, IFF_UP)

    v6, v4 = ifaddrmsg(msgs[2]), ifaddrmsg(msgs[3])
    v6.decode()
    v4.decode()
    assert (v6["family"], v6["prefixlen"], v6["index"], v6.get_attr("IFA_ADDRESS")) == (socket.AF_INET6, 64, 3, "fd00::1")
    assert v6["flags"] & 0x02  # IFA_F_NODAD
    assert (v4["family"], v4.get_attr("IFA_LOCAL"), v4.get_attr("IFA_ADDRESS"), v4["flags"]) == (socket.AF_INET, "10.0.0.1", "10.0.0.1", 0)
    # Sequence numbers in order: an error names the request it answers.
    assert [seq for seq, _, _ in b._msgs] == [1, 2, 3, 4]
    for fd in b._fds:
        __import__("os").close(fd)


def test_netlink_batch_packs_the_bytes_pyroute2_would(tmp_path, monkeypatch):
    # The batch packs its messages with struct (pyroute2's classes cost ~2 ms per message under
    # emulation); pyroute2's encoder of the same requests is the oracle, byte for byte.
    from pyroute2.netlink import NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REQUEST
    from pyroute2.netlink.rtnl import RTM_NEWADDR, RTM_NEWLINK, RTM_SETLINK
    from pyroute2.netlink.rtnl.ifaddrmsg import IFA_F_NODAD, ifaddrmsg
    from pyroute2.netlink.rtnl.ifinfmsg import IFF_UP, ifinfmsg

    from linklab.linux import netlink

    def encoded(m, kind, flags, seq):
        m["header"].update({"type": kind, "flags": NLM_F_REQUEST | NLM_F_ACK | flags, "sequence_number": seq})
        m.encode()
        return bytes(m.data)

    def link(kind, flags, seq, attrs, index=0, up=None):
        m = ifinfmsg()
        m["index"] = index
        if up is not None:
            m["flags"], m["change"] = (IFF_UP if up else 0), IFF_UP
        m["attrs"] = attrs
        return encoded(m, kind, flags, seq)

    def addr(seq, family, address, prefixlen, index, nodad, v4):
        m = ifaddrmsg()
        m["family"], m["prefixlen"], m["index"], m["scope"] = family, prefixlen, index, 0
        m["flags"] = IFA_F_NODAD if nodad else 0
        m["attrs"] = [("IFA_LOCAL", address), ("IFA_ADDRESS", address)] if v4 else [("IFA_ADDRESS", address)]
        return encoded(m, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, seq)

    monkeypatch.setattr(netlink.netns, "NETNS_RUN_DIR", str(tmp_path))
    (tmp_path / "ll-x-h2").write_text("")
    b = netlink.Batch("ll-x-h1")
    b.veth("eth0", "eth10", "ll-x-h2", mtu=9000, index=5, peer_index=7)
    b.veth("e", "p", "ll-x-h2", up=False)
    b.bridge("br0", stp=True, forward_delay=1500, index=9)
    b.set("eth0", alias="linklab:x:1234", master=7, up=False, mtu=1500)
    b.set("lo", up=True)
    b.addr(3, "fd00::1", 64, nodad=True)
    b.addr(3, "10.0.0.1", 24)
    fd1, fd2 = b._fds
    create = NLM_F_CREATE | NLM_F_EXCL

    def veth_info(peer, fd, mtu, peer_index):
        peer_msg = {"attrs": [("IFLA_IFNAME", peer), ("IFLA_NET_NS_FD", fd), *([("IFLA_MTU", mtu)] if mtu else [])],
                    "index": peer_index}
        return ("IFLA_LINKINFO", {"attrs": [("IFLA_INFO_KIND", "veth"),
                                            ("IFLA_INFO_DATA", {"attrs": [("VETH_INFO_PEER", peer_msg)]})]})

    want = [
        link(RTM_NEWLINK, create, 1, [("IFLA_IFNAME", "eth0"), ("IFLA_MTU", 9000), veth_info("eth10", fd1, 9000, 7)],
             index=5, up=True),
        link(RTM_NEWLINK, create, 2, [("IFLA_IFNAME", "e"), veth_info("p", fd2, None, 0)], up=False),
        link(RTM_NEWLINK, create, 3, [("IFLA_IFNAME", "br0"), ("IFLA_LINKINFO", {"attrs": [
            ("IFLA_INFO_KIND", "bridge"), ("IFLA_INFO_DATA", {"attrs": [("IFLA_BR_STP_STATE", 1),
                                                                         ("IFLA_BR_FORWARD_DELAY", 1500)]})]})], index=9),
        link(RTM_SETLINK, 0, 4, [("IFLA_IFNAME", "eth0"), ("IFLA_MTU", 1500), ("IFLA_IFALIAS", "linklab:x:1234"),
                                 ("IFLA_MASTER", 7)], up=False),
        link(RTM_SETLINK, 0, 5, [("IFLA_IFNAME", "lo")], up=True),
        addr(6, 10, "fd00::1", 64, 3, True, False),
        addr(7, 2, "10.0.0.1", 24, 3, False, True),
    ]
    got = [data for _, _, data in b._msgs]
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.hex() == w.hex(), f"message {i + 1}"
    assert len(got) == len(want)
    for fd in b._fds:
        __import__("os").close(fd)


def test_the_loopback_mark_is_read_from_a_raw_link_reply():
    # `down` reads each namespace's mark from one raw RTM_GETLINK reply (captured: kernel 6.18).
    from pathlib import Path

    from linklab.linux import netlink

    data = Path(__file__).resolve().parent.parent / "data" / "tools"
    reply = bytes.fromhex((data / "rtm_newlink_lo_alias.hex").read_text().strip())
    assert netlink.link_alias(reply) == "ll:demo"
    assert netlink.link_alias(bytes.fromhex((data / "rtm_getlink_enodev.hex").read_text().strip())) is None
    assert netlink.link_alias(reply[:40]) is None  # cut short before the alias: none, no error
    assert netlink.link_alias(b"") is None


def test_a_raw_link_dump_gives_names_indexes_mtus_states_and_masters():
    from pathlib import Path

    from linklab.linux import netlink

    data = Path(__file__).resolve().parent.parent / "data" / "tools" / "rtm_getlink_dump.hex"
    chunks = [bytes.fromhex(line) for line in data.read_text().split()]
    got, done = [], False
    for c in chunks:
        done, links = netlink.parse_link_dump(c)
        got += links
    assert done
    by = {x["ifname"]: x for x in got}
    assert sorted(by) == ["brq", "lo", "vq0", "vq1"]
    assert (by["vq0"]["mtu"], by["vq0"]["up"], by["vq0"]["master"]) == (1400, True, None)
    assert (by["vq1"]["mtu"], by["vq1"]["up"], by["vq1"]["master"]) == (1500, False, by["brq"]["index"])
    assert by["lo"]["index"] == 1 and by["lo"]["mtu"] == 65536
    assert len({x["index"] for x in got}) == 4
    assert {n: x["kind"] for n, x in by.items()} == {"brq": "bridge", "lo": None, "vq0": "veth", "vq1": "veth"}


def _dump_messages(path, parse):
    """Every chunk of a captured dump through `parse`: (finished, items, the chunks)."""
    chunks = [bytes.fromhex(line) for line in path.read_text().split()]
    got, done = [], False
    for c in chunks:
        done, items = parse(c)
        got += items
    return done, got, chunks


def _decoded_by_pyroute2(chunks, kind, msg_class):
    """Each `kind` message of the captured chunks, decoded by pyroute2 (the oracle)."""
    import struct

    for c in chunks:
        off = 0
        while off + 16 <= len(c):
            length, mtype = struct.unpack_from("IH", c, off)
            if mtype == kind:
                m = msg_class(c[off:off + length])
                m.decode()
                yield m
            off += (length + 3) & ~3


def test_a_raw_link_dump_gives_the_counters_pyroute2_decodes():
    # Captured in the lab VM (6.1) from the default lab's h1 after a ping, in three recv()s;
    # pyroute2's decoder of the same bytes is the oracle.
    from pathlib import Path

    from pyroute2.netlink.rtnl import RTM_NEWLINK
    from pyroute2.netlink.rtnl.ifinfmsg import ifinfmsg

    from linklab.linux import netlink

    data = Path(__file__).resolve().parent.parent / "data" / "tools" / "rtm_getlink_dump_traffic.hex"
    done, got, chunks = _dump_messages(data, netlink.parse_link_dump)
    assert len(chunks) == 3
    assert done
    decoded = list(_decoded_by_pyroute2(chunks, RTM_NEWLINK, ifinfmsg))
    oracle = {m.get_attr("IFLA_IFNAME"): m.get_attr("IFLA_STATS64") for m in decoded}
    kinds = {m.get_attr("IFLA_IFNAME"): (info.get_attr("IFLA_INFO_KIND") if (info := m.get_attr("IFLA_LINKINFO")) else None)
             for m in decoded}
    assert sorted(oracle) == sorted(x["ifname"] for x in got)
    for x in got:
        assert x["stats64"] == {f: oracle[x["ifname"]][f] for f in netlink.STATS64_FIELDS}, x["ifname"]
        assert x["kind"] == kinds[x["ifname"]], x["ifname"]
    assert {kinds["bond0"], kinds["bond0-m0"]} == {"bond", "veth"}
    by = {x["ifname"]: x["stats64"] for x in got}
    assert (by["bond0-m0"]["tx_packets"], by["bond0-m0"]["tx_bytes"], by["bond0"]["rx_packets"]) == (16, 1452, 33)


def test_a_raw_qdisc_dump_gives_the_counters_pyroute2_and_tc_show():
    # Captured in the lab VM (6.1) from the default lab's h1 after a ping: htb + bfifo on each
    # bond member, noqueue elsewhere. `tc -s qdisc show` a moment later said htb 1: on
    # bond0-m0 sent 1312 bytes 14 pkt.
    from pathlib import Path

    from pyroute2.netlink.rtnl import RTM_NEWQDISC
    from pyroute2.netlink.rtnl.tcmsg import tcmsg

    from linklab.linux import netlink

    data = Path(__file__).resolve().parent.parent / "data" / "tools" / "rtm_getqdisc_dump.hex"
    done, got, chunks = _dump_messages(data, netlink.parse_qdisc_dump)
    assert done
    oracle = []
    for m in _decoded_by_pyroute2(chunks, RTM_NEWQDISC, tcmsg):
        st = m.get_attr("TCA_STATS2")
        basic, queue = st.get_attr("TCA_STATS_BASIC"), st.get_attr("TCA_STATS_QUEUE")
        oracle.append({"ifindex": m["index"], "handle": m["handle"], "parent": m["parent"],
                       "kind": m.get_attr("TCA_KIND"),
                       "stats": {"bytes": basic["bytes"], "packets": basic["packets"],
                                 **{k: queue[k] for k in ("qlen", "backlog", "drops", "requeues", "overlimits")}}})
    assert got == oracle
    kinds = sorted(q["kind"] for q in got)
    assert kinds.count("htb") == 2 and kinds.count("bfifo") == 2 and "noqueue" in kinds
    assert [(q["ifindex"], q["stats"]["bytes"], q["stats"]["packets"]) for q in got if q["kind"] == "htb"] == \
        [(2, 1312, 14), (3, 1092, 12)]


def test_a_plan_that_differs_only_in_its_fifo_limit_is_a_change_in_place():
    from linklab.lab import build_lab
    from linklab.linux import tc

    def plans(mtu):
        lab = build_lab(ROOT_TOPOLOGIES / "bond2.yaml", [("links[*].mtu", mtu)], name="x", scale=0.1)
        return [tc.plan(q, link.mtu, end.ifname) for link, end, _, q in lab.egress_queues()]

    at450, at1500, at9200 = plans(450), plans(1500), plans(9200)
    assert at1500 == at9200  # the bucket and the FIFO alike: nothing to change
    for old, new in zip(at1500, at450):
        # the byte FIFO under htb's class 1:1 (handle 10:, hexadecimal as tc reads it) holds less at 450
        handle, parent, limit = tc.fifo_limit_change(old, new)
        assert (handle, parent) == (0x10 << 16, (1 << 16) | 1)
        assert limit == int(new[-1][-1]) < int(old[-1][-1])
    assert tc.fifo_limit_change(at1500[0], at1500[0]) is None  # no difference
    shaped_slower = [c if c[:3] != ["tc", "class", "add"] else [*c[:10], "rate", "50000000bit", *c[12:]]
                     for c in at450[0]]
    assert tc.fifo_limit_change(at1500[0], shaped_slower) is None  # the class differs too: rebuilt
    assert tc.fifo_limit_change([{"shaper": "htb"}, 1500], at450[0]) is None  # a signature of the older form
    assert tc.fifo_limit_change(at1500[0], []) is None
    assert tc.tc_handle("1:1") == 0x10001 and tc.tc_handle("ffff:") == 0xFFFF0000 and tc.tc_handle(":a") == 0xA


def test_a_fifo_limit_change_is_one_rtm_newqdisc_without_create():
    import struct

    from linklab.linux import netlink

    b = netlink.Batch("ns")
    b.fifo_limit(7, 0x100000, 0x10001, 46400)
    (seq, what, msg), = b._msgs
    length, kind, flags = struct.unpack_from("IHH", msg)
    assert length == len(msg) and kind == 36  # RTM_NEWQDISC
    assert flags == netlink.NLM_F_REQUEST | netlink.NLM_F_ACK  # no NLM_F_CREATE: change what exists
    family, index, handle, parent, _info = struct.unpack_from("BxxxiIII", msg, 16)
    assert (index, handle, parent) == (7, 0x100000, 0x10001)
    attrs = dict(netlink._attrs(msg, 16 + 20, len(msg)))
    assert netlink._string(attrs[netlink.TCA_KIND]) == "bfifo"
    assert struct.unpack("I", attrs[netlink.TCA_OPTIONS]) == (46400,)
