"""ping argv and parsing against iputils 20221126 output (tests/data/tools/README.md)."""

from pathlib import Path

import pytest

from linklab import runner
from linklab.measure.ping import Ping, PingError, largest_passing, parse_ping

DATA = Path(__file__).resolve().parent.parent / "data" / "tools"


def load(name: str):
    err = DATA / f"{name}.stderr.txt"
    return parse_ping((DATA / f"{name}.txt").read_text(), err.read_text() if err.exists() else "")


def test_argv():
    p = Ping("10.0.0.2", count=3, interval=0.2, size=1372, dont_fragment=True, family=4, deadline=5, wait=1)
    assert p.argv() == ["ping", "-n", "-c", "3", "-4", "-i", "0.2", "-s", "1372", "-M", "do",
                        "-w", "5", "-W", "1", "10.0.0.2"]
    assert Ping("fd00::2", family=6).argv() == ["ping", "-n", "-c", "10", "-6", "fd00::2"]
    with pytest.raises(ValueError):
        Ping("h", family=5)


def test_version():
    assert Ping.version_argv() == ["ping", "-V"]
    assert Ping.parse_version((DATA / "ping_version.txt").read_text()) == "iputils 20221126"


def test_normal():
    r = load("ping_normal")
    assert (r.target, r.transmitted, r.received, r.duplicates, r.errors) == ("10.255.0.66", 20, 20, 0, 0)
    assert r.loss_percent == 0 and r.lost == 0 and r.verdict == "ok"
    assert len(r.rtts_ms) == 20 and r.rtts_ms[:3] == (0.061, 0.079, 0.059)
    assert (r.rtt_min_ms, r.rtt_max_ms) == (0.052, 0.079)
    assert r.rtt_mean_ms == pytest.approx(1.239 / 20)
    # sorted replies: ..., 0.060 (10th), 0.061 (11th), ..., 0.073 (19th), 0.079 (20th)
    assert r.rtt_percentile(50) == pytest.approx(0.0605)
    assert r.rtt_percentile(95) == pytest.approx(0.073 + 0.05 * (0.079 - 0.073))
    assert r.summary_rtt_ms == (0.052, 0.061, 0.079, 0.005)


def test_ipv6():
    r = load("ping6_normal")
    assert (r.target, r.transmitted, r.received) == ("fd00:255::1:2", 10, 10)
    assert (r.rtt_min_ms, r.rtt_max_ms) == (0.035, 0.09)
    assert r.replies[0].source == "fd00:255::1:2" and r.replies[0].bytes == 64


def test_loss_under_load():
    r = load("ping_loss")
    assert (r.transmitted, r.received, r.lost) == (30, 10, 20)
    assert r.loss_percent == pytest.approx(200 / 3)
    assert r.verdict == "partial_loss" and r.too_big == 0
    assert [x.seq for x in r.replies] == [3, 4, 5, 10, 11, 12, 19, 21, 22, 29]
    assert (r.rtt_min_ms, r.rtt_max_ms) == (42.2, 45.1)
    assert r.rtt_mean_ms == pytest.approx(43.93)
    row = r.row()
    assert row["ping_loss_pct"] == pytest.approx(66.6667, abs=1e-4)
    assert row["ping_summary_avg_ms"] == 43.931  # ping's own, at µs resolution


def test_df_fits_passes():
    r = load("ping_df_fits")
    assert r.verdict == "ok" and r.received == 3 and r.replies[0].bytes == 1380
    assert load("ping6_df_fits").replies[0].bytes == 1360


def test_df_frag_needed_is_refusal_not_loss():
    r = load("ping_df_frag_needed")
    assert (r.transmitted, r.received, r.errors) == (3, 0, 3)
    assert r.verdict == "too_big" and r.too_big == 3 and r.lost == 0 and r.mtu == 1400
    kinds = [e.kind for e in r.error_replies]
    assert kinds == ["frag_needed", "local_too_big", "local_too_big"]
    first = r.error_replies[0]
    assert (first.seq, first.source, first.mtu) == (1, "10.255.0.2", 1400)


