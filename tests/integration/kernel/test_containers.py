"""Container nodes on real labs (issue 23): Docker containers joined to the lab like hosts —
bridge, bond, netem delay, ping and iperf3 with the image's programs, a sweep with container
client and server — and what `down` and `clean` leave (nothing), also after `kill -9` during
`up`. Needs linklab/base (`make images`; scripts/test.sh builds it before the tiers)."""

import csv
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from pyroute2 import netns

from linklab import lab, runner, state
from linklab.docker import engine
from linklab.errors import EnvironmentProblem, LinklabError
from linklab.measure.ping import parse_ping
from linklab.model.paths import goodput_fraction
from tests.integration import steal
from linklab.sweep.engine import Options, run

DATA = Path(__file__).resolve().parents[1] / "data"
QUIET = dict(say=lambda *_: None)
DELAY_S = 0.010  # topologies/containers.yaml: c2's link, each way
pytestmark = pytest.mark.timeout(600)


def ours(name: str) -> list[str]:
    """Containers in linklab's engine labelled as lab `name`'s."""
    api = engine.running()
    return [c["Names"][0] for c in api.containers({"linklab.lab": name})] if api else []


def leftovers(name: str) -> list[str]:
    """Containers, namespaces and hosts files of lab `name`: [] when it is gone."""
    return (ours(name) + [ns for ns in netns.listnetns() if ns.startswith(f"ll-{name}-")]
            + [str(d) for d in Path("/etc/netns").glob(f"ll-{name}-*")])


def rtts_ms(out: str) -> tuple[float, float]:
    """Minimum and average RTT (ms) from ping's summary line."""
    rtt = parse_ping(out).summary_rtt_ms
    assert rtt, out
    return rtt[0], rtt[1]


@pytest.fixture(scope="module")
def ctrlab():
    name = "itctr"
    rec = lab.up("topologies/containers.yaml", name=name, **QUIET)
    yield name, rec
    if state.load(name):
        lab.down(name, **QUIET)
    assert leftovers(name) == []


def exec_in(name: str, node: str, argv: list[str], timeout: float = 60) -> runner.Result:
    return runner.run(lab.exec_argv(name, node, argv), check=False, timeout=timeout)


def test_containers_run_the_image_and_show_in_status(ctrlab):
    name, rec = ctrlab
    live = lab.status(name)["live"]["nodes"]
    for node in ("c1", "c2"):
        c = live[node]["container"]
        assert c["image"] == "linklab/base" and c["state"] == "running" and len(c["id"]) == 12
        assert runner.container_pid(rec["netns"][node]) == c["pid"]  # commands enter its first process
    assert "container" not in live["h1"]
    # Its own root filesystem: none of this machine's checkout there, as there is on a host.
    res = exec_in(name, "c1", ["sh", "-c", f"test -e {Path.cwd()} && echo host-fs || echo own-fs"])
    assert res.stdout.split() == ["own-fs"], (res.stdout, res.stderr)
    assert "host-fs" in exec_in(name, "h1", ["sh", "-c", f"test -e {Path.cwd()} && echo host-fs"]).stdout
    # Addresses and the bond: c1 reaches the bridge over bond0 of two members, as a host would.
    ifaces = {i["ifname"]: i for i in live["c1"]["interfaces"]}
    assert ifaces["bond0"]["kind"] == "bond" and ifaces["bond0"]["addresses"]
    assert sorted(n for n, i in ifaces.items() if i.get("master") == "bond0") == ["bond0-m0", "bond0-m1"]
    # The lab's names in the container's own /etc/hosts, and its environment from the topology.
    hosts = exec_in(name, "c1", ["cat", "/etc/hosts"]).stdout
    assert re.search(r"^10\.\S+\tc2$", hosts, re.M) and re.search(r"^10\.\S+\th1$", hosts, re.M), hosts
    env = runner.run(["cat", f"/proc/{live['c2']['container']['pid']}/environ"]).stdout
    assert "LAB_ROLE=server" in env.split("\0")


