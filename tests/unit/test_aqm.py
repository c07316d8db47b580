"""Queue disciplines (impair.aqm): what each takes, how the queue's time bound becomes its limit,
the tc commands built for each discipline and parameter, and changes in place."""

import pytest

from linklab.errors import ValidationFailed
from linklab.linux import aqm as aqm_tc
from linklab.linux import tc
from linklab.model import Context, aqm, load_topology, resolve
from linklab.model.resolve import qdisc_for


def lab_from(tmp_path, text, scale=1.0):
    p = tmp_path / "t.yaml"
    p.write_text(text)
    return resolve(load_topology(p), Context(scale_override=scale))


def link(impair: str) -> str:
    return f"name: q\nhosts: {{a: {{}}, b: {{}}}}\nlinks: [{{endpoints: [a, b], impair: {impair}}}]\n"


# Every discipline and every parameter it takes: the words tc is given for it.
ARGS = [
    ("fq_codel", {"limit": 100, "flows": 64, "target": "5ms", "interval": "100ms", "quantum": 1514,
                  "memory_limit": "4M", "ce_threshold": "2ms", "drop_batch": 32, "ecn": True},
     ["fq_codel", "limit", "100", "flows", "64", "target", "5000us", "interval", "100000us", "quantum", "1514",
      "memory_limit", "4194304", "ce_threshold", "2000us", "drop_batch", "32", "ecn"]),
    ("codel", {"limit": 50, "target": "10ms", "interval": "200ms", "ce_threshold": "1ms", "ecn": False},
     ["codel", "limit", "50", "target", "10000us", "interval", "200000us", "ce_threshold", "1000us", "noecn"]),
    ("fq", {"limit": 1000, "flow_limit": 50, "quantum": 3028, "initial_quantum": 15140, "maxrate": "10mbit",
            "buckets": 256, "pacing": False, "ce_threshold": "3ms", "horizon": "2s"},
     ["fq", "limit", "1000", "flow_limit", "50", "quantum", "3028", "initial_quantum", "15140", "buckets", "256",
      "ce_threshold", "3000us", "horizon", "2000000us", "maxrate", "10000000bit", "nopacing"]),
    ("pie", {"limit": 200, "target": "15ms", "tupdate": "30ms", "alpha": 2, "beta": 20, "ecn": True,
             "bytemode": True, "dq_rate_estimator": False},
     ["pie", "limit", "200", "target", "15000us", "tupdate", "30000us", "alpha", "2", "beta", "20", "ecn",
      "bytemode", "no_dq_rate_estimator"]),
    ("fq_pie", {"limit": 300, "flows": 128, "target": "15ms", "tupdate": "15ms", "alpha": 2, "beta": 20,
                "quantum": 1514, "memory_limit": "32M", "ecn_prob": 10, "ecn": True, "bytemode": False,
                "dq_rate_estimator": True},
     ["fq_pie", "limit", "300", "flows", "128", "target", "15000us", "tupdate", "15000us", "alpha", "2", "beta", "20",
      "quantum", "1514", "memory_limit", "33554432", "ecn_prob", "10", "ecn", "nobytemode", "dq_rate_estimator"]),
    ("cake", {"rtt": "50ms", "diffserv": "diffserv4", "flowmode": "dual-dsthost", "nat": True, "wash": False,
              "ack_filter": "aggressive", "split_gso": False, "memlimit": "1M", "ecn": True},
     ["cake", "unlimited", "rtt", "50000us", "diffserv4", "dual-dsthost", "nat", "nowash", "ack-filter-aggressive",
      "no-split-gso", "memlimit", "1048576"]),
    ("red", {"min": "30kb", "max": "90kb", "avpkt": 1000, "burst": 40, "probability": 0.05, "ecn": True,
             "harddrop": True, "adaptive": False},
     ["red", "min", "30720", "max", "92160", "avpkt", "1000", "burst", "40", "probability", "0.05", "ecn", "harddrop"]),
]


def test_every_discipline_and_parameter_is_in_the_table():
    assert {name for name, _, _ in ARGS} | {"fifo"} == set(aqm.AQMS)
    for name, written, _ in ARGS:
        assert set(written) == set(aqm.PARAMS[name]), name


