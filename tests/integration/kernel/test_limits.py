"""What held a TCP flow below what its path carries, named by a flag (measure/disturbance.py: limit)
from the sender's tcp_info (ss, near the flow's end) and iperf3's advertised window; on a real lab."""

import csv
from pathlib import Path

import pytest

from linklab import lab, state
from linklab.measure.disturbance import LIMITED_PCT, THEORY_SHARE
from linklab.measure.flags import row_flags
from linklab.sweep.engine import Options, run

DATA = Path(__file__).resolve().parents[1] / "data"
RATE_BPS, RTT_S = 100e6, 0.010  # tests/integration/data/delay_link.yaml: 100 Mbit/s, 5 ms each way
RMEM_MAX = 65536  # tests/integration/data/window_limited.yaml: the small receiver's tcp_rmem


@pytest.fixture
def rows(tmp_path):
    try:
        store = run(DATA / "window_limited.yaml", Options(results=tmp_path / "results"), say=lambda *_: None)
        with open(store.path / "results.csv") as f:
            got = list(csv.DictReader(f))
        yield got, store.path
    finally:
        if state.load("delaylink"):
            lab.down("delaylink", say=lambda *_: None)


def num(row, key):
    return float(row[key]) if row.get(key) not in (None, "") else None


def test_a_small_fixed_receive_buffer_is_flagged_window_limited_and_an_autotuned_one_is_not(rows):
    got, path = rows
    by = {}
    for r in got:
        assert not r.get("error"), r.get("error")
        by.setdefault(r["sysctl_profile"], []).append(r)
    assert sorted(by) == ["default", "small_rmem"] and all(len(v) == 2 for v in by.values())
    for r in by["small_rmem"] + by["default"]:
        # The path's theory: the link's rate times TCP's payload share at MTU 1500 (1448 / 1514).
        assert num(r, "path_goodput_bps") == pytest.approx(RATE_BPS * 1448 / 1514, rel=1e-3)
        # The sender's tcp_info was read near the flow's end: most of the 5 s (+1 s warm-up) busy.
        assert 3000 <= num(r, "sender_tcp_busy_ms") <= 6500, r["sender_tcp_busy_ms"]
    for r in by["small_rmem"]:
        why = {k: r.get(k) for k in ("throughput_bps", "snd_wnd_max", "rtt_mean_us", "path_asked_rtt_ms", "flags",
                                     "flag_evidence", "sender_tcp_busy_ms", "sender_tcp_rwnd_limited_ms")}
        # The window a receiver advertises is at most its buffer, and on any kernel at least a
        # quarter of it (6.1: half, less one segment; 6.6+: the buffer's payload share).
        wnd = num(r, "snd_wnd_max")
        assert RMEM_MAX / 4 <= wnd <= RMEM_MAX, why
        # Physics: one window per round trip. At most the window over the round trip the path asks
        # for (+5 % for the throughput's own window edges); at least 0.8 of it over the round trip
        # the sender measured (segments are whole, and an emulated CPU pauses the sender at times).
        bps = num(r, "throughput_bps")
        asked_s = num(r, "path_asked_rtt_ms") / 1e3
        assert RTT_S <= asked_s <= RTT_S * 1.01, why
        assert 0.8 * wnd * 8 / (num(r, "rtt_mean_us") / 1e6) <= bps <= 1.05 * wnd * 8 / asked_s, why
        assert bps < THEORY_SHARE * num(r, "path_goodput_bps"), why  # 64 kB of buffer: ~25 Mbit/s
        # The flag names the receiver's window, with the kernel's own figures.
        assert "rwnd_limited" in row_flags(r), why
        assert num(r, "sender_tcp_rwnd_limited_ms") >= 0.5 * num(r, "sender_tcp_busy_ms"), why
        evidence = row_flags(r)["rwnd_limited"]
        assert "the receiver's window held the sender" in evidence and "rwnd_limited" in evidence, evidence
    for r in by["default"]:
        why = {k: r.get(k) for k in ("throughput_bps", "snd_wnd_max", "flags", "flag_evidence",
                                     "sender_tcp_busy_ms", "sender_tcp_rwnd_limited_ms")}
        # Autotuning opened the window past the path's bandwidth-delay product (125 kB), and the
        # window held the sender for no more than its first round trips.
        assert num(r, "snd_wnd_max") >= RATE_BPS * RTT_S / 8, why
        assert "rwnd_limited" not in row_flags(r), why
        assert num(r, "sender_tcp_rwnd_limited_ms") < LIMITED_PCT / 100 * num(r, "sender_tcp_busy_ms"), why
    rep = next(p for p in (path / "points").iterdir()) / "rep1"
    assert "busy:" in (rep / "ss-sender.txt").read_text()
