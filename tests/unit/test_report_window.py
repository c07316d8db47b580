"""The report's window figure (linklab/report/plots.py: _window): latency under load and each
flow's goodput over the window, read from a run's raw per-repetition output the way `linklab
export --to flent` reads it (linklab/results/samples.py: window). The run is recorded from
captured real iperf3 and ping output (tests/unit/test_flent_export.py: record_run)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

from linklab.measure.ping import parse_ping
from linklab.report import plots
from linklab.results import samples
from linklab.results.points import group
from linklab.results.runs import Run
from tests.unit.test_flent_export import DOWN, IRTT, PING, RRUL, UP, record_run


def _source(path) -> plots.Source:
    run = Run.load(path)
    return plots.Source("r", run, group(run))


def test_the_window_reads_each_flows_receiver_series_and_the_load_ping(tmp_path):
    run = Run.load(record_run(tmp_path, ["up1", "down1"]))
    win = samples.window(run.path, run.rows[0])
    (n1, d1, down, _), (n2, d2, up, _) = win["flows"]
    assert (n1, d1, n2, d2) == ("down1", "down", "up1", "up")
    # up: the server's (receiver's) 0.1 s intervals; down: the client's own (it received)
    assert [v for _, v in up] == pytest.approx([iv["sum"]["bits_per_second"] / 1e6
                                                for iv in UP["server_output_json"]["intervals"]])
    assert down[0] == (pytest.approx(DOWN["intervals"][0]["sum"]["end"]),
                       pytest.approx(DOWN["intervals"][0]["sum"]["bits_per_second"] / 1e6))
    replies = parse_ping(PING).replies
    assert win["ping"][0] == (0.0, replies[0].rtt_ms) and len(win["ping"]) == len(replies)
    assert win["t0"] == UP["start"]["timestamp"]["timesecs"] and win["udp"] == []  # no irtt.json


def test_the_udp_round_trips_are_drawn_beside_the_ping(tmp_path):
    run = Run.load(record_run(tmp_path, RRUL, udp=True))
    assert samples.window(run.path, run.rows[0])["udp"] == samples.udp_series(IRTT)
    fig = plots._window(plots.PlotSpec("window", "window"), [_source(run.path)])
    try:
        ping, udp = fig.axes[1].get_lines()
        assert (ping.get_label(), udp.get_label()) == ("ping (ICMP)", "UDP round trip (irtt)")
        assert list(udp.get_xdata()) == pytest.approx([0.1 * k for k in range(20)])
    finally:
        plt.close(fig)


def test_the_figure_has_a_row_per_point_with_every_flow_beside_the_ping(tmp_path):
    spec = next(s for s in plots.DEFAULT_PLOTS if s.kind == "window")
    fig = plots._window(spec, [_source(record_run(tmp_path, RRUL))])
    try:
        (flows_ax, ping_ax), = [fig.axes[:2]]
        assert len(fig.axes) == 2  # one point: one row of two panels
        lines = {ln.get_label(): ln for ln in flows_ax.get_lines()}
        assert sorted(lines) == sorted(f"{n} ({'up' if n.startswith('up') else 'down'})" for n in RRUL)
        assert lines["up1 (up)"].get_linestyle() == "-" and lines["down1 (down)"].get_linestyle() == "--"
        assert list(lines["up1 (up)"].get_ydata()) == pytest.approx(
            [iv["sum"]["bits_per_second"] / 1e6 for iv in UP["server_output_json"]["intervals"]])
        (ping,) = ping_ax.get_lines()
        assert list(ping.get_ydata()) == pytest.approx([r.rtt_ms for r in parse_ping(PING).replies])
        assert ping_ax.get_ylabel() == "RTT (ms)" and flows_ax.get_ylabel() == "goodput (Mbit/s)"
    finally:
        plt.close(fig)


def test_no_figure_without_a_load_ping_or_without_flows_series(tmp_path):
    spec = plots.PlotSpec("window", "window")
    assert plots._window(spec, [_source(record_run(tmp_path / "a", RRUL, ping=False))]) is None
    trimmed = record_run(tmp_path / "b", RRUL)
    for f in trimmed.glob("points/*/rep*/flow-*.json"):
        f.unlink()  # a baseline keeps rows, not raw output
    assert plots._window(spec, [_source(trimmed)]) is None


def test_the_report_draws_it_beside_its_tables(tmp_path):
    figs = plots.render_all(list(plots.DEFAULT_PLOTS), [_source(record_run(tmp_path, RRUL))])
    window = next(f for f in figs if f.id == "window")
    assert window.svg.startswith(b"<?xml") and b"up1 (up)" in window.svg and b"RTT (ms)" in window.svg
