"""The leak verdict: a short run under the page's growth criterion on a steep slope is inconclusive, not "no leak"."""

from swarmgauge.core.trend import MIB, Warmup
from swarmgauge.core.verdict import Row, leak_verdict

TARGET = "pid:4242"


def rss(seconds: int, per_second: float) -> list[Row]:
    return [
        Row(1000.0 + t, float(t), None, "local", TARGET, "rss_bytes", 100 * MIB + t * per_second, t)
        for t in range(seconds)
    ]


def test_a_short_run_on_a_steep_slope_is_inconclusive_not_no_leak():
    status, text = leak_verdict(rss(12, 0.2 * MIB), Warmup(seconds=2))
    assert status == "inconclusive"
    assert text.startswith("leak verdict: inconclusive (run too short to tell)")
    assert "no leak" not in text  # a verdict and its negation never share a line
    assert "run longer than" in text and "min after warm-up to tell" in text


def test_a_flat_series_has_no_caution():
    status, text = leak_verdict(rss(12, 0.0), Warmup(seconds=2))
    assert status == "no leak" and text.startswith("leak verdict: no leak") and "inconclusive" not in text


def test_a_slow_growth_that_takes_over_an_hour_to_matter_has_no_caution():
    status, text = leak_verdict(rss(12, 1024.0), Warmup(seconds=2))  # 3.5 MiB/h
    assert status == "no leak" and "inconclusive" not in text


def test_a_leak_is_still_a_leak():
    status, text = leak_verdict(rss(12, 10 * MIB), Warmup(seconds=2))
    assert status == "leak" and text.startswith("leak verdict: LEAK")
