"""A host's own port on a slow shaped link, natively on this host's kernel (a rate-only lab needs
only htb and bfifo): linklab caps the port's gso_max_size at half its byte FIFO, so a sender's
TCP can no longer hand it a GSO packet the FIFO never admits. BBR, which paces its first rounds at
a veth's microsecond RTT and so builds 64 KiB GSO packets, moved 0.14 Mbit/s through this link's
10 ms (25 kB) FIFO before, 19.2 Mbit/s after (bench/README.md, "Queues and shapers"). About 10 s.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from linklab.backends.linux.names import netns_name
from linklab.linux import netlink
from linklab.measure.iperf3 import parse_result
from linklab.model.paths import goodput_fraction
from linklab.model import queues
from tests.integration.host import cli

ROOT = Path(__file__).resolve().parents[3]
LAB = "itgso"
RATE_BPS = 20e6
TOPOLOGY = f"""name: {LAB}
hosts: {{h1: {{}}, h2: {{}}}}
links:
  - {{name: wire, endpoints: [h1, h2], impair: {{rate: 20mbit}}}}
"""


def linklab(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return cli.linklab(*args, timeout=timeout)


def _gso_max_size(node: str, ifname: str) -> int:
    with netlink.iproute(netns_name(LAB, node)) as ipr:
        (link,) = ipr.link("get", ifname=ifname)
        return link.get_attr("IFLA_GSO_MAX_SIZE")


@pytest.fixture
def lab(tmp_path):
    topo = tmp_path / "gso.yaml"
    topo.write_text(TOPOLOGY)
    res = linklab("up", str(topo), "--native")
    assert res.returncode == 0, res.stdout + res.stderr
    yield topo
    linklab("down", LAB)


def test_a_slow_host_port_takes_no_gso_packet_its_fifo_cannot_hold_and_bbr_fills_the_link(lab):
    # The port's FIFO: 10 ms at 20 Mbit/s (the host port's default), 25,000 bytes; its cap half.
    want = queues.gso_cap(25_000, 1500)
    assert want == 12_500
    assert _gso_max_size("h1", "eth1") == _gso_max_size("h2", "eth1") == want
    avail = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    assert "bbr" in avail, f"this kernel offers {avail}: the test needs tcp_bbr"
    server = linklab("exec", "--lab", LAB, "h2", "--", "iperf3", "-s", "-1", "-D")
    assert server.returncode == 0, server.stderr
    # -D returns before the daemon listens: wait for its socket (5 s at most)
    listening = linklab("exec", "--lab", LAB, "h2", "--", "sh", "-c",
                        "for i in $(seq 50); do ss -Hltn 'sport = :5201' | grep -q . && exit 0; sleep 0.1; done; exit 1")
    assert listening.returncode == 0, "iperf3's server never listened"
    res = linklab("exec", "--lab", LAB, "h1", "--", "iperf3", "-c", "h2", "-t", "3", "-C", "bbr", "-J",
                  "--connect-timeout", "3000")
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr
    bps = parse_result(res.stdout).received_bps  # linklab's own iperf3 parser: it raises on iperf3's error JSON
    # TCP's goodput on the shaped link (payload over the frame htb counts): 0.8 of it at least (a
    # 3 s flow's first round trips), at most the goodput itself and 2 % for the shaper's bucket.
    theory = RATE_BPS * goodput_fraction(1500)
    assert 0.8 * theory <= bps <= 1.02 * theory, (bps, theory)
    # A queue that grows gets Linux's default back.
    res = linklab("set", "--lab", LAB, "links[wire].impair.rate=500mbit")
    assert res.returncode == 0, res.stdout + res.stderr
    assert _gso_max_size("h1", "eth1") == queues.GSO_MAX_BYTES
