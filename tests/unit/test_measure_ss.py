"""ss -tinH argv and parsing, against output captured in the lab VM (tests/data/tools/README.md)."""

from pathlib import Path

import pytest

from linklab.measure.ss import TcpInfo, data_streams, limits_row, parse_tcp_info

DATA = Path(__file__).resolve().parent.parent / "data" / "tools"


def conns(name: str):
    return parse_tcp_info((DATA / name).read_text())


def test_argv_filters_established_connections_to_the_servers_ports():
    assert TcpInfo(ports=(5201,)).argv() == ["ss", "-tinH", "state", "established", "(", "dport", "=", ":5201", ")"]
    assert TcpInfo(ports=(5202, 5201, 5204)).argv()[4:] == ["(", "dport", ">=", ":5201", "and", "dport", "<=", ":5204", ")"]
    assert TcpInfo().argv() == ["ss", "-tinH", "state", "established"]
    assert TcpInfo.parse_version((DATA / "ss_version.txt").read_text()) == "6.1.0"
    assert TcpInfo.needs_names is False


def test_one_stream_and_its_control_connection():
    c = conns("ss_tcp_info_mtu9000.txt")
    assert [x.peer for x in c] == ["10.77.0.2:5201", "10.77.0.2:5201"]
    data, control = c
    assert (data.busy_ms, data.rwnd_limited_ms, data.sndbuf_limited_ms) == (5092, 36, 0)
    assert (data.mss, data.cwnd, data.unacked, data.retrans, data.snd_wnd) == (8948, 30, 30, 4, 2865280)
    assert data.rtt_ms == pytest.approx(24.997) and data.bytes_acked == 62304962 and not data.app_limited
    # iperf3's control connection: a few hundred bytes, app-limited; not part of the data
    assert control.bytes_acked == 186 and control.app_limited and control.port == 5201
    assert data_streams(c) == [data]


def test_window_limited_sender():
    row = limits_row(conns("ss_tcp_info_rwnd_limited.txt"))
    assert row["sender_tcp_streams"] == 1
    assert (row["sender_tcp_busy_ms"], row["sender_tcp_rwnd_limited_ms"]) == (4560, 4544)  # 99.6 %
    assert row["sender_tcp_snd_wnd"] == 56588 and row["sender_tcp_inflight_pct"] == pytest.approx(42.9)


def test_small_send_buffer_shows_as_app_limited_with_little_in_flight():
    # tcp_wmem 16 kB: the kernel counted only 12 ms sndbuf_limited; the sender kept 7 of 63 in flight
    row = limits_row(conns("ss_tcp_info_wmem16k.txt"))
    assert (row["sender_tcp_sndbuf_limited_ms"], row["sender_tcp_app_limited"]) == (12, 1)
    assert row["sender_tcp_inflight_pct"] == pytest.approx(100 * 7 / 63, abs=0.05)


def test_streams_are_summed_and_both_processes_ports_read():
    p4 = limits_row(conns("ss_tcp_info_p4.txt"))
    assert (p4["sender_tcp_streams"], p4["sender_tcp_busy_ms"], p4["sender_tcp_rwnd_limited_ms"]) == (4, 17904, 276)
    two = conns("ss_tcp_info_two_procs.txt")
    assert sorted({x.port for x in two}) == [5201, 5202] and len(data_streams(two)) == 2
    assert limits_row(two)["sender_tcp_inflight_pct"] == 100.0


def test_after_the_flow_there_is_nothing_to_read():
    assert conns("ss_tcp_info_after_flow.txt") == [] and limits_row([]) == {}


def test_state_column_and_header_are_read_when_present():
    text = ("State Recv-Q Send-Q Local Address:Port Peer Address:PortProcess\n"
            "ESTAB 0 0 10.0.0.1:4000 10.0.0.2:5201\n\t cubic rtt:1.5/0.2 mss:1448 cwnd:10 busy:10ms\n")
    (c,) = parse_tcp_info(text)
    assert (c.local, c.peer, c.busy_ms, c.cwnd, c.rtt_ms) == ("10.0.0.1:4000", "10.0.0.2:5201", 10, 10, 1.5)