def test_ping_across_with_the_netem_delay_in_the_rtt(ctrlab):
    name, _ = ctrlab
    for src, dst in (("c1", "h1"), ("h1", "c1"), ("c1", "c2"), ("h1", "c2")):
        res = exec_in(name, src, ["ping", "-n", "-c", "5", "-i", "0.2", "-W", "2", dst])
        assert " 0% packet loss" in res.stdout, (src, dst, res.stdout, res.stderr)
        lo, avg = rtts_ms(res.stdout)
        if dst == "c2":  # 10 ms each way on c2's link: RTT >= 20 ms; under emulation a few ms more
            assert 2 * DELAY_S * 1e3 <= lo and avg < 2 * DELAY_S * 1e3 + 30, (src, dst, lo, avg)
        else:  # no delay on the path: well under the delayed one's 20 ms
            assert avg < 2 * DELAY_S * 1e3 / 2, (src, dst, lo, avg)


def test_iperf3_from_the_image_between_a_container_and_a_host_measures_the_rate_set_on_its_link(ctrlab, record_property):
    name, rec = ctrlab
    # A rate on the container's link, set on the running lab (the last test of this lab): the
    # image's iperf3 must measure it, as a host's would. Written 100 Mbit/s, run at the lab's scale.
    lab.set_params(name, [("links[c2up].impair.rate", "100mbit")], **QUIET)
    rate_bps = 100e6 * lab.preview(state.load(name), []).scale
    server = runner.start(["iperf3", "-s", "-1", "-p", "5301"], netns=rec["netns"]["c2"])
    try:
        deadline = time.monotonic() + 30
        while "5301" not in exec_in(name, "c2", ["ss", "-Hltn"]).stdout:
            assert time.monotonic() < deadline, "iperf3 server in c2 did not listen"
            time.sleep(0.2)
        res = exec_in(name, "h1", ["iperf3", "-c", "c2", "-p", "5301", "-t", "6", "-O", "1", "-i", "0.5", "-J"],
                      timeout=60)
        doc = json.loads(res.stdout)
        bps = doc["end"]["sum_received"]["bits_per_second"]
        series = [round(iv["sum"]["bits_per_second"] / rate_bps, 2) for iv in doc["intervals"]]
        record_property("goodput_of_rate", round(bps / rate_bps, 3))
        # TCP payload at MTU 1500 over the frame the shaper counts: 1448 / 1514 of the rate. One
        # 6 s window after a second of slow start omitted, 20 ms RTT: within 10 % below it (the
        # container sweep's bound), 5 % above the rate itself. iperf3 counts bytes when it reads
        # them: a receiver stalled as the omitted second ends counts what queued in its socket
        # meanwhile, a share of the window that a longer window makes smaller (a 3 s one measured
        # 0.958 of the rate, then 1.026, and 1.095 under 20-36 % steal in fresh-clone CI runs).
        # Unshaped, or shaped at the written 100 Mbit/s instead of the lab's scale, it would be 10x.
        theory = rate_bps * goodput_fraction(1500)
        assert 0.9 * theory < bps < 1.05 * rate_bps, (bps / rate_bps, "of the rate; per 0.5 s:", series)
    finally:
        try:
            server.wait(15)  # -1: the server exits after its one test
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(5)
    # The server ran the image's iperf3 (inside the container's mount namespace), not this machine's.
    assert os.readlink(f"/proc/{rec['netns']['c2'].split('@')[1]}/ns/mnt") != os.readlink("/proc/self/ns/mnt")


