"""RFC 4737 / RFC 5236 reordering metrics on arrival logs (worked examples and a capture)."""

from pathlib import Path

import pytest

from linklab.measure.reorder import ReorderProbe, metrics, parse_arrivals

DATA = Path(__file__).resolve().parents[1] / "data" / "tools"


def test_in_order_with_loss_is_not_reordered():
    r = metrics([1, 2, 3, 5, 6, 9], sent=9)
    assert r.reordered == 0 and r.ratio == 0 and r.density == {0: 1.0}


def test_rfc4737_reordered_and_extent():
    # 4 overtakes 3: 3 arrives below NextExp=5, extent 1 (one arrival between it and its place).
    r = metrics([1, 2, 4, 3, 5])
    assert r.reordered == 1 and r.extents == (1,) and r.ratio == pytest.approx(0.2)
    # 1 held back behind four: extent 4
    r = metrics([2, 3, 4, 5, 1, 6])
    assert r.reordered == 1 and r.extents == (4,)


def test_rfc5236_density_clips_at_threshold_and_sums_to_one():
    r = metrics([2, 3, 4, 5, 6, 1, 7], dt=3)
    assert r.density[3] == pytest.approx(1 / 7)  # 1 is 5 late, counted at DT
    assert r.density[-1] == pytest.approx(5 / 7)
    assert sum(r.density.values()) == pytest.approx(1.0)


def test_duplicates_counted_apart():
    r = metrics([1, 2, 2, 3])
    assert r.duplicates == 1 and r.received == 3 and r.reordered == 0


def test_probe_argv_and_log():
    p = ReorderProbe(target="10.77.0.2", port=5301, bursts=5)
    assert p.argv()[-12:-10] == ["--to", "10.77.0.2"] and "--bursts" in p.argv()
    assert parse_arrivals("listening\nseq 1\nseq 3\nseq 2\nsent 3\n") == ([1, 3, 2], 3)
