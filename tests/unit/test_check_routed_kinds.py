"""route, path, service and command checks judged on output captured in real namespaces
(tests/data/tools/README.md: "Routes, traces and service probes"; the lab they were captured in
is tests/data/tools/llcap_routed.yaml: a with two routes to b, through r1 and r2), and the
negation every state kind shares."""

import json
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from linklab.check.kinds import REGISTRY, service_probe
from linklab.check.kinds.base import FAIL, INCONCLUSIVE, PASS
from linklab.check.kinds.command import MISSING, at
from linklab.check.kinds.service import url
from linklab.lab import build_lab
from tests.captured_tools import out, params, tool
from linklab.measure.traceroute import Traceroute, TracerouteError, parse_traceroute

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tests" / "data" / "tools"





def judge(kind: str, raw, lab, **kw):
    return REGISTRY[kind].verdict(params(kind, **kw), raw, lab)


@pytest.fixture(scope="module")
def lab():
    return build_lab(TOOLS / "llcap_routed.yaml", [])


@pytest.fixture(scope="module")
def routes_a():
    return {"routes": json.loads(tool("routes_of_llcap_a.json"))}


# ---- route: the route the kernel would choose, its next hops, device and protocol -------------

def test_the_captured_routes_are_what_ip_route_printed():
    # The backend's reading (netlink) and `ip -j route` of the same namespace agree on every
    # IPv4 prefix, gateway and device: the kind judges what `ip route` shows.
    ours = [r for r in json.loads(tool("routes_of_llcap_a.json")) if ":" not in r["to"]
            and not any(":" in (h["via"] or "") for h in r["nexthops"])]
    theirs = json.loads(tool("ip_j_route_llcap_a.json"))
    assert [r["to"] for r in ours] == [r["dst"] for r in theirs]
    for o, t in zip(ours, theirs):
        hops = t.get("nexthops") or [{"gateway": t.get("gateway"), "dev": t["dev"]}]
        assert [(h["via"], h["dev"]) for h in o["nexthops"]] == [(h.get("gateway"), h["dev"]) for h in hops]


def test_route_understands_a_multipath_route(lab, routes_a):
    ecmp = {"node": "a", "to": "10.255.9.0/24"}
    assert judge("route", routes_a, lab, **ecmp, via=["r1", "r2"], proto="linklab", nexthops=2).verdict == PASS
    assert judge("route", routes_a, lab, **ecmp, via="10.255.2.2", dev="eth1", proto="77").verdict == PASS
    j = judge("route", routes_a, lab, **ecmp, via=["r1", "b"], nexthops=1)
    assert j.verdict == FAIL and j.detail == "no next hop via b; 2 next hop(s), not 1"
    assert j.observed == "10.255.9.0/24 proto linklab nexthop via 10.255.1.2 dev eth0 nexthop via 10.255.2.2 dev eth1"
    # ...and the next hop and device must be one hop's: r2 is not reached through eth0
    assert judge("route", routes_a, lab, **ecmp, via="r2", dev="eth0").verdict == FAIL


def test_route_to_a_name_judges_the_longest_prefix_covering_its_address(lab, routes_a):
    # b is 10.255.3.2 in a's hosts file: the static 10.255.3.0/24 via r1 covers it (the default too)
    j = judge("route", routes_a, lab, node="a", to="b", via="r1", proto="static")
    assert j.verdict == PASS and j.observed == "10.255.3.0/24 proto static via 10.255.1.2 dev eth0"
    j = judge("route", routes_a, lab, node="a", to="b", via="r2", proto="boot")
    assert j.verdict == FAIL and j.detail == "no next hop via r2; proto static, not boot"
    assert judge("route", routes_a, lab, node="a", to="10.255.4.9", via="r2", dev="eth1", proto="boot").verdict == PASS


