"""The Grafana dashboard in the repo uses only metrics the code exports (``listeners/prom_export.py``)."""

from __future__ import annotations

from locust import events
from locust.env import Environment
from prometheus_client.parser import text_string_to_metric_families

import swarmgauge.locust  # noqa: F401 - every listener, as a run has them
from swarmgauge.listeners.prom_export import exposition
from tests.deploy.grafana_dashboard import expressions, load, metric_names

SAMPLE_SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}


def exported_sample_names() -> set[str]:
    """The sample names the exposition declares (every family is declared, with or without samples yet)."""
    text = exposition(Environment(events=events)).decode()
    names = set()
    for family in text_string_to_metric_families(text):
        names.update(family.name + suffix for suffix in SAMPLE_SUFFIXES[family.type])
    return names


def test_every_metric_the_dashboard_queries_is_one_the_code_exports():
    exported = exported_sample_names()
    used = metric_names(load())
    assert "swarmgauge_request_duration_seconds_bucket" in used
    assert used <= exported, f"not exported: {sorted(used - exported)}"


def test_the_latency_panels_aggregate_the_histogram_not_the_quantile_gauge():
    quantiles = [expr for expr in expressions(load()) if "histogram_quantile" in expr]
    assert quantiles
    assert all("_bucket" in expr and "le)" in expr for expr in quantiles)


def test_every_panel_has_a_unique_id_and_selects_the_run_variable():
    dashboard = load()
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            assert 'run=~"$run"' in target["expr"], f"panel {panel['title']!r} ignores the run picker"
