"""The leak verdict's text: a short run that passes the page's growth criterion on a steep slope says so."""

from swarmgauge.core.trend import MIB, Warmup
from swarmgauge.core.verdict import Row, leak_verdict

TARGET = "pid:4242"


def rss(seconds: int, per_second: float) -> list[Row]:
    return [
        Row(1000.0 + t, float(t), None, "local", TARGET, "rss_bytes", 100 * MIB + t * per_second, t)
        for t in range(seconds)
    ]


def test_a_short_run_on_a_steep_slope_is_no_leak_but_too_short_to_tell():
    status, text = leak_verdict(rss(12, 0.2 * MIB), Warmup(seconds=2))
    assert status == "no leak"
    assert "too short to tell" in text and "run longer than that" in text


def test_a_flat_series_has_no_caution():
    status, text = leak_verdict(rss(12, 0.0), Warmup(seconds=2))
    assert status == "no leak" and "too short to tell" not in text


def test_a_slow_growth_that_takes_over_an_hour_to_matter_has_no_caution():
    status, text = leak_verdict(rss(12, 1024.0), Warmup(seconds=2))  # 3.5 MiB/h
    assert status == "no leak" and "too short to tell" not in text


def test_a_leak_is_still_a_leak():
    status, text = leak_verdict(rss(12, 10 * MIB), Warmup(seconds=2))
    assert status == "leak" and text.startswith("leak verdict: LEAK")