@pytest.mark.parametrize("name,written,want", ARGS, ids=[a[0] for a in ARGS])
def test_tc_arguments_for_each_discipline_and_parameter(name, written, want):
    assert aqm.problems(name, written) == []
    params = aqm.parsed(name, written)
    if name == "red":  # its thresholds are depths like queue:, bytes at the scaled rate (scale 1 here)
        params = {**params, **{k: aqm.threshold_bytes(params[k], 1e7, 1.0, 1500) for k in ("min", "max")}}
    assert aqm_tc.args(name, params) == want


@pytest.mark.parametrize("name,key,value,why", [
    ("fq_codel", "tupdate", "30ms", "unknown fq_codel parameter 'tupdate' (valid: limit, flows, target"),
    ("fq_codel", "target", "5 parsecs", "fq_codel target: unknown time unit"),
    ("pie", "alpha", 33, "pie alpha: out of range (0-32), got 33"),
    ("codel", "limit", 1.5, "codel limit: expected a whole number"),
    ("fq", "ecn", True, "fq cannot mark ECN, only drop"),
    ("fifo", "ecn", True, "fifo cannot mark ECN, only drop"),
    ("fifo", "limit", 10, "unknown fifo parameter 'limit' (it takes none: its bound is queue:)"),
    ("cake", "ecn", False, "cake always marks ECN-capable packets"),
    ("cake", "diffserv", "diffserv5", "cake diffserv: unknown value 'diffserv5' (valid: besteffort"),
    ("red", "probability", 2, "red probability: out of range (0-1), got 2"),
    ("fq_codel", "ecn", "yes", "fq_codel ecn: expected true or false, got 'yes'"),
])
def test_a_parameter_a_discipline_cannot_take_is_an_error_saying_why(name, key, value, why):
    (loc, msg), = aqm.problems(name, {key: value})
    assert loc == (key,) and msg.startswith(why), msg


def test_ecn_false_is_fine_anywhere_and_written_out_where_the_kernel_would_choose():
    assert aqm.problems("fq", {"ecn": False}) == aqm.problems("fifo", {"ecn": False}) == []
    # fq_codel marks by default in the kernel: linklab says noecn unless asked, like the others.
    assert aqm_tc.args("fq_codel", aqm.resolved_params("fq_codel", {}, rate_bps=None, scale=1, queue_bytes=None,
                                                       mtu=1500)) == ["fq_codel", "noecn"]


