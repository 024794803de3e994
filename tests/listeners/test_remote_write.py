"""Remote-write bodies: protobuf ``WriteRequest`` in snappy block format, labels sorted, NaN samples left out."""

from __future__ import annotations

import cramjam
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from swarmgauge.listeners import remote_write


def test_a_body_decodes_to_one_sample_per_series_with_sorted_labels_and_the_timestamp():
    requests = CounterMetricFamily("swarmgauge_requests", "r", labels=["step", "name"])
    requests.add_metric(["0", "/item"], 41.0)
    gauge = GaugeMetricFamily("swarmgauge_slo_observed", "o", labels=["expr"])
    gauge.add_metric(["p99<50ms"], float("nan"))
    series = remote_write.series_of([requests, gauge], {"job": "swarmgauge", "run": "r1"})
    body = remote_write.encode(series, 1_700_000_000_123)
    (entry,) = remote_write.decode(body).timeseries
    assert [(label.name, label.value) for label in entry.labels] == [
        ("__name__", "swarmgauge_requests_total"),
        ("job", "swarmgauge"),
        ("name", "/item"),
        ("run", "r1"),
        ("step", "0"),
    ]
    assert [(sample.value, sample.timestamp) for sample in entry.samples] == [(41.0, 1_700_000_000_123)]


def test_the_body_is_snappy_block_format_not_framed():
    body = remote_write.encode([({"__name__": "x"}, 1.0)], 5)
    raw = bytes(cramjam.snappy.decompress_raw(body))
    assert (
        raw
        == remote_write.write_request_class()(
            timeseries=[{"labels": [{"name": "__name__", "value": "x"}], "samples": [{"value": 1.0, "timestamp": 5}]}]
        ).SerializeToString()
    )
    assert remote_write.HEADERS["Content-Encoding"] == "snappy"
