"""The Aggregated row of steps.csv: only what adds up - no handshakes in it, and no rate over mixed request types."""

from __future__ import annotations

from swarmgauge.core.hooks import StepInfo
from swarmgauge.listeners.step_stats import StepMerge, StepRecorder
from swarmgauge.listeners.steps_csv import step_rows

T0 = 1_000_000.0


def _rows(recordings: list[tuple[str, str, float]]) -> dict[tuple[str, str], dict]:
    recorder = StepRecorder()
    for rtype, name, ms in recordings:
        recorder.record(0, rtype, name, ms, False)
    merged = StepMerge()
    merged.add_batch("local", recorder.drain())
    info = StepInfo(index=0, label="64 users", users=64, rate=None, started_at=T0)
    return {(r["request_type"], r["name"]): r for r in step_rows(merged, [info], T0 + 10.0, [])}


def test_handshakes_ride_along_and_stay_out_of_the_aggregate():
    rows = _rows([("FETCH", "/corpus/{topic}/{doc}", 400.0)] * 100 + [("QUIC", "handshake", 1700.0)] * 20)
    aggregated = rows[("", "Aggregated")]
    assert aggregated["requests"] == 100 and aggregated["rps"] == 10.0
    assert aggregated["p99_ms"] == rows[("FETCH", "/corpus/{topic}/{doc}")]["p99_ms"]  # not the handshakes' 1.7 s
    assert rows[("QUIC", "handshake")]["requests"] == 20  # still its own row


def test_mixed_request_types_keep_their_counts_but_no_rate_or_latency():
    rows = _rows(
        [("run submit", "echo", 5.0)] * 30 + [("run poll", "echo", 3.0)] * 90 + [("run queued", "echo", 900.0)]
    )
    aggregated = rows[("", "Aggregated")]
    assert aggregated["requests"] == 121 and aggregated["failures"] == 0
    assert {aggregated[c] for c in ("rps", "p50_ms", "p99_ms", "avg_ms", "max_ms")} == {""}
    assert rows[("run queued", "echo")]["rps"] == 0.1


def test_unfinished_requests_have_their_own_column_and_sum_in_the_aggregate_without_handshakes():
    recorder = StepRecorder()
    for rtype, name, ms, cut in [
        ("FETCH", "/a", 5.0, False),
        ("FETCH", "/a", 900.0, True),
        ("QUIC", "handshake", 9.0, True),
    ]:
        recorder.record(0, rtype, name, ms, cut)
        if cut:
            recorder.note_unfinished(0, rtype, name)
    merged = StepMerge()
    merged.add_batch("local", recorder.drain())
    info = StepInfo(index=0, label="2 users", users=2, rate=None, started_at=T0)
    rows = {(r["request_type"], r["name"]): r for r in step_rows(merged, [info], T0 + 10.0, [])}
    assert (rows[("FETCH", "/a")]["unfinished"], rows[("FETCH", "/a")]["failures"]) == (1, 1)
    assert rows[("QUIC", "handshake")]["unfinished"] == 1
    assert rows[("", "Aggregated")]["unfinished"] == 1  # the handshake rides along, as in every other column
