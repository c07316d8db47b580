"""`linklab export --to flent RUN`: a repetition's time series as flent's data file
(linklab/interop/flent_export.py), checked field by field against what flent's loader reads
(flent/resultset.py: ResultSet.unserialise and load_file, file format 4).

The repetitions are recorded from captured real output (tests/data/tools/README.md): iperf3's
receiver series around a rate cut (0.1 s intervals, 40 -> 10 Mbit/s at 1.7 s) as each flow up,
a reverse test's 1 s intervals as each flow down (its start moved to the same second: captured
on another run), the 0.1 s ping of ping_idle_q5ms.txt as the ping through the window. The queue
samples are made here in the sampler's format (no real capture of queues.json is stored)."""

from __future__ import annotations

import gzip
import json
from datetime import datetime
from pathlib import Path

import pytest

from linklab.cli import main
from linklab.interop import flent_export
from linklab.measure import queue_evidence
from linklab.measure.ping import parse_ping
from linklab.results.store import ResultsStore
from linklab.sweep.matrix import Point

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tests" / "data" / "tools"
UP = json.loads((TOOLS / "iperf3_tcp_rate_cut_server_series.json").read_text())
DOWN = json.loads((TOOLS / "iperf3_tcp_reverse_json_server.json").read_text())
T0 = UP["start"]["timestamp"]["timesecs"]
PING = (TOOLS / "ping_idle_q5ms.txt").read_text()
RRUL = ["up1", "up2", "up3", "up4", "down1", "down2", "down3", "down4"]


def queues_json() -> str:
    samples = [queue_evidence.Sample(t=round(0.1 * i, 3), backlog_bytes=1250 * i, backlog_pkts=i, drops=0,
                                     marks=None, delay_s=0.001 * i) for i in range(1, 31)]
    return json.dumps({"interval_s": 0.1, "errors": [], "series_columns": ["t_s", "backlog_bytes", "backlog_pkts",
                                                                            "drops", "marks", "delay_s"],
                       "directions": {"r1/eth2": {"holder": "fq_codel", "rate_bps": 10e6, "summary": {},
                                                  "series": [[s.t, s.backlog_bytes, s.backlog_pkts, s.drops, s.marks,
                                                              s.delay_s] for s in samples]}}})


IRTT = (TOOLS / "irtt_client_idle.json").read_text()


def record_run(tmp_path: Path, flows: list[str], *, ping=True, queues=True, udp=False, error=None) -> Path:
    store = ResultsStore.create(tmp_path, "bufferbloat", {"fingerprint": "f", "tool": {"duration": 3}})
    down = json.loads(json.dumps(DOWN))
    down["start"]["timestamp"]["timesecs"] = T0
    raw = {f"flow-{n}.json": json.dumps(UP if n.startswith("up") else down) for n in flows}
    if ping:
        raw["ping-load.txt"] = PING
    if queues:
        raw["queues.json"] = queues_json()
    if udp:
        raw["irtt.json"] = IRTT
    row = {"point_key": "aqm=fq_codel", "client": "h1", "server": "h2", "throughput_bps": 1.0, "jain_index": 0.9,
           **{f"flow_{n}_direction": "up" if n.startswith("up") else "down" for n in flows}}
    if error:
        row["error"] = error
    store.record(Point(index=0, axes={"aqm": "fq_codel"}, key="aqm=fq_codel", id="p0"), 1, raw, row,
                 tool={"duration_s": 3.0, "ip": 4})
    return store.path


def load(path: Path) -> dict:
    with gzip.open(path, "rt") as f:
        return json.load(f)


def test_rrul_is_written_as_flents_rrul_be_with_its_series_names(tmp_path):
    files, skipped = flent_export.export(record_run(tmp_path, RRUL), tmp_path / "out")
    assert skipped == [] and len(files) == 1 and files[0].name.endswith(".flent.gz")
    data = load(files[0])
    assert data["version"] == 4 and set(data) == {"version", "metadata", "x_values", "results", "raw_values"}
    meta = data["metadata"]
    assert meta["NAME"] == "rrul_be"  # flent loads rrul_be.conf's plots (all_scaled) for it
    assert set(data["results"]) == {"TCP upload BE", "TCP upload BE2", "TCP upload BE3", "TCP upload BE4",
                                     "TCP download BE", "TCP download BE2", "TCP download BE3", "TCP download BE4",
                                     "Ping (ms) ICMP", "Queue backlog (ms) r1/eth2", "Queue delay (ms) r1/eth2"}
    assert meta["DATA_FILENAME"] == files[0].name and meta["HOST"] == "h2" and meta["LOCAL_HOST"] == "h1"
    assert meta["SERIES_META"]["TCP upload BE"] == {"UNITS": "Mbits/s"}


def test_the_file_holds_what_flents_loader_reads_field_by_field(tmp_path):
    files, _ = flent_export.export(record_run(tmp_path, RRUL), tmp_path / "out")
    data = load(files[0])
    meta = data["metadata"]
    # unserialise: version an int no newer than 4; TIME and T0 parsed as UTC by parse_date
    assert isinstance(data["version"], int) and data["version"] <= 4
    t0 = datetime.strptime(meta["T0"], "%Y-%m-%dT%H:%M:%S.%fZ")
    datetime.strptime(meta["TIME"], "%Y-%m-%dT%H:%M:%S.%fZ")
    assert (t0 - datetime(1970, 1, 1)).total_seconds() == T0  # the flows' start, as iperf3 stamped it
    # x_values: seconds from T0, every STEP_SIZE; TOTAL_LENGTH their last (flent takes max(x) without it)
    xs = data["x_values"]
    assert meta["STEP_SIZE"] == 0.2 and xs[0] == 0 and all(abs(b - a - 0.2) < 1e-6 for a, b in zip(xs, xs[1:]))
    assert meta["TOTAL_LENGTH"] == pytest.approx(max(xs), abs=0.2) and meta["LENGTH"] == 3.0
    # add_result asserts each series has one value per x
    assert all(len(v) == len(xs) for v in data["results"].values())
    # raw_values: for each series, samples with t (epoch seconds) and val; raw_series yields t - T0
    for name, samples in data["raw_values"].items():
        assert samples and all(set(s) == {"t", "val"} and s["t"] >= T0 for s in samples), name
    assert set(data["raw_values"]) == set(data["results"])
    for key in ("NAME", "TIME", "TITLE", "LENGTH", "TOTAL_LENGTH", "STEP_SIZE", "HOSTS", "IP_VERSION",
                "TEST_PARAMETERS", "FLENT_VERSION", "BATCH_NAME", "DATA_FILENAME", "SERIES_META"):
        assert key in meta, key


