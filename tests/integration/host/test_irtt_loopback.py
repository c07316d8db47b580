"""irtt as linklab runs it: the server's and the client's argv (linklab/measure/irtt.py) run for
real on this host's loopback, the client's output parsed. The unit tier checks the argv's words
against a list; only the program itself says whether it takes them (irtt 0.9 wants a long
option's value after "=").

Host tier: Debian's irtt (the test set-up group installs it); no namespace, no root needed.
Its time: ~2 s."""

from __future__ import annotations

import shutil
import socket

import pytest

from linklab import procs, runner
from linklab.measure.irtt import IrttClient, IrttServer, parse_irtt
from linklab.measure.probes.udp_rtt import start_server


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_client_and_server_argv_run_and_every_round_trip_comes_back():
    if shutil.which("irtt") is None:  # a failure, not a skip: the test set-up group installs it
        pytest.fail("irtt is not installed: this test did NOT run (scripts/setup.sh --with irtt)", pytrace=False)
    port = free_udp_port()
    # As the probe starts it: the client only once the server says it listens (CI's run sent it
    # before, and irtt's client ended at once on "connection refused").
    server = start_server(IrttServer("127.0.0.1", port), None, "this host")
    try:
        client = IrttClient("127.0.0.1", duration_s=1.0, interval_s=0.1, port=port)
        res = runner.run(client.argv(), check=False, timeout=15)
        assert res.ok, res.stdout + res.stderr
        result = parse_irtt(res.stdout)
    finally:
        procs.stop_popen([server])
    # 1 s at one every 0.1 s: 10 sent (irtt sends at 0 and every interval before the end), give
    # or take one at either end; on loopback none is lost and each takes well under 50 ms.
    assert 9 <= result.sent <= 11, result
    assert result.loss_percent == 0.0, result
    assert all(0.0 < ms < 50.0 for ms in result.rtts_ms), result.rtts_ms
