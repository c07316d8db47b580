import math

import pytest

from linklab.measure.stats import confidence_interval, mean, percentile, std, summarize, t_cdf, t_quantile


def test_mean_and_sample_std():
    xs = [2, 4, 4, 4, 5, 5, 7, 9]
    assert mean(xs) == 5
    assert std(xs) == pytest.approx(math.sqrt(32 / 7))  # n-1, not the population 2.0
    assert math.isnan(std([3.0]))
    with pytest.raises(ValueError):
        mean([])


def test_percentile_linear_interpolation():
    xs = [4, 1, 3, 2]
    assert percentile(xs, 0) == 1 and percentile(xs, 100) == 4
    assert percentile(xs, 50) == 2.5
    assert percentile(xs, 25) == pytest.approx(1.75)
    assert percentile([15, 20, 35, 40, 50], 40) == pytest.approx(29.0)
    assert percentile([7], 99) == 7
    with pytest.raises(ValueError):
        percentile(xs, 101)


@pytest.mark.parametrize("df,q", [(1, 12.7062047), (2, 4.3026527), (3, 3.1824463), (4, 2.7764451),
                                  (9, 2.2621572), (30, 2.0422725), (10**6, 1.9599663)])
def test_t_quantile_975(df, q):
    assert t_quantile(0.975, df) == pytest.approx(q, abs=1e-6)


def test_t_quantile_tails_and_symmetry():
    assert t_quantile(0.995, 4) == pytest.approx(4.6040949, abs=1e-6)
    assert t_quantile(0.9995, 1) == pytest.approx(636.6192, abs=1e-3)
    assert t_quantile(0.025, 4) == pytest.approx(-2.7764451, abs=1e-6)
    assert t_cdf(0, 3) == 0.5
    assert t_cdf(t_quantile(0.9, 7), 7) == pytest.approx(0.9, abs=1e-10)


def test_summary_n5():
    s = summarize([10, 12, 11, 13, 14])
    assert (s.n, s.mean) == (5, 12)
    assert s.std == pytest.approx(math.sqrt(2.5))
    assert s.half_width == pytest.approx(2.7764451 * math.sqrt(2.5) / math.sqrt(5), rel=1e-7)
    assert confidence_interval([10, 12, 11, 13, 14]) == pytest.approx((12 - 1.9632432, 12 + 1.9632432))
    assert s.row("tput")["tput_ci_low"] == pytest.approx(s.low)


def test_summary_one_value_has_no_interval():
    s = summarize([5.0])
    assert s.mean == 5 and math.isnan(s.half_width)
    with pytest.raises(ValueError):
        summarize([1, 2], level=1.5)