def test_the_default_route_covers_what_nothing_else_does_and_exact_asks_for_the_prefix(lab, routes_a):
    j = judge("route", routes_a, lab, node="a", to="10.255.77.1", via="r1")
    assert j.verdict == PASS and j.observed.startswith("default proto static")
    j = judge("route", routes_a, lab, node="a", to="10.255.77.0/24", exact=True)
    assert j.verdict == FAIL and j.observed == "no route to 10.255.77.0/24 on a"
    assert judge("route", routes_a, lab, node="a", to="0.0.0.0/0", exact=True).verdict == PASS


def test_route_keeps_the_families_apart(lab, routes_a):
    # a had no IPv6 default: b's IPv6 address has no route, and the IPv4 default does not count
    j = judge("route", routes_a, lab, node="a", to="b", family=6)
    assert j.verdict == FAIL and j.observed == "no route to fd00:255:3::2/128 on a"
    assert judge("route", routes_a, lab, node="a", to="fd00:255:9::1", via=["r1", "r2"]).verdict == PASS


def test_expect_absent_turns_a_state_check_round(lab, routes_a):
    absent = {"node": "a", "to": "10.255.77.0/24", "exact": True, "expect": "absent"}
    assert judge("route", routes_a, lab, **absent).verdict == PASS
    j = judge("route", routes_a, lab, node="a", to="10.255.9.0/24", expect="absent")
    assert j.verdict == FAIL and j.detail == "present, and must be absent"
    # "no route via r2" to b: the route there is through r1
    assert judge("route", routes_a, lab, node="a", to="b", via="r2", expect="absent").verdict == PASS
    kind = REGISTRY["route"]
    assert kind.expectation(params("route", **absent), lab).startswith("absent: a: route to 10.255.77.0/24")


def test_every_state_kind_takes_expect_absent_and_the_others_refuse_it():
    from linklab.check.spec import negatable
    state = ["address", "mtu", "bond", "qdisc", "sysctl", "ovs_controller", "ovs_flow", "route"]
    assert [n for n, k in REGISTRY.items() if k.negation == "absent"] == state
    assert [n for n, k in REGISTRY.items() if k.negation == "unreachable"] == ["reach", "service"]
    assert negatable() == f"expect: absent is for {', '.join(state)}; expect: unreachable is for reach, service"


def test_sysctl_absent_fails_when_the_value_is_there(lab):
    kind = REGISTRY["sysctl"]
    p = params("sysctl", node="a", key="net.ipv4.ip_forward", value=1, expect="absent")
    assert kind.verdict(p, {"net.ipv4.ip_forward": "1"}, lab).verdict == FAIL
    assert kind.verdict(p, {"net.ipv4.ip_forward": "0"}, lab).verdict == PASS


# ---- path: traceroute's hops ----------------------------------------------------------------

def test_traceroute_parser_reads_hops_multipath_stars_and_flags():
    t = parse_traceroute(tool("traceroute_ecmp_mixed.txt"))
    assert t.target == "10.255.9.1" and t.max_hops == 16 and t.reached
    assert [h.addresses for h in t.hops] == [("10.255.2.2", "10.255.1.2"), ("10.255.9.1",)]
    silent = parse_traceroute(tool("traceroute_silent_hop.txt"))
    assert [(h.addresses, h.unanswered) for h in silent.hops] == [((), 3), (("10.255.4.2",), 2)] and silent.reached
    cut = parse_traceroute(tool("traceroute_net_unreachable.txt"))
    assert cut.hops[0].flags == ("!N", "!N") and cut.hops[0].unanswered == 1 and not cut.reached
    assert len(parse_traceroute(tool("traceroute_no_answer.txt")).hops) == 16
    with pytest.raises(TracerouteError, match="Temporary failure in name resolution"):
        parse_traceroute(tool("traceroute_unknown_name.txt"), tool("traceroute_unknown_name.stderr.txt"))


def test_traceroute_argv():
    assert Traceroute(target="b-v6", family=6, max_hops=8).argv() == \
        ["traceroute", "-n", "-6", "-m", "8", "-w", "1", "-q", "3", "b-v6"]
    assert Traceroute.parse_version(tool("traceroute_version.txt")) == "2.1.2"