def test_each_flow_is_its_receivers_goodput_and_the_ping_its_rtt_at_each_step(tmp_path):
    data = load(flent_export.export(record_run(tmp_path, RRUL), tmp_path / "out")[0][0])
    xs, up, down = data["x_values"], data["results"]["TCP upload BE3"], data["results"]["TCP download BE"]
    at = {round(x, 1): i for i, x in enumerate(xs)}
    # the receiver's 0.1 s intervals around the cut (server_output_json): 38-39 before, 10.4 at 1.8 s
    assert 36 <= up[at[1.0]] <= 40 and up[at[1.8]] == pytest.approx(10.4, abs=0.1) and 7 <= up[at[2.6]] <= 12
    # a flow down: the client's own 1 s intervals (it is the receiver), each held over its second
    first = DOWN["intervals"][0]["sum"]["bits_per_second"] / 1e6
    assert down[at[0.2]] == pytest.approx(first) and down[at[1.0]] == pytest.approx(first)
    # nothing measured before the first interval's end at x=0; the steps up to the last flow's end (3.05 s)
    assert up[0] is None and down[0] is None and xs[-1] == pytest.approx(3.0) and len(xs) == 16
    replies = parse_ping(PING).replies
    ping = data["results"]["Ping (ms) ICMP"]
    assert ping[at[0.2]] == replies[2].rtt_ms and ping[at[0.4]] == replies[4].rtt_ms  # seq N left (N-1) x 0.1 s in
    assert [s["val"] for s in data["raw_values"]["Ping (ms) ICMP"]] == [r.rtt_ms for r in replies]
    backlog = data["results"]["Queue backlog (ms) r1/eth2"]
    assert backlog[at[1.0]] == pytest.approx(10.0)  # 12 500 B at 10 Mbit/s
    assert data["results"]["Queue delay (ms) r1/eth2"][at[2.0]] == pytest.approx(20.0)


def test_other_flows_are_flents_n_flows_test_with_its_parameters(tmp_path):
    data = load(flent_export.export(record_run(tmp_path, ["up1", "up2", "down1"], queues=False), tmp_path / "o")[0][0])
    assert data["metadata"]["NAME"] == "rrul_be_nflows"
    assert data["metadata"]["TEST_PARAMETERS"] == {"upload_streams": "2", "download_streams": "1"}
    assert set(data["results"]) == {"TCP upload BE::1", "TCP upload BE::2", "TCP download BE::1", "Ping (ms) ICMP"}


def test_a_failed_repetition_and_a_run_without_raw_output_are_left_out_saying_why(tmp_path):
    files, skipped = flent_export.export(record_run(tmp_path, RRUL, error="pre-flight failed: h2 unreachable"))
    assert files == [] and skipped == ["aqm=fq_codel rep 1: failed (pre-flight failed: h2 unreachable)"]
    files, skipped = flent_export.export(ROOT / "tests/data/runs/e1-quick", tmp_path / "e1")
    assert files == [] and skipped and all("no iperf3 time series" in s for s in skipped)


def test_the_command_writes_one_file_per_repetition_and_never_over_one(tmp_path, capsys):
    run = record_run(tmp_path, RRUL)
    out = tmp_path / "flent"
    assert main(["export", "--to", "flent", str(run), "-o", str(out)]) == 0
    files = list(out.glob("*.flent.gz"))
    assert len(files) == 1 and str(files[0]) in capsys.readouterr().out
    assert main(["export", "--to", "flent", str(run), "-o", str(out)]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["export", "--to", "flent", str(tmp_path / "nothing")]) == 2
    assert "not a run directory" in capsys.readouterr().err


def test_the_udp_round_trips_are_flents_first_udp_ping_series(tmp_path):
    data = load(flent_export.export(record_run(tmp_path, RRUL, udp=True), tmp_path / "out")[0][0])
    udp = data["results"][flent_export.UDP_SERIES]
    assert flent_export.UDP_SERIES == "Ping (ms) UDP BE1" and data["metadata"]["SERIES_META"][
        flent_export.UDP_SERIES] == {"UNITS": "ms"}
    trips = json.loads(IRTT)["round_trips"]
    at = {round(x, 1): i for i, x in enumerate(data["x_values"])}
    # round trip k left k x 0.1 s in, held for its interval: x=0.2 shows round trip 2's
    assert udp[at[0.2]] == pytest.approx(trips[2]["delay"]["rtt"] / 1e6)
    assert [s["val"] for s in data["raw_values"][flent_export.UDP_SERIES]] == pytest.approx(
        [t["delay"]["rtt"] / 1e6 for t in trips])
    assert flent_export.UDP_SERIES not in load(flent_export.export(record_run(tmp_path / "b", RRUL),
                                                                   tmp_path / "o2")[0][0])["results"]
