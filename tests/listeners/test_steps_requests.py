"""The steps listener's request path: an answered request in the current step is kept and recorded at the stall
watch's next wake or before a drain, in the order the requests came; the rest is recorded at once."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from swarmgauge.core.hooks import StepInfo
from swarmgauge.listeners import step_state, steps, steps_requests


def _environment() -> SimpleNamespace:
    return SimpleNamespace(runner=None, parsed_options=None)


def _two_steps(environment: SimpleNamespace, now: float) -> None:
    state = step_state.state_of(environment)
    state.transitions += [
        (now - 10.0, StepInfo(0, "1 users", 1, None, now - 10.0, 5.0)),
        (now - 5.0, StepInfo(1, "4 users", 4, None, now - 5.0, 5.0, warmup=1.0)),
    ]


def _kept_then_recorded(environment: SimpleNamespace, *args: object, **kwargs: object) -> None:
    steps_requests.on_request_later(environment, *args, **kwargs)  # type: ignore[arg-type]
    steps_requests.record_incoming(environment)


def test_the_request_path_files_a_step_change_and_a_drain_under_the_right_entries():
    """The kept requests' lookup of the current step's figures (by type, then name) follows a new step and a drain,
    and finds what the general path made for the same name."""
    environment = _environment()
    state = step_state.state_of(environment)
    now = time.time()
    state.transitions.append((now - 20.0, StepInfo(0, "1 users", 1, None, now - 20.0, 10.0)))
    _kept_then_recorded(environment, "GET", "/", 5.0, start_time=now - 1.0)
    _kept_then_recorded(environment, "GET", "/", 6.0, exception=RuntimeError("x"), start_time=now - 1.0)
    _kept_then_recorded(environment, "POST", "/", 7.0, start_time=now - 1.0)
    recorder = state.recorder
    first = recorder.entries[(0, "GET", "/")]
    assert (first.requests, first.failures, recorder.entries[(0, "POST", "/")].requests) == (2, 1, 1)
    state.transitions.append((now - 0.5, StepInfo(1, "4 users", 4, None, now - 0.5, 10.0)))
    _kept_then_recorded(environment, "GET", "/", 8.0, start_time=now - 0.4)  # the new step
    _kept_then_recorded(environment, "GET", "/", 9.0, start_time=now - 0.6)  # started in step 0: counts there
    assert recorder.entries[(1, "GET", "/")].requests == 1 and first.requests == 3
    batch = recorder.drain(encoded=False)
    _kept_then_recorded(environment, "GET", "/", 10.0, start_time=now - 0.3)
    assert [entry[:3] for entry in batch["entries"]] == [[0, "GET", "/"], [0, "POST", "/"], [1, "GET", "/"]]
    after = recorder.entries[(1, "GET", "/")]
    assert after.requests == 1 and after.max_ms == 10.0
    assert batch["entries"][2][4] == 1  # the drained figures kept their count


def test_the_request_path_leaves_warmup_and_early_starts_to_the_general_path():
    environment = _environment()
    state = step_state.state_of(environment)
    now = time.time()
    _two_steps(environment, now)
    steps_requests.on_request(environment, "GET", "/", 1.0, start_time=now - 4.5)  # in step 1's warm-up
    steps_requests.on_request(environment, "GET", "/", 2.0, start_time=now - 6.0)  # step 0
    steps_requests.on_request(environment, "GET", "/", 3.0, start_time=now - 1.0)  # step 1, past its warm-up
    steps_requests.on_request(environment, "GET", "/", None, start_time=now - 1.0)  # no response time
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
    steps_requests.on_request(environment, "GET", "/", 600.0, start_time=now - 2.6)  # in flight through it
    steps_requests.on_request(environment, "GET", "/", 5.0, start_time=now - 1.0)  # after it
    assert state.recorder.stalls == {1: (pytest.approx(500.0), 1)}
    assert state.stall_watch.kept() == 1


def test_an_answered_request_waits_for_the_next_wake_or_drain_and_a_failure_records_those_before_it_first():
    environment = _environment()
    state = step_state.state_of(environment)
    now = time.time()
    _two_steps(environment, now)
    later = steps_requests.on_request_later
    later(environment, "GET", "/", 3.0, start_time=now - 1.0)
    later(environment, "GET", "/", 4.0, start_time=now - 6.0)  # started in step 0
    assert state.incoming and not state.recorder.entries
    later(environment, "GET", "/", 5.0, exception=RuntimeError("x"), start_time=now - 0.5)
    assert not state.incoming and state.stall_watch.kept() == 3
    assert [list(state.stall_watch.recent)[i] for i in (0, 3, 6)] == [1, 0, 1]  # the order they came in
    step1 = state.recorder.entries[(1, "GET", "/")]
    assert (step1.requests, step1.failures, state.recorder.entries[(0, "GET", "/")].requests) == (2, 1, 1)
    later(environment, "GET", "/", 6.0, start_time=now - 0.4)
    sent: dict = {}
    steps._on_report_to_master(environment, "w1", sent)  # a drain records what is kept first
    assert {entry[0]: entry[4] for entry in sent["swarmgauge_steps"]["entries"]} == {0: 1, 1: 3}
    assert not state.incoming


def test_the_stall_watch_records_the_kept_requests_before_it_notes_its_wake():
    environment = _environment()
    state = step_state.state_of(environment)
    now = time.time()
    _two_steps(environment, now)
    steps_requests.on_request_later(environment, "GET", "/", 400.0, start_time=now - 0.5)
    watch = steps_requests._stall_watch(environment)
    assert watch is state.stall_watch and watch.kept() == 1
    watch.note_wake(0.05, now, 0.3)  # the loop was held for the last 0.3 s: the kept request was in flight
    assert state.recorder.stalls == {1: (pytest.approx(300.0), 1)}


def test_kept_requests_are_recorded_at_once_past_the_bound():
    environment = _environment()
    state = step_state.state_of(environment)
    now = time.time()
    _two_steps(environment, now)
    for _ in range(steps_requests.MAX_INCOMING):
        steps_requests.on_request_later(environment, "GET", "/", 1.0, start_time=now - 1.0)
    assert not state.incoming and state.recorder.entries[(1, "GET", "/")].requests == steps_requests.MAX_INCOMING


def test_a_request_kept_across_a_step_change_counts_in_the_step_it_started_in():
    environment = _environment()
    state = step_state.state_of(environment)
    now = time.time()
    state.transitions.append((now - 20.0, StepInfo(0, "1 users", 1, None, now - 20.0, 10.0)))
    steps_requests.on_request_later(environment, "GET", "/", 1.0, start_time=now - 1.0)
    state.transitions.append((now - 0.5, StepInfo(1, "4 users", 4, None, now - 0.5, 10.0)))
    steps_requests.on_request_later(environment, "GET", "/", 2.0, start_time=now - 0.4)
    steps_requests.record_incoming(environment)
    entries = state.recorder.entries
    assert (entries[(0, "GET", "/")].max_ms, entries[(1, "GET", "/")].max_ms) == (1.0, 2.0)


def test_a_response_time_that_cannot_be_recorded_is_logged_and_the_others_are_recorded(caplog):
    environment = _environment()
    state = step_state.state_of(environment)
    now = time.time()
    _two_steps(environment, now)
    for response_time in (1.0, float("nan"), 2.0):
        steps_requests.on_request_later(environment, "GET", "/", response_time, start_time=now - 1.0)
    steps_requests.record_incoming(environment)
    assert state.recorder.entries[(1, "GET", "/")].max_ms == 2.0
    assert "not recorded" in caplog.text
