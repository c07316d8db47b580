"""nstat parsing against iproute2 6.1 `nstat -asz --json` captured around a 4-stream iperf3 run."""

from pathlib import Path

import pytest

from linklab import runner
from linklab.measure import nstat
from linklab.measure.base import MeasurementError
from linklab.measure.iperf3 import parse_result

DATA = Path(__file__).resolve().parent.parent / "data" / "tools"


def counters(name):
    return nstat.parse_nstat((DATA / name).read_text())


def window(side):
    return nstat.delta(counters(f"nstat_{side}_before.json"), counters(f"nstat_{side}_after.json"))


def test_argv_never_touches_history():
    assert nstat.Nstat().argv() == ["nstat", "-a", "-s", "-z", "--json"]
    assert nstat.Nstat(patterns=("Tcp*",)).argv()[-1] == "Tcp*"


def test_parse():
    c = counters("nstat_a_after.json")
    assert len(c) == 406
    # -a: absolute values since the namespace was created, not increments
    assert (c["TcpRetransSegs"], c["TcpActiveOpens"], c["IpInReceives"]) == (105384, 32, 266204)
    assert all(isinstance(v, int) for v in c.values())


def test_sender_window():
    d = window("a")
    assert d["TcpRetransSegs"] == 727
    assert d["TcpOutSegs"] == 17807
    assert d["TcpExtTCPSackRecovery"] == 16
    assert d["TcpExtTCPLostRetransmit"] == 54
    assert d["TcpExtTCPDSACKRecv"] == 1
    assert d["TcpExtTCPSACKReorder"] == 0
    # Same window as iperf3's own count (726); the kernel also counts one tail loss probe.
    assert abs(d["TcpRetransSegs"] - parse_result((DATA / "iperf3_nstat_window_p4.json").read_text()).retransmits) <= 2


def test_receiver_window():
    d = window("b")
    assert d["TcpExtTCPOFOQueue"] == 308
    assert d["TcpExtTCPDSACKOldSent"] == 1


def test_row():
    row = nstat.row(window("a"))
    assert row["nstat_TcpRetransSegs"] == 727
    assert row["nstat_retrans_ratio"] == pytest.approx(727 / 17807)
    assert row["nstat_reorder_events"] == 0
    assert set(row) == {"nstat_" + k for k in nstat.KEY_COUNTERS} | {"nstat_retrans_ratio", "nstat_reorder_events",
                                                                    "nstat_udp_rcvbuf_errors"}
    # A counter this kernel does not have is None, not 0.
    assert nstat.row({"TcpOutSegs": 10}, prefix="rx_")["rx_TcpExtTCPOFOQueue"] is None
    assert nstat.row({}, prefix="x_")["x_retrans_ratio"] is None
    # UDP receive-buffer drops: IPv4 and IPv6 summed; absent on both -> None.
    assert row["nstat_udp_rcvbuf_errors"] == 0
    assert nstat.row({"UdpRcvbufErrors": 5, "Udp6RcvbufErrors": 2})["nstat_udp_rcvbuf_errors"] == 7
    assert nstat.row({"TcpOutSegs": 1})["nstat_udp_rcvbuf_errors"] is None


def test_not_json():
    with pytest.raises(MeasurementError):
        nstat.parse_nstat("#kernel\nIpInReceives 1 0.0\n")
    with pytest.raises(MeasurementError):
        nstat.parse_nstat('{"other": {}}')


def test_version():
    assert nstat.Nstat.parse_version((DATA / "nstat_version.txt").read_text()) == "iproute2-6.1.0"


def test_run_uses_private_history_and_namespace(monkeypatch):
    seen = {}

    def fake_run(argv, **kw):
        seen.update(kw, argv=argv)
        return runner.Result(tuple(argv), 0, (DATA / "nstat_b_after.json").read_text(), "", kw.get("netns"))

    monkeypatch.setattr(runner, "run", fake_run)
    c = nstat.Nstat().run(netns="h2")
    assert seen["netns"] == "h2" and seen["argv"][:3] == ["nstat", "-a", "-s"]
    assert seen["env"]["NSTAT_HISTORY"].startswith("/") and "linklab-nstat" in seen["env"]["NSTAT_HISTORY"]
    assert c["TcpExtTCPOFOQueue"] == counters("nstat_b_after.json")["TcpExtTCPOFOQueue"]


def test_proc_net_read_in_process_is_what_nstat_prints():
    # Captured at one moment in a quiet namespace (ping on lo, v4 and v6): the three files and
    # `nstat -asz --json` (iproute2, kernel 6.18). Same names, same values, gauges left out.
    mine = nstat.parse_proc_net(*((DATA / f"proc_net_{f}.txt").read_text() for f in nstat.PROC_NET_FILES))
    assert mine == counters("nstat_same_moment.json")
    assert mine["IcmpInEchos"] == 3 and mine["Icmp6InEchos"] == 2
    assert "TcpCurrEstab" not in mine and "TcpExtTCPSACKReorder" in mine


def test_proc_net_table_out_of_step_is_an_error():
    with pytest.raises(MeasurementError, match="out of step"):
        nstat.parse_proc_net("Ip: Forwarding InReceives\nTcp: 1 2\n", "", "")
