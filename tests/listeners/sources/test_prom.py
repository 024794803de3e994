"""prom source against a real endpoint: prometheus-client's own exposition on 127.0.0.1."""

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from swarmgauge.errors import UsageError
from swarmgauge.listeners.sources import SourceError, parse_source
from swarmgauge.listeners.sources.prom import parse_prometheus_text


@pytest.fixture(scope="module")
def prom_endpoint():
    registry = CollectorRegistry()
    Gauge("process_resident_memory_bytes", "Resident memory size in bytes.", registry=registry).set(123456789)
    queued = Gauge("kneo_runs_queued", "Runs waiting.", ["pool"], registry=registry)
    queued.labels(pool="default").set(7)
    queued.labels(pool="gpu").set(2)
    Counter("kneo_runs", "Runs dispatched.", registry=registry).inc(41)
    server, thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    yield f"http://127.0.0.1:{server.server_address[1]}/metrics"
    server.shutdown()
    server.server_close()


def test_named_metrics_with_and_without_labels(prom_endpoint):
    spec = f"prom:{prom_endpoint}#process_resident_memory_bytes,kneo_runs_queued,kneo_runs_total"
    got = {r.metric: r.value for r in parse_source(spec).sample()}
    assert got == {
        "process_resident_memory_bytes": 123456789,
        'kneo_runs_queued{pool="default"}': 7,
        'kneo_runs_queued{pool="gpu"}': 2,
        "kneo_runs_total": 41,
    }


def test_family_name_finds_a_counter_and_no_names_takes_everything(prom_endpoint):
    assert {r.metric for r in parse_source(f"prom:{prom_endpoint}#kneo_runs").sample()} == {"kneo_runs_total"}
    assert "process_resident_memory_bytes" in {r.metric for r in parse_source(f"prom:{prom_endpoint}").sample()}


def test_absent_metric_and_malformed_text_are_source_errors(prom_endpoint):
    with pytest.raises(SourceError, match="none of"):
        parse_source(f"prom:{prom_endpoint}#no_such_metric").sample()
    with pytest.raises(SourceError, match="malformed"):
        parse_prometheus_text('# TYPE x gauge\nx{a="1" 3 4 5 6\n', ("x",))


def test_bad_url_is_a_usage_error():
    with pytest.raises(UsageError):
        parse_source("prom:127.0.0.1:9090/metrics#x")
