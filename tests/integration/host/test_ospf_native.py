"""routing: ospf on this host's own kernel: network namespaces, veth and IP forwarding are all an
OSPF lab without impairments or bonds needs, so it runs here without the lab VM (placement
decides from what the lab needs; `up --native` says so outright, should the lab ever need more). The bundled triangle (topologies/ospf3.yaml) through the CLI: every host reaches every
host, the routers' routes are OSPF's and take the cheaper path, a link taken down reroutes within
a bound, a link's cost changed with `linklab set` moves the route, `down` and `clean` (after a crash) leave no FRR process, namespace or file.

Needs root and Debian's frr (the test set-up group installs it). Its figures: bench/README.md
("Routed labs")."""

import json
import re
import subprocess
import time
from pathlib import Path

import pytest
from pyroute2 import netns

from linklab import procs, runner
from linklab.backends.linux import frrd
from linklab.model import frr
from tests.integration.host import cli

ROOT = Path(__file__).resolve().parents[3]
LAB = "frrhost"  # this test's own: every namespace it makes is ll-frrhost-*
H3_SUBNET = "10.77.2.0/24"  # h3-r3, the third link of ospf3.yaml
# A link taken down is seen by zebra at once (the interface goes down, no dead interval to wait:
# frr.DEAD_S is 4 s) and ospfd's first SPF waits 0 ms: measured 0.03 s natively. Bounded above
# below the dead interval, so a reroute that only came from a neighbour timing out fails; below,
# by the poll itself: r1's route went through r2 just before the link went down, so no reroute is
# seen in less than one netlink read after it (0 would mean it was never through r2).
REROUTE_S = (0.001, frr.DEAD_S - 1.0)
# The link back up: a point-to-point adjacency forms after hellos each way (each side sends one
# as its interface comes up, then 1 s apart) and the database exchange, and the routers' new
# router-LSAs may wait out OSPF's MinLSInterval (5 s since the ones sent when the link went down:
# FRR's default, kept) before SPF moves r1's route back. Measured 1.04-8.7 s natively; bounded
# below by a hello each way and the exchange (more than a fifth of a second: 0 would mean the
# route never left), above by twice the LSA interval and a few hellos.
RESTORE_S = (0.2, 14.0)


