"""Figures, SLO verdicts and target names as every view shows them: the report, the web UI's tab, /swarmgauge/."""

from __future__ import annotations

from swarmgauge.core.numbers import format_latency, format_rate, significant
from swarmgauge.core.slo_units import verdict_text
from swarmgauge.core.sources import source_title


def test_figures_have_three_significant_digits():
    assert format_rate(546.497) == "546" and format_rate(36.04) == "36.0" and format_rate(None) == ""
    assert format_latency(80.13) == "80.1 ms" and format_latency(0.6271) == "0.627 ms"
    assert format_latency(1770.4) == "1.77 s" and format_latency("") == ""
    assert significant(3042.4) == "3042" and significant(0.0123) == "0.0123"


def test_a_verdict_says_its_figures_in_the_thresholds_unit():
    failing = {"status": "fail", "observed": 80.13, "value": 50.0, "unit": "ms", "metric": "p99", "op": "<"}
    assert verdict_text(failing) == "fail (80.1 ms > 50 ms)"
    passing = {"status": "pass", "observed": 20.43, "value": 500.0, "unit": "ms", "metric": "p99", "op": "<"}
    assert verdict_text(passing) == "pass (20.4 ms < 500 ms)"
    in_seconds = {"status": "fail", "observed": 2500.0, "value": 2000.0, "unit": "s", "metric": "p99", "op": "<"}
    assert verdict_text(in_seconds) == "fail (2.5 s > 2 s)"
    ratio = {"status": "pass", "observed": 0.002, "value": 0.01, "unit": "", "metric": "fail_ratio", "op": "<"}
    assert verdict_text(ratio) == "pass (0.002 < 0.01)"
    assert verdict_text({"status": "no data", "observed": None, "value": 50.0}) == "no data"


def test_an_embedded_target_has_one_name_in_every_view():
    info = {"embedded_targets": {"mark": {"pid": 4711, "url": "mark://127.0.0.1:1"}}}
    assert source_title("psutil:pid=4711", info) == "embedded mark (pid 4711)"
    assert source_title("psutil:pid=99", info) == "psutil:pid=99"
    assert source_title("psutil:pidfile=/tmp/x/worker-1.pid") == "worker-1"