def test_path_names_the_routers_crossed(lab):
    raw = {"traces": [out("traceroute_two_hops")]}
    j = judge("path", raw, lab, **{"from": "a", "to": "b", "hops": ["r1"]})
    assert j.verdict == PASS and j.observed == "r1 (10.255.1.2) -> b"
    j = judge("path", raw, lab, **{"from": "a", "to": "b", "hops": ["r2"]})
    assert j.verdict == FAIL and j.detail == "hop 1 is not r2"
    j = judge("path", raw, lab, **{"from": "a", "to": "b", "hops": []})
    assert j.verdict == FAIL and j.detail == "1 router(s) on the way, not 0"


@pytest.mark.parametrize("capture, family", [("traceroute_ecmp_mixed", 4), ("traceroute6_ecmp", 6)])
def test_path_takes_alternatives_where_a_multipath_route_spreads_the_probes(lab, capture, family):
    raw = {"traces": [out(capture)]}
    j = judge("path", raw, lab, **{"from": "a", "to": "b", "family": family, "hops": [["r1", "r2"]]})
    assert j.verdict == PASS and "|" in j.observed
    assert judge("path", raw, lab, **{"from": "a", "to": "b", "family": family, "hops": ["r1"]}).verdict == FAIL


def test_a_silent_router_is_inconclusive_and_a_path_that_ends_fails(lab):
    p = {"from": "a", "to": "10.255.4.2", "hops": ["r2"]}
    j = judge("path", {"traces": [out("traceroute_silent_hop")] * 3}, lab, **p)
    assert j.verdict == INCONCLUSIVE and j.observed == "* -> b" and "hop 1 did not answer" in j.detail
    # a later complete trace is the one judged
    j = judge("path", {"traces": [out("traceroute_silent_hop"), out("traceroute_two_hops")]}, lab,
              **{"from": "a", "to": "b", "hops": ["r1"]})
    assert j.verdict == PASS and j.values["traces"] == 2
    for capture in ("traceroute_net_unreachable", "traceroute_no_answer", "traceroute_dead_end"):
        j = judge("path", {"traces": [out(capture)]}, lab, **{"from": "a", "to": "b", "hops": ["r1"]})
        assert j.verdict == FAIL and "did not answer within 16 hops" in j.detail, capture
    j = judge("path", {"traces": [out("traceroute_net_unreachable")]}, lab, **{"from": "a", "to": "b", "hops": []})
    assert j.observed == "r1 (10.255.1.2) !N !N -/-> 10.255.77.1 (not reached)"
    j = judge("path", {"traces": [out("traceroute_unknown_name")]}, lab, **{"from": "a", "to": "b", "hops": []})
    assert j.verdict == FAIL and "Temporary failure in name resolution" in j.observed


# ---- service: TCP, HTTP, DNS ----------------------------------------------------------------

def probes(*names: str) -> dict:
    return {"probes": [out(n) for n in names]}


def test_tcp_service_connects_or_is_refused(lab):
    tcp = {"from": "a", "to": "b", "tcp": 8080}
    assert judge("service", probes("probe_tcp_open"), lab, **tcp).verdict == PASS
    j = judge("service", probes("probe_tcp_refused") | {}, lab, **tcp)
    assert j.verdict == FAIL and j.detail == "ConnectionRefusedError: [Errno 111] Connection refused"
    closed = {**tcp, "expect": "unreachable"}
    assert judge("service", probes("probe_tcp_refused", "probe_tcp_net_unreachable"), lab, **closed).verdict == PASS
    j = judge("service", probes("probe_tcp_refused", "probe_tcp_open"), lab, **closed)
    assert j.verdict == FAIL and j.detail == "it answered"


def test_http_service_status_and_body(lab):
    web = {"from": "a", "to": "b", "http": 8080}
    j = judge("service", probes("probe_http_ok"), lab, **web, body=r"hello\s+lab")
    assert j.verdict == PASS and j.observed == "HTTP 200, 19 B"
    j = judge("service", probes("probe_http_ok"), lab, **web, body="goodbye")
    assert j.verdict == FAIL and j.detail == "body does not match 'goodbye'"
    missing = {"from": "a", "to": "b", "http": "8080/missing"}
    assert judge("service", probes("probe_http_404"), lab, **missing, status=404, body="File not found").verdict == PASS
    j = judge("service", probes("probe_http_404"), lab, **missing)
    assert j.verdict == FAIL and j.detail == "status 404, not 200"
    # an error status is an answer: the service is not unreachable
    assert judge("service", probes("probe_http_404", "probe_http_404"), lab, **missing,
                 expect="unreachable").verdict == FAIL