def test_the_time_bound_becomes_each_disciplines_limit(tmp_path):
    # 20 Mbit/s, 100 ms: 250000 bytes at scale 1, 125000 at scale 0.5 (the same 100 ms); 1514-byte frames.
    for scale, nbytes in ((1.0, 250000), (0.5, 125000)):
        for name in aqm.PACKET_LIMITED:
            q = qdisc_for({"rate": 20e6, "queue": ("time", 0.1), "aqm": name}, scale)
            assert q.queue_bytes == nbytes and q.aqm_params["limit"] == -(-nbytes // 1514), (name, scale)
        assert qdisc_for({"rate": 20e6, "queue": ("time", 0.1), "aqm": "cake"}, scale).aqm_params["memlimit"] == nbytes
        red = qdisc_for({"rate": 20e6, "queue": ("time", 0.1), "aqm": "red",
                         "aqm_params": {"min": "10ms", "max": "30ms"}}, scale).aqm_params
        assert red["limit"] == nbytes and red["min"] == nbytes // 10 and red["max"] == 3 * nbytes // 10
        assert red["bandwidth"] == 20e6 * scale and red["avpkt"] == 1514
    # A written limit is taken as tc takes it.
    assert qdisc_for({"rate": 20e6, "aqm": "codel", "aqm_params": {"limit": 7}}, 1.0).aqm_params["limit"] == 7


def test_the_discipline_replaces_the_fifo_under_htb_and_is_netems_child_with_netem():
    q = qdisc_for({"rate": 20e6, "queue": ("time", 0.1), "aqm": "fq_codel", "aqm_params": {"ecn": True}}, 1.0)
    plan = tc.plan(q, 1500, "eth1")
    assert [c[:3] for c in plan] == [["tc", "qdisc", "add"], ["tc", "class", "add"], ["tc", "qdisc", "add"]]
    assert plan[-1][5:] == ["parent", "1:1", "handle", "10:", "fq_codel", "limit", "166", "ecn"]
    assert not any("bfifo" in c for c in plan)
    delayed = tc.plan(qdisc_for({"rate": 20e6, "delay": 0.01, "aqm": "codel"}, 1.0), 1500, "eth1")
    assert delayed[-2][5:10] == ["parent", "1:1", "handle", "10:", "netem"]
    assert delayed[-1][5:10] == ["parent", "10:1", "handle", "20:", "codel"]
    tbf = tc.plan(qdisc_for({"rate": 20e6, "shaper": "tbf", "aqm": "pie"}, 1.0), 1500, "eth1")
    assert tbf[0][5:8] == ["root", "handle", "1:"] and tbf[0][8] == "tbf" and tbf[-1][5:10] == ["parent", "1:1", "handle", "10:", "pie"]


def test_without_a_rate_the_discipline_is_the_root_or_netems_child():
    alone = tc.plan(qdisc_for({"aqm": "fq_codel"}, 1.0), 1500, "e")
    assert alone == [["tc", "qdisc", "add", "dev", "e", "root", "handle", "1:", "fq_codel", "noecn"]]
    delayed = tc.plan(qdisc_for({"delay": 0.02, "aqm": "fq"}, 1.0), 1500, "e")
    assert delayed[0][5:9] == ["root", "handle", "1:", "netem"] and delayed[1][5:10] == ["parent", "1:1", "handle", "10:", "fq"]
    assert qdisc_for({"aqm": "fifo"}, 1.0) is None  # the FIFO without a rate: nothing to build


def test_fifo_and_an_unset_aqm_resolve_and_serialise_as_before(tmp_path):
    plain = lab_from(tmp_path, link("{rate: 20mbit, queue: 100ms}")).links[0].veths[0].egress_a
    fifo = lab_from(tmp_path, link("{rate: 20mbit, queue: 100ms, aqm: fifo}")).links[0].veths[0].egress_a
    assert plain == fifo and "aqm" not in plain.model_dump() and plain.queue_holder == "bfifo"
    fq = lab_from(tmp_path, link("{rate: 20mbit, aqm: fq_codel}")).links[0].veths[0].egress_a
    assert fq.queue_holder == "fq_codel" and fq.model_dump()["aqm"] == "fq_codel"


def test_parameters_merge_per_key_and_go_when_another_discipline_is_chosen(tmp_path):
    text = ("name: q\nhosts: {a: {}, b: {}}\n"
            "defaults: {impair: {aqm: fq_codel, aqm_params: {target: 10ms}}}\n"
            "links: [{endpoints: [a, b], impair: {rate: 20mbit, aqm_params: {interval: 50ms},"
            " from: {b: {aqm: pie, aqm_params: {tupdate: 20ms}}}}}]\n")
    pair = lab_from(tmp_path, text).links[0].veths[0]
    assert pair.egress_a.aqm == "fq_codel" and pair.egress_a.aqm_params["target"] == 0.01
    assert pair.egress_a.aqm_params["interval"] == 0.05
    assert pair.egress_b.aqm == "pie" and "target" not in pair.egress_b.aqm_params
    assert pair.egress_b.aqm_params["tupdate"] == 0.02


def test_inherited_aqm_judges_a_from_blocks_parameters(tmp_path):
    text = link("{rate: 20mbit, aqm: codel, from: {b: {aqm_params: {quantum: 1514}}}}")
    with pytest.raises(ValidationFailed) as e:
        lab_from(tmp_path, text)
    assert e.value.problems == ["links[0].impair.from.b.aqm_params.quantum (line 3): unknown codel parameter "
                                "'quantum' (valid: limit, target, interval, ce_threshold, ecn)"]
    assert e.value.exit_code == 2


def test_set_changes_a_parameter_in_place_and_rebuilds_for_another_discipline():
    def plan(**f):
        return tc.plan(qdisc_for({"rate": 20e6, "queue": ("time", 0.1), **f}, 1.0), 1500, "eth1")
    old = plan(aqm="fq_codel", aqm_params={"target": "5ms", "ecn": False})
    assert tc.aqm_change(old, plan(aqm="fq_codel", aqm_params={"target": "10ms", "ecn": False})) == \
        ["qdisc", "change", "dev", "eth1", "parent", "1:1", "handle", "10:", "fq_codel", "limit", "166", "target",
         "10000us", "noecn"]
    assert tc.aqm_change(old, plan(aqm="fq_codel", aqm_params={"target": "5ms", "ecn": True}))[-1] == "ecn"
    # Another discipline, a parameter named only on one side (change would keep the old one),
    # the flow table's size (fixed once made), the shaper's rate: not a change in place.
    assert tc.aqm_change(old, plan(aqm="codel", aqm_params={"target": "5ms"})) is None
    assert tc.aqm_change(old, plan(aqm="fq_codel", aqm_params={"ecn": False})) is None
    flows = plan(aqm="fq_codel", aqm_params={"flows": 64})
    assert tc.aqm_change(flows, plan(aqm="fq_codel", aqm_params={"flows": 128})) is None
    assert tc.aqm_change(old, tc.plan(qdisc_for({"rate": 30e6, "queue": ("time", 0.1), "aqm": "fq_codel",
                                                 "aqm_params": {"target": "5ms"}}, 1.0), 1500, "eth1")) is None
    assert tc.aqm_change(old, old) is None


def test_a_fault_event_changes_the_shaper_in_place_around_the_same_discipline():
    old = qdisc_for({"rate": 20e6, "aqm": "fq_codel"}, 1.0)
    new = qdisc_for({"rate": 10e6, "aqm": "fq_codel"}, 1.0)
    cmds = tc.change_plan(old, new, 1500, "e")
    assert cmds is not None and all(c[2] == "change" for c in cmds) and cmds[-1][9] == "fq_codel"
    assert tc.change_plan(old, qdisc_for({"rate": 10e6, "aqm": "pie"}, 1.0), 1500, "e") is None
    assert tc.change_plan(old, qdisc_for({"rate": 10e6}, 1.0), 1500, "e") is None


def test_exports_build_the_discipline_with_linklabs_own_commands():
    from linklab.interop.mininet_export import faithful_tcintf, mininet_tcintf
    delayed = qdisc_for({"delay": 0.01, "aqm": "codel"}, 1.0)
    assert faithful_tcintf(qdisc_for({"delay": 0.01}, 1.0)) is not None  # netem alone: TCLink is faithful
    assert faithful_tcintf(delayed) is None  # with a discipline: linklab's tc commands instead
    notes: list[str] = []
    mininet_tcintf(delayed, "link x", notes, 1500)
    assert notes == ["link x: aqm codel dropped (TCLink queues in its own FIFO or RED)"]


def test_an_experiment_may_sweep_disciplines_and_ecn_and_exclude_what_cannot_be(tmp_path):
    # fifo cannot mark and cake cannot stop marking: those points are excluded, and an excluded
    # point is not validated (it was, and the experiment was refused for points it never builds).
    from linklab.validate import validate_file
    (tmp_path / "t.yaml").write_text(
        "name: q\nhosts: {h1: {}, h2: {}}\nswitches: {s1: {}}\n"
        "links: [{endpoints: [h1, s1]}, {name: neck, endpoints: [s1, h2],"
        " impair: {from: {s1: {rate: 300mbit, queue: 100ms}}}}]\n")
    axis, ecn = '"links[neck].impair.from.s1.aqm"', '"links[neck].impair.from.s1.aqm_params.ecn"'
    exp = tmp_path / "e.yaml"
    text = (f"name: e\ntopology: t.yaml\nclient: h1\nserver: h2\nrepetitions: 1\nmeasure: [throughput, queue]\n"
            f"matrix:\n  {axis}: [fifo, fq_codel, cake]\n  {ecn}: [false, true]\n")
    exp.write_text(text + f"exclude:\n  - {{{axis}: fifo, {ecn}: true}}\n  - {{{axis}: cake, {ecn}: false}}\n")
    assert validate_file(str(exp)) == "experiment"
    exp.write_text(text + f"exclude:\n  - {{{axis}: cake, {ecn}: false}}\n")
    with pytest.raises(ValidationFailed) as e:
        validate_file(str(exp))
    assert len(e.value.problems) == 1 and "fifo cannot mark ECN" in e.value.problems[0]
