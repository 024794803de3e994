"""The leak verdict on heap series: gctrace needs enough GCs after warm-up; pprof/expvar are preferred to it."""

from swarmgauge.core.trend import Warmup
from swarmgauge.core.verdict import MIN_GCS_FOR_VERDICT, Row, leak_verdict
from swarmgauge.listeners.sources import MIB

GCTRACE = "gctrace:/tmp/go.log"
PPROF = "pprof:http://127.0.0.1:6060/debug/pprof/heap"


def rows(source, metric, points, per_point):
    return [
        Row(1000.0 + t, float(t), None, "local", source, metric, float(10 * MIB + t * per_point), t) for t in points
    ]


def test_gctrace_with_too_few_gcs_after_warmup_cannot_judge():
    few = rows(GCTRACE, "live_heap_bytes", range(0, 100, 20), 2 * MIB)
    status, text = leak_verdict(few, Warmup(seconds=10))
    assert status is None and "GCs after warm-up" in text


def test_gctrace_with_enough_gcs_judges():
    many = rows(GCTRACE, "live_heap_bytes", range(4 * MIN_GCS_FOR_VERDICT), 4 * MIB)
    assert leak_verdict(many, Warmup(seconds=2))[0] == "leak"
    flat = rows(GCTRACE, "live_heap_bytes", range(4 * MIN_GCS_FOR_VERDICT), 0)
    assert leak_verdict(flat, Warmup(seconds=2))[0] == "no leak"


def test_pprof_is_preferred_to_gctrace_and_says_so():
    both = rows(GCTRACE, "live_heap_bytes", range(40), 4 * MIB) + rows(PPROF, "heap_alloc_bytes", range(40), 0)
    status, text = leak_verdict(both, Warmup(seconds=2))
    assert status == "no leak" and "pprof/expvar MemStats preferred" in text
