"""The per-step state's timeline: a closed bucket keeps its figures and drops its histogram, so long runs stay flat."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from swarmgauge.listeners import step_state
from swarmgauge.listeners.step_stats import StepRecorder
from swarmgauge.listeners.steps_csv import Timeline, timeline_rows


def _environment() -> SimpleNamespace:
    return SimpleNamespace(runner=None, parsed_options=None)


def test_closed_timeline_buckets_keep_figures_only_and_one_histogram_stays_open(monkeypatch):
    """Long runs stay flat: a finished one-second bucket is kept as four figures, its histogram dropped."""
    environment = _environment()
    state = step_state.state_of(environment)
    clock = [1000.2]
    monkeypatch.setattr(step_state.time, "time", lambda: clock[0])
    for second in range(300):
        clock[0] = 1000.2 + second
        for _ in range(2):
            recorder = StepRecorder()
            recorder.record(0, "GET", "/", 10.0 + second % 7, failed=second % 10 == 0)
            step_state.merge_batch(environment, "local", recorder.drain())
    assert len(state.timeline) == 299 and isinstance(state.timeline, Timeline)
    assert state.open_bucket == 1299 and state.open_stats.requests == 2
    step_state.close_bucket(state)
    rows = timeline_rows(state.timeline, 1.0)
    assert len(rows) == 300
    assert {k: rows[0][k] for k in ("time", "step", "requests", "failures")} == {
        "time": 1000.0,
        "step": 0,
        "requests": 2,
        "failures": 2,
    }
    assert rows[0]["p50_ms"] == pytest.approx(10.0, rel=1e-3)
    assert rows[3]["p99_ms"] == pytest.approx(13.0, rel=1e-3) and rows[3]["failures"] == 0