def test_sweep_with_container_client_and_server(tmp_path):
    name = "ctrpair"
    try:
        store = run(DATA / "ctr_sweep.yaml", Options(results=tmp_path / "results"), **QUIET)
        with open(store.path / "results.csv") as f:
            rows = {r["server"]: r for r in csv.DictReader(f)}
        assert set(rows) == {"h1", "c2"}
        for server, r in rows.items():
            # 20 Mbit/s links: TCP payload at MTU 1500 is 20 * 1448/1514 = 19.1 Mbit/s; within 10 % below
            # (less the steal's share where flagged host_stolen, at most 10 %: tests/integration/steal.py), 1 % above.
            bps, theory = float(r["throughput_bps"]), 20e6 * goodput_fraction(1500)
            assert (0.9 - steal.room(r)) * theory < bps < 1.01 * 20e6, (server, bps, r.get("host_steal_pct"))
    finally:
        if state.load(name):
            lab.down(name, **QUIET)
    assert leftovers(name) == []


def test_a_missing_image_fails_with_how_to_get_it_and_leaves_nothing():
    with pytest.raises(EnvironmentProblem) as e:
        lab.up(DATA / "ctr_noimage.yaml", **QUIET)
    assert e.value.exit_code == 4 and "linklab/no-such-image" in str(e.value) and "docker save" in e.value.hint
    assert state.load("ctrnoimage") is None and leftovers("ctrnoimage") == []


def test_a_container_that_exits_at_once_shows_its_logs():
    try:
        with pytest.raises(LinklabError) as e:
            lab.up(DATA / "ctr_exits.yaml", **QUIET)
        assert "exited at once (exit code 3)" in str(e.value) and "linklab-test-boom" in str(e.value)
    finally:
        if state.load("ctrexits"):
            lab.down("ctrexits", **QUIET)
    assert leftovers("ctrexits") == []


def test_a_node_that_changes_kind_loses_or_gets_its_container():
    """container -> host: the container goes at once (not at `down`), the node keeps its links;
    host -> container: a container again, joined to the same links."""
    name = "ctrswap"
    try:
        lab.up(DATA / "ctr_swap.yaml", **QUIET)
        assert ours(name) == ["/ll-ctrswap-c1"]
        rec = lab.set_params(name, [("hosts.c1", {})], **QUIET)
        assert ours(name) == [] and runner.container_pid(rec["netns"]["c1"]) is None
        res = exec_in(name, "c1", ["ping", "-n", "-c", "2", "-W", "2", "h1"])
        assert " 0% packet loss" in res.stdout, res.stdout + res.stderr
        rec = lab.set_params(name, [("hosts.c1", {"kind": "container", "image": "linklab/base"})], **QUIET)
        assert ours(name) == ["/ll-ctrswap-c1"] and runner.container_pid(rec["netns"]["c1"])
        res = exec_in(name, "c1", ["ping", "-n", "-c", "2", "-W", "2", "h1"])
        assert " 0% packet loss" in res.stdout, res.stdout + res.stderr
    finally:
        if state.load(name):
            lab.down(name, **QUIET)
    assert leftovers(name) == []


def test_kill_9_during_up_then_clean_leaves_nothing():
    """Killed at several moments of `up` (engine answering, containers being made, links being
    joined); `clean` then removes every container, namespace and interface."""
    name = "ctrpair"
    before = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    landed = 0
    for delay in (0.5, 1.5, 3.0, 5.0):
        pid = os.fork()
        if pid == 0:
            try:
                lab.up(DATA / "ctr_pair.yaml", **QUIET)
            finally:
                os._exit(0)
        time.sleep(delay)
        if os.waitpid(pid, os.WNOHANG) == (0, 0):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            landed += 1
        elif state.load(name):
            lab.down(name, **QUIET)  # `up` finished first: a live lab, which clean rightly keeps
        lab.clean(name, **QUIET)
        assert leftovers(name) == [], f"after a kill at {delay} s"
        assert state.load(name) is None
    assert landed >= 2, "the kills came after `up` had finished: nothing was tested"
    after = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert [ln.split(":")[1] for ln in after.splitlines()] == [ln.split(":")[1] for ln in before.splitlines()]