def test_http_urls(lab):
    def u(http, to="b", family=4):
        return url(params("service", **{"from": "a", "to": to, "http": http, "family": family}), lab)
    assert u(8080) == "http://b:8080/" and u("/index.html") == "http://b:80/index.html"
    assert u("8080/x?y=1", family=6) == "http://b-v6:8080/x?y=1" and u(80, to="fd00:255:3::2") == "http://[fd00:255:3::2]:80/"


def test_dns_service_asked_of_a_server_or_the_resolver(lab):
    dns = {"from": "a", "dns": "www.lab", "server": "10.255.3.2"}
    assert judge("service", probes("probe_dns_server_a"), lab, **dns, address="10.255.9.1").verdict == PASS
    j = judge("service", probes("probe_dns_server_a"), lab, **dns, address="b")
    assert j.verdict == FAIL and j.detail == "10.255.9.1, not b"
    assert judge("service", probes("probe_dns_server_aaaa"), lab, **dns, family=6, address="fd00:255:9::1").verdict == PASS
    j = judge("service", probes("probe_dns_server_refused"), lab, **dns)
    assert j.verdict == FAIL and j.detail == "no address (rcode 5)"
    j = judge("service", probes("probe_dns_server_silent"), lab, **dns)
    assert j.verdict == FAIL and j.detail == "TimeoutError: timed out"
    assert judge("service", probes("probe_dns_server_silent", "probe_dns_server_refused"), lab, **dns,
                 expect="unreachable").verdict == PASS
    # no server: the node's resolver, its hosts file (b is any of b's addresses)
    assert judge("service", probes("probe_dns_hosts"), lab, **{"from": "a", "dns": "b", "address": "b"}).verdict == PASS
    assert judge("service", probes("probe_dns_hosts_unknown"), lab, **{"from": "a", "dns": "nosuchhost"}).verdict == FAIL


def test_a_probe_that_printed_no_answer_is_an_error():
    assert service_probe.read("", "python3: not found\n") == {"error": "python3: not found"}
    assert service_probe.read("Traceback...\n") == {"error": "Traceback..."}


def _run_probe(**question) -> dict:
    argv = service_probe.argv(**question)
    argv[0] = sys.executable
    res = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    return service_probe.read(res.stdout, res.stderr)


def test_the_probe_program_itself_asks_tcp_and_http():
    # The program the check runs in a node, run here against a server of this test's own.
    class Hello(BaseHTTPRequestHandler):
        def do_GET(self):
            body = b"hello probe" if self.path == "/" else b"nope"
            self.send_response(200 if self.path == "/" else 404)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_):
            pass

    server = HTTPServer(("127.0.0.1", 0), Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        assert _run_probe(mode="tcp", host="127.0.0.1", port=port, timeout=5)["connected"] is True
        got = _run_probe(mode="http", url=f"http://127.0.0.1:{port}/", timeout=5)
        assert (got["status"], got["body"]) == (200, "hello probe")
        assert _run_probe(mode="http", url=f"http://127.0.0.1:{port}/x", timeout=5)["status"] == 404
    finally:
        server.shutdown()
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    assert _run_probe(mode="tcp", host="127.0.0.1", port=free, timeout=5)["error"].startswith("ConnectionRefusedError")


def test_the_probe_program_reads_a_dns_answer():
    # A DNS server of this test's own answers the query the probe sends with one A record, the
    # name compressed as servers do: the probe's own reading of the wire format.
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))

    def serve():
        query, peer = sock.recvfrom(512)
        question = query[12:]
        answer = b"\xc0\x0c" + (1).to_bytes(2, "big") + (1).to_bytes(2, "big") + (60).to_bytes(4, "big") + \
            (4).to_bytes(2, "big") + socket.inet_aton("10.1.2.3")
        sock.sendto(query[:2] + b"\x81\x80" + b"\x00\x01\x00\x01\x00\x00\x00\x00" + question + answer, peer)

    threading.Thread(target=serve, daemon=True).start()
    import linklab.check.kinds.service_probe as sp
    script = sp.SCRIPT.replace("(a[\"server\"], 53,", "(a[\"server\"], a[\"port\"],")
    assert script != sp.SCRIPT
    res = subprocess.run([sys.executable, "-c", script, json.dumps(
        {"mode": "dns", "name": "www.lab", "server": "127.0.0.1", "port": sock.getsockname()[1], "family": 4,
         "timeout": 5})], capture_output=True, text=True, timeout=30)
    sock.close()
    got = service_probe.read(res.stdout, res.stderr)
    assert got["addresses"] == ["10.1.2.3"] and got["rcode"] == 0


