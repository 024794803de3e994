"""Per-step state belongs to one Environment: a worker report fired on an Environment's events reaches that
Environment's merge, not whichever Environment was made last, and a gone Environment leaves nothing behind."""

from __future__ import annotations

import gc

from locust.env import Environment

from swarmgauge.core import run_context
from swarmgauge.listeners import step_state, steps, user_errors
from swarmgauge.listeners.step_stats import StepRecorder


def _one_request_batch() -> dict:
    recorder = StepRecorder()
    recorder.record(0, "GET", "/a", 5.0, failed=False)
    return recorder.drain()


def test_a_worker_report_reaches_the_environment_it_was_fired_on_not_the_last_one_made():
    first, second = Environment(), Environment()
    steps._on_init(first)
    steps._on_init(second)
    first.events.worker_report.fire(client_id="w1", data={"swarmgauge_steps": _one_request_batch()})
    assert steps.merged(first).aggregated(0).requests == 1
    assert steps.merged(second).steps() == []


def test_report_to_master_drains_the_recorder_of_the_environment_that_reports():
    first, second = Environment(), Environment()
    steps._on_init(first)
    steps._on_init(second)
    step_state.state_of(first).recorder.record(0, "GET", "/a", 5.0, failed=False)
    sent: dict = {}
    first.events.report_to_master.fire(client_id="w1", data=sent)
    assert "swarmgauge_steps" in sent and step_state.state_of(first).recorder.empty()
    quiet: dict = {}
    second.events.report_to_master.fire(client_id="w2", data=quiet)
    assert "swarmgauge_steps" not in quiet


def test_user_errors_from_a_worker_are_tallied_on_the_environment_that_received_them():
    first, second = Environment(), Environment()
    user_errors._on_init(first)
    user_errors._on_init(second)
    first.events.worker_report.fire(client_id="w1", data={user_errors.REPORT_KEY: [("KeyError", 2, "'x'")]})
    assert user_errors.tally(first).by_class["KeyError"].count == 2
    assert user_errors.tally(second).by_class == {}


def test_an_environment_steps_knew_is_gone_with_its_records_once_dropped():
    environment = Environment()
    steps._on_init(environment)
    steps.count(environment, "dropped")
    key = id(environment)
    assert key in run_context.held_ids()
    del environment
    gc.collect()
    assert key not in run_context.held_ids()