def test_df_cached_pmtu_and_local_mtu():
    cached = load("ping_df_cached_pmtu")
    assert cached.verdict == "too_big" and cached.mtu == 1400 and cached.too_big == 3
    assert all(e.kind == "local_too_big" and e.seq is None for e in cached.error_replies)
    local = load("ping_df_local_too_long")
    assert local.verdict == "too_big" and local.mtu == 1500


def test_ipv6_packet_too_big():
    r = load("ping6_df_packet_too_big")
    assert r.verdict == "too_big" and r.mtu == 1400 and r.lost == 0
    assert r.error_replies[0].kind == "packet_too_big" and r.error_replies[0].source == "fd00:255::2"
    assert [e.kind for e in r.error_replies[1:]] == ["local_too_big", "local_too_big"]


def test_path_mtu_check_pair():
    fits, too_big = load("ping_df_fits"), load("ping_df_frag_needed")
    assert largest_passing([(1372, fits), (1373, too_big)]) == 1372
    assert largest_passing([(1373, too_big)]) is None


def test_unreachable_is_neither_ok_nor_too_big():
    r = load("ping_host_unreachable")
    assert (r.transmitted, r.received, r.errors) == (7, 0, 6)
    assert r.verdict == "unreachable" and r.too_big == 0 and r.mtu is None
    assert {e.kind for e in r.error_replies} == {"unreachable"}


def test_duplicates_counted_once():
    r = load("ping_broadcast_dup")
    assert (r.transmitted, r.received, r.duplicates) == (3, 3, 2)
    assert [x.duplicate for x in r.replies] == [False, True, False, True, False]
    assert r.rtts_ms == (0.026, 0.045, 0.054)  # first reply per seq
    assert r.verdict == "ok"


def test_row_keys():
    row = load("ping_df_frag_needed").row()
    assert row["ping_verdict"] == "too_big" and row["ping_mtu"] == 1400 and row["ping_rtt_p50_ms"] is None
    assert set(load("ping_normal").row()) == set(row)


@pytest.mark.parametrize("stderr", ["ping: nohost: Name or service not known\n",
                                    "ping: connect: Network is unreachable\n"])
def test_fatal_errors(stderr):
    with pytest.raises(PingError, match=stderr.strip().split(": ")[-1]):
        parse_ping("", stderr)


def test_run_does_not_treat_exit_1_as_failure(monkeypatch):
    seen = {}

    def fake_run(argv, **kw):
        seen.update(kw, argv=argv)
        out = (DATA / "ping_df_frag_needed.txt").read_text()
        err = (DATA / "ping_df_frag_needed.stderr.txt").read_text()
        return runner.Result(tuple(argv), 1, out, err, kw.get("netns"))

    monkeypatch.setattr(runner, "run", fake_run)
    r = Ping("10.255.0.66", count=3, size=1373, dont_fragment=True).run(netns="h1", timeout=9)
    assert seen["check"] is False and seen["netns"] == "h1" and seen["timeout"] == 9
    assert r.verdict == "too_big" and r.too_big == 3


def test_under_load_row_skips_slow_start_and_subtracts_idle():
    from pathlib import Path

    from linklab.measure.ping import parse_ping, under_load_row
    data = Path(__file__).resolve().parents[1] / "data" / "tools"
    idle = parse_ping((data / "ping_normal.txt").read_text())
    load = parse_ping((data / "ping_idle_q5ms.txt").read_text())  # 20 replies, 0.1 s apart
    row = under_load_row(load, 0.1, 1.0, idle)
    assert row["load_ping_sent"] == 10 and row["load_ping_received"] == 10  # seq 11..20
    kept = [r.rtt_ms for r in load.replies if r.seq >= 11]
    assert row["load_ping_rtt_max_ms"] == max(kept) == 186.0
    assert row["load_ping_added_min_ms"] == round(min(kept) - idle.rtt_min_ms, 4)
    assert row["load_ping_added_p50_ms"] == round(row["load_ping_rtt_p50_ms"] - idle.rtt_percentile(50), 4)
    assert "load_ping_verdict" not in row and row["load_ping_skip_s"] == 1.0
    assert under_load_row(load, 0.1, 1.0, None)["load_ping_added_p50_ms"] is None
