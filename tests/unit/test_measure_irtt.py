"""irtt (linklab/measure/irtt.py): argv of server and client, the client's JSON parsed from
captured real output (tests/data/tools/README.md), the window past slow start, the row; the probe
(linklab/measure/probes/udp_rtt.py) chosen by `measure: [udp_rtt]`, its row from captured output,
and its refusals."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from linklab.errors import EnvironmentProblem
from linklab.measure import irtt
from linklab.measure.probes import udp_rtt
from linklab.measure.probes.ping import LoadPing
from linklab.sweep import measure_rep

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tests" / "data" / "tools"
IDLE = (TOOLS / "irtt_client_idle.json").read_text()
STOPPED = (TOOLS / "irtt_client_server_stopped.json").read_text()


def test_argv_binds_the_servers_own_address_and_the_client_sends_every_interval_for_the_window():
    assert irtt.IrttServer("10.0.0.2", 5401).argv() == ["irtt", "server", "-b", "10.0.0.2:5401", "-i", "10ms"]
    assert irtt.IrttServer("fd00::2", 5401).argv()[3] == "[fd00::2]:5401"
    assert irtt.IrttClient("10.0.0.2", duration_s=22.0, interval_s=0.1, port=5401).argv() == [
        "irtt", "client", "-i", "100ms", "-d", "22000ms", "-l", "172", "--wait=500ms", "-Q", "-o", "-",
        "10.0.0.2:5401"]
    with pytest.raises(ValueError, match="positive interval"):
        irtt.IrttClient("10.0.0.2", duration_s=0)


def test_the_clients_json_gives_every_round_trip_in_ms_by_its_sequence_number():
    res = irtt.parse_irtt(IDLE)
    doc = json.loads(IDLE)
    assert res.interval_s == 0.1 and res.sent == 20 and [t.seq for t in res.trips] == list(range(20))
    assert res.trips[0].rtt_ms == pytest.approx(0.167945) and res.trips[1].rtt_ms == pytest.approx(0.129222)
    # the figures irtt's own summary gives for the whole test
    assert min(res.rtts_ms) == pytest.approx(doc["stats"]["rtt"]["min"] / 1e6)
    assert max(res.rtts_ms) == pytest.approx(doc["stats"]["rtt"]["max"] / 1e6)
    assert res.loss_percent == 0.0


def test_a_lost_round_trip_counts_as_lost():
    res = irtt.parse_irtt(STOPPED)
    assert (res.sent, len(res.rtts_ms)) == (17, 16) and res.trips[-1] == irtt.RoundTrip(16, None, "true")
    assert res.loss_percent == pytest.approx(100 / 17, abs=1e-3)  # irtt's own: 5.88 %
    assert res.loss_percent == pytest.approx(json.loads(STOPPED)["stats"]["packet_loss_percent"], abs=1e-3)


def test_the_window_leaves_out_what_was_sent_before_the_skip_and_the_row_summarises_the_rest():
    res = irtt.parse_irtt(STOPPED)
    w = res.window(1.0)  # round trip k left k x 0.1 s in: 10..16 are past 1 s
    assert [t.seq for t in w.trips] == list(range(10, 17))
    row = w.row()
    kept = sorted(t.rtt_ms for t in res.trips[10:16])
    assert row["udp_rtt_sent"] == 7 and row["udp_rtt_received"] == 6
    assert row["udp_rtt_loss_pct"] == pytest.approx(100 / 7, abs=1e-3)
    assert row["udp_rtt_p50_ms"] == pytest.approx((kept[2] + kept[3]) / 2, abs=1e-4)
    assert kept[-2] <= row["udp_rtt_p95_ms"] <= kept[-1]
    assert irtt.IrttResult(0.1, ()).row()["udp_rtt_p50_ms"] is None


@pytest.mark.parametrize("text,match", [("", "not irtt JSON"), ('{"stats": {}}', "without round_trips"),
                                        ((TOOLS / "irtt_client_no_server.stderr").read_text(), "not irtt JSON")])
def test_output_that_is_no_irtt_json_is_a_measurement_error(text, match):
    with pytest.raises(irtt.IrttError, match=match):
        irtt.parse_irtt(text)


def test_measure_udp_rtt_adds_the_probe_beside_the_load_ping_on_its_own_port(monkeypatch):
    from tests.unit.test_probes import Plan, handle
    monkeypatch.delenv("LINKLAB_IN_VM", raising=False)
    probes = measure_rep.probes_for(Plan, ["ping_load", "udp_rtt"], handle())
    kinds = [type(p) for p in probes]
    assert kinds.index(udp_rtt.UdpRoundTrips) == kinds.index(LoadPing) + 1
    probe = probes[kinds.index(udp_rtt.UdpRoundTrips)]
    assert (probe.port, probe.duration) == (5201 + measure_rep.UDP_RTT_PORT_OFFSET, 5.0)
    assert udp_rtt.UdpRoundTrips not in [type(p) for p in measure_rep.probes_for(Plan, ["ping_load"], handle())]


def test_the_probes_row_is_the_window_past_slow_start_and_its_raw_output_kept():
    probe = udp_rtt.UdpRoundTrips(port=5401, duration=1.0)
    probe.client, probe.out = object(), STOPPED
    rep = SimpleNamespace(omit=0.0, raw={})
    row = probe.row(rep)  # skip: omit + 1 s, as the load ping's
    assert row == irtt.parse_irtt(STOPPED).window(1.0).row()
    probe.out, probe.err = "", (TOOLS / "irtt_client_no_server.stderr").read_text()
    with pytest.raises(irtt.IrttError, match="gave no round trips: Error: read udp4 .* connection refused"):
        probe.row(rep)


def test_without_irtt_installed_the_probe_names_the_command_that_installs_it(monkeypatch):
    monkeypatch.setattr(udp_rtt.shutil, "which", lambda prog: None)
    with pytest.raises(EnvironmentProblem, match="irtt, which is not installed") as e:
        udp_rtt.UdpRoundTrips(port=5401, duration=1.0).before(SimpleNamespace())
    assert "irtt" in e.value.hint