def linklab(*args: str, state_dir: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return cli.linklab(*args, timeout=timeout, state_dir=state_dir)


def ns(node: str) -> str:
    return f"ll-{LAB}-{node}"


def route_to(node: str, prefix: str) -> str:
    return runner.run(["ip", "route", "show", prefix], netns=ns(node)).stdout


def frr_pids() -> list[int]:
    """FRR daemons (not zombies) whose path space is one of this lab's namespaces."""
    return [pid for pid in (int(d.name) for d in Path("/proc").iterdir() if d.name.isdigit())
            if procs.alive(pid) and any(a.startswith(f"ll-{LAB}-") for a in procs.cmdline(pid))
            and Path(procs.cmdline(pid)[0] if procs.cmdline(pid) else "/").name in frr.DAEMONS]


def leftovers(recorded: list[int]) -> list[str]:
    out = [f"netns {n}" for n in netns.listnetns() if n.startswith(f"ll-{LAB}-")]
    out += [f"pid {p}" for p in frr_pids()]
    out += [str(d) for d in frrd.RUN_ROOT.glob(f"ll-{LAB}-*")]
    out += [str(frrd.CRASH_ROOT / f"{d}.{p}") for p in recorded for d in frr.DAEMONS
            if (frrd.CRASH_ROOT / f"{d}.{p}").exists()]
    return out


@pytest.fixture(scope="module")
def frr_installed():
    # A failure, not a skip: the test set-up group installs frr.
    if not frrd.installed():
        pytest.fail("FRR is not installed: this test did NOT run (scripts/setup.sh --with frr)", pytrace=False)


@pytest.fixture
def state_dir(tmp_path, frr_installed):
    yield tmp_path / "state"
    linklab("down", LAB, state_dir=tmp_path / "state")
    linklab("clean", LAB, state_dir=tmp_path / "state")


def up(state_dir) -> list[int]:
    res = linklab("up", "topologies/ospf3.yaml", "--name", LAB, "--native", state_dir=state_dir)
    assert res.returncode == 0, res.stdout + res.stderr
    assert re.search(r"OSPF converged: 3 routers, 12 subnets", res.stdout), res.stdout
    pids = frr_pids()
    assert len(pids) == 9, pids  # zebra, ospfd, ospf6d in each of three routers
    return pids


def ping(src: str, dst: str, *extra: str) -> runner.Result:
    return runner.run(["ping", "-n", "-c", "1", "-W", "2", *extra, dst], netns=ns(src), check=False, timeout=10)


def link_then_route(state: str, route: str, limit_s: float, step_s: float) -> float:
    """Seconds from r1's end of r1-r2 set `state` (the peer loses or regains its carrier too, as
    with a cable) until r1's route to h3's subnet reads `route`; fails after `limit_s`."""
    t0 = time.monotonic()
    runner.run(["ip", "link", "set", "eth2", state], netns=ns("r1"))
    while route not in route_to("r1", H3_SUBNET):
        assert time.monotonic() - t0 < limit_s, route_to("r1", H3_SUBNET)
        time.sleep(step_s)
    return time.monotonic() - t0


def test_ospf_converges_reroutes_around_a_down_link_and_down_leaves_nothing(state_dir):
    pids = up(state_dir)
    for src in ("h1", "h2", "h3"):
        for dst in ("h1", "h2", "h3"):
            if src != dst:
                assert ping(src, dst).ok, f"{src} -> {dst}"
                assert ping(src, f"{dst}-v6", "-6").ok, f"{src} -> {dst} (IPv6)"
    # Every route a router has beyond its own links is OSPF's (proto 188), IPv4 and IPv6.
    status = linklab("status", "--json", state_dir=state_dir)
    live = json.loads(status.stdout)["live"]["nodes"]
    for r in ("r1", "r2", "r3"):
        learned = [x for x in live[r]["routes"] if x["proto"] != "kernel"]
        assert len(learned) == 6 and {x["proto"] for x in learned} == {"ospf"}, live[r]["routes"]
        assert sorted(n["state"].split("/")[0] for n in live[r]["frr"]["neighbours"]) == ["Full", "Full"]
    # r1 -> h3: through r2 at cost 2, not the direct link at cost 5; h3 answers h1 across three routers.
    assert "dev eth2 proto ospf" in route_to("r1", H3_SUBNET)
    assert re.search(r"ttl=61\b", ping("h1", "h3").stdout)

    # r1's end of r1-r2 down (the peer loses its carrier too, as with a pulled cable).
    reroute = link_then_route("down", "dev eth3 proto ospf", limit_s=30, step_s=0.005)
    print(f"reroute after r1-r2 down: {reroute:.3f} s")
    assert REROUTE_S[0] <= reroute <= REROUTE_S[1], reroute
    res = ping("h1", "h3")
    assert res.ok and re.search(r"ttl=62\b", res.stdout), res.stdout  # two routers now: r1, r3
    assert ping("h1", "h2").ok  # h2 through r3 as well

    restore = link_then_route("up", "dev eth2 proto ospf", limit_s=60, step_s=0.05)
    print(f"back through r2 after r1-r2 up: {restore:.3f} s")
    assert RESTORE_S[0] <= restore <= RESTORE_S[1], restore

    # A cost changed in place: r1-r3 at 1 makes the direct link r1's way to h3. The routers'
    # FRR starts anew with the new configuration, and `set` returns once every router routes every
    # subnet along the new cheapest paths (the build's convergence wait), so the route is there.
    res = linklab("set", "--lab", LAB, "links[r1r3].cost=1", state_dir=state_dir)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "dev eth3 proto ospf" in route_to("r1", H3_SUBNET), res.stdout
    res = ping("h1", "h3")
    assert res.ok and re.search(r"ttl=62\b", res.stdout), res.stdout
    pids = sorted(set(pids) | set(frr_pids()))  # the daemons started anew, for leftovers()

    res = linklab("down", LAB, state_dir=state_dir)
    assert res.returncode == 0, res.stdout + res.stderr
    assert leftovers(pids) == []
    assert not (state_dir / "labs" / f"{LAB}.json").exists()


def test_clean_removes_the_daemons_of_a_lab_whose_state_is_lost(state_dir):
    """After a crash that lost the state file, `clean` finds the lab's namespaces by their marks
    and with them the FRR daemons inside and FRR's directories named after them."""
    pids = up(state_dir)
    (state_dir / "labs" / f"{LAB}.json").unlink()
    res = linklab("clean", LAB, state_dir=state_dir)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"netns ll-{LAB}-r1" in res.stdout
    assert leftovers(pids) == []