# ---- command: exit, stdout, JSON ------------------------------------------------------------

def ran(name: str, rc: int = 0) -> dict:
    return {"rc": rc, "stdout": tool(name), "stderr": ""}


def test_command_judges_json_values_of_ip_j_route(lab):
    raw = ran("command_ip_j_route_ecmp.json")
    run = "ip -j route show 10.255.9.0/24"
    good = {"0.nexthops.1.gateway": "10.255.2.2", "0.protocol": 77, "0.nexthops.0.dev": "eth0"}
    assert judge("command", raw, lab, node="a", run=run, json=good).verdict == PASS
    j = judge("command", raw, lab, node="a", run=run, json={"0.nexthops.1.gateway": "10.255.1.2", "0.metric": 5})
    assert j.verdict == FAIL and j.detail == '0.nexthops.1.gateway = "10.255.2.2", not "10.255.1.2"; 0.metric: missing'
    assert params("command", node="a", run=run).run == ["ip", "-j", "route", "show", "10.255.9.0/24"]


def test_command_judges_exit_code_stdout_and_timeout(lab):
    raw = ran("ip_route_llcap_a.txt")
    assert judge("command", raw, lab, node="a", run=["ip", "route"], stdout=r"^10\.255\.9\.0/24 proto 77").verdict == PASS
    j = judge("command", {**raw, "rc": 2}, lab, node="a", run=["ip", "route"], stdout="^default via 10.255.2.2")
    assert j.verdict == FAIL and j.detail == "exit 2, not 0; stdout does not match '^default via 10.255.2.2'"
    assert judge("command", {**raw, "rc": 1}, lab, node="a", run=["false"], exit=1).verdict == PASS
    j = judge("command", {"timed_out": True, "rc": -1, "stdout": ""}, lab, node="a", run=["sleep", "9"], timeout="2s")
    assert j.verdict == FAIL and j.detail == "did not finish within 2s" and j.observed == "timed out"
    j = judge("command", raw, lab, node="a", run=["ip", "route"], json={"0.dst": "x"})
    assert j.verdict == FAIL and j.detail == "stdout is not JSON"


def test_json_paths():
    doc = [{"a": {"b": [1, 2]}}]
    assert at(doc, "0.a.b.1") == 2 and at(doc, "0.a.b.-1") == 2
    assert at(doc, "1") is MISSING and at(doc, "0.x") is MISSING and at(doc, "0.a.b.c") is MISSING


# ---- reach: a verdict per pair ----------------------------------------------------------------

def test_reach_gives_each_pair_its_verdict(lab):
    kind = REGISTRY["reach"]
    p = params("reach", **{"from": ["a", "b"], "to": ["a", "b"]})
    raw = {"a->b": [out("ping_normal")], "b->a": [out("ping_host_unreachable")]}
    j = kind.verdict(p, raw, lab)
    assert j.verdict == FAIL and j.detail == "a->b pass; b->a fail: unreachable"
    assert {k: v["verdict"] for k, v in j.values["pairs"].items()} == {"a->b": PASS, "b->a": FAIL}
