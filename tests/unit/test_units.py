import pytest

from linklab import units


@pytest.mark.parametrize("text,bps", [("100mbit", 1e8), ("1gbit", 1e9), ("2.2gbit", 2.2e9), ("500kbit", 5e5),
                                      ("10mbps", 8e7), (1000, 1000.0)])
def test_rates(text, bps):
    assert units.parse_rate(text) == pytest.approx(bps)


@pytest.mark.parametrize("text,s", [("1ms", 0.001), ("250us", 0.00025), ("100us", 0.0001), ("2s", 2.0), (0.5, 0.5)])
def test_times(text, s):
    assert units.parse_time(text) == s


def test_percent_and_size():
    assert units.parse_percent("0.5%") == 0.5
    assert units.parse_size("16M") == 16777216
    assert units.parse_size("64k") == 65536


@pytest.mark.parametrize("fn,bad,fragment", [
    (units.parse_rate, "10 parsecs", "unknown rate unit 'parsecs'"),
    (units.parse_time, "5 fortnights", "unknown time unit"),
    (units.parse_percent, "150%", "out of range"),
    (units.parse_rate, "fast", "not a rate"),
    (units.parse_rate, True, "expected a rate"),
])
def test_bad_values_say_why(fn, bad, fragment):
    with pytest.raises(ValueError, match=fragment):
        fn(bad)


def test_format_rate_round_trips():
    for text in ("100mbit", "2.2gbit", "500kbit"):
        assert units.format_rate(units.parse_rate(text)) == text
