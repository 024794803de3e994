"""The per-step state's timeline: a closed bucket keeps its figures and drops its histogram, so long runs stay flat;
and the request handler's own path into that state."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from swarmgauge.core.hooks import StepInfo
from swarmgauge.listeners import step_state, steps
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


def _two_steps(environment: SimpleNamespace, now: float) -> None:
    state = step_state.state_of(environment)
    state.transitions += [
        (now - 10.0, StepInfo(0, "1 users", 1, None, now - 10.0, 5.0)),
        (now - 5.0, StepInfo(1, "4 users", 4, None, now - 5.0, 5.0, warmup=1.0)),
    ]


def test_the_request_path_files_a_step_change_and_a_drain_under_the_right_entries():
    """The handler's own lookup of the current step's figures (by type, then name) follows a new step and a drain,
    and finds what the general path made for the same name."""
    environment = _environment()
    state = step_state.state_of(environment)
    now = time.time()
    state.transitions.append((now - 20.0, StepInfo(0, "1 users", 1, None, now - 20.0, 10.0)))
    steps.on_request(environment, "GET", "/", 5.0, start_time=now - 1.0)
    steps.on_request(environment, "GET", "/", 6.0, exception=RuntimeError("x"), start_time=now - 1.0)
    steps.on_request(environment, "POST", "/", 7.0, start_time=now - 1.0)
    recorder = state.recorder
    first = recorder.entries[(0, "GET", "/")]
    assert (first.requests, first.failures, recorder.entries[(0, "POST", "/")].requests) == (2, 1, 1)
    state.transitions.append((now - 0.5, StepInfo(1, "4 users", 4, None, now - 0.5, 10.0)))
    steps.on_request(environment, "GET", "/", 8.0, start_time=now - 0.4)  # the new step
    steps.on_request(environment, "GET", "/", 9.0, start_time=now - 0.6)  # started in step 0: counts there
    assert recorder.entries[(1, "GET", "/")].requests == 1 and first.requests == 3
    batch = recorder.drain(encoded=False)
    steps.on_request(environment, "GET", "/", 10.0, start_time=now - 0.3)
    assert [entry[:3] for entry in batch["entries"]] == [[0, "GET", "/"], [0, "POST", "/"], [1, "GET", "/"]]
    after = recorder.entries[(1, "GET", "/")]
    assert after.requests == 1 and after.max_ms == 10.0
    assert batch["entries"][2][4] == 1  # the drained figures kept their count


def test_the_request_path_leaves_warmup_and_early_starts_to_the_general_path():
    environment = _environment()
    state = step_state.state_of(environment)
    now = time.time()
    _two_steps(environment, now)
    steps.on_request(environment, "GET", "/", 1.0, start_time=now - 4.5)  # in step 1's warm-up
    steps.on_request(environment, "GET", "/", 2.0, start_time=now - 6.0)  # step 0
    steps.on_request(environment, "GET", "/", 3.0, start_time=now - 1.0)  # step 1, past its warm-up
    steps.on_request(environment, "GET", "/", None, start_time=now - 1.0)  # no response time
    recorder = state.recorder
    assert recorder.warmup == {1: 1}
    assert recorder.entries[(0, "GET", "/")].requests == 1
    step1 = recorder.entries[(1, "GET", "/")]
    assert (step1.requests, step1.none_times, step1.total_ms) == (2, 1, 3.0)
    assert state.stall_watch.kept() == 3  # every request recorded (not the warm-up one) waits in the stall ring


def test_a_request_that_started_inside_a_noted_stall_is_counted_on_the_request_path():
    environment = _environment()
    state = step_state.state_of(environment)
    now = time.time()
    _two_steps(environment, now)
    state.stall_watch.note_wake(0.05, now - 2.0, 0.5)  # the loop was held from 2.5 s to 2.0 s ago
    steps.on_request(environment, "GET", "/", 600.0, start_time=now - 2.6)  # in flight through it
    steps.on_request(environment, "GET", "/", 5.0, start_time=now - 1.0)  # after it
    assert state.recorder.stalls == {1: (pytest.approx(500.0), 1)}
    assert state.stall_watch.kept() == 1
