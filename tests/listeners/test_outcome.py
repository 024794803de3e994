"""One exit code per run with every reason for it: user-code exceptions fail a run unless an SLO names
``user_errors``, an SLO on failed requests does not excuse them, and a gate -t kept from measuring is exit 4."""

from __future__ import annotations

import argparse

from locust import User, constant, task
from locust.env import Environment

from swarmgauge.core.run_context import RunContext
from swarmgauge.listeners import outcome, steps, user_errors

NOT_REACHED = {"expr": "GET:/later:p99<5s", "metric": "p99", "status": outcome.NOT_REACHED}
FAIL_RATIO_HELD = {"expr": "fail_ratio<0.01", "metric": "fail_ratio", "status": "pass"}


class IdleUser(User):
    wait_time = constant(1)

    @task
    def nothing(self) -> None:
        """Never run: the tests feed the counters directly."""


def _environment(raised: int = 0) -> Environment:
    environment = Environment(user_classes=[IdleUser], parsed_options=argparse.Namespace(exit_code_on_error=1))
    environment.create_local_runner()
    for _ in range(raised):
        user_errors.record(environment, KeyError("x"))
    steps.merge_local_now(environment)
    return environment


def test_user_code_exceptions_fail_the_run_even_when_an_slo_on_failed_requests_holds():
    environment = _environment(raised=5)
    assert user_errors.total(environment) == 5
    for verdicts in ([], [FAIL_RATIO_HELD]):
        decided = outcome.decide(environment, verdicts)
        assert decided.code == 1
        assert decided.reasons == ["user code raised 5 exceptions (KeyError: 'x' (5)); no SLO names user_errors"]


def test_an_slo_naming_user_errors_decides_instead():
    environment = _environment(raised=5)
    held = {"expr": "user_errors<10", "metric": "user_errors", "status": "pass"}
    assert outcome.decide(environment, [held]) == outcome.Outcome(0, [])
    failed = {**held, "expr": "user_errors==0", "status": "fail"}
    assert outcome.decide(environment, [failed]) == outcome.Outcome(3, ["SLO failed (user_errors==0)"])


def test_a_gate_not_reached_is_exit_4_and_a_failed_one_still_wins():
    environment = _environment()
    decided = outcome.decide(environment, [NOT_REACHED])
    assert decided.code == outcome.NOT_REACHED_EXIT_CODE == 4
    assert decided.reasons[0].startswith("cut short: -t stopped the plan") and "GET:/later:p99<5s" in decided.reasons[0]
    failed = {"expr": "p99<1ms", "metric": "p99", "status": "fail"}
    both = outcome.decide(_environment(raised=1), [failed, NOT_REACHED])
    assert both.code == 3 and [line.split(" ")[0] for line in both.lines()] == ["exit", "also:", "also:"]


def test_a_failed_requests_own_exception_propagating_out_of_a_task_is_not_counted_again():
    environment = _environment()
    failure = ConnectionError("initialize failed")
    user_errors.tally(environment).note_failure(failure)  # what the request event of a failed request records
    user_errors.record(environment, failure)  # measure(..., reraise=True) handed it on, out of the task
    try:
        raise RuntimeError("session could not start") from failure
    except RuntimeError as chained:
        user_errors.record(environment, chained)
    user_errors.record(environment, KeyError("x"))  # the task's own bug
    steps.merge_local_now(environment)
    assert user_errors.total(environment) == 1
    assert [c["class"] for c in user_errors.by_class(environment)] == ["KeyError"]


def test_a_run_ended_by_a_signal_keeps_the_code_of_what_it_measured_and_says_the_signal():
    environment = _environment()
    RunContext.of(environment).run_info["ended_by"] = "SIGHUP"
    decided = outcome.decide(environment, [FAIL_RATIO_HELD])
    assert decided == outcome.Outcome(0, [], "SIGHUP")
    assert decided.lines() == ["exit code 0 (run ended by SIGHUP)"]
    assert outcome.decide(_environment(), []).lines() == ["exit code 0"]


def test_a_gate_a_signal_kept_from_running_is_exit_4_and_names_the_signal():
    environment = _environment()
    context = RunContext.of(environment)
    context.run_info["ended_by"] = "SIGTERM"
    context.run_info["cut_short"] = {"by": "SIGTERM", "run_time_s": 12.0, "planned_s": 240.0, "steps_not_run": ["4"]}
    decided = outcome.decide(environment, [NOT_REACHED])
    assert decided.code == outcome.NOT_REACHED_EXIT_CODE
    assert decided.lines()[0] == (
        "exit code 4 (run ended by SIGTERM): cut short: SIGTERM stopped the plan at 12 s of 240 s before it measured "
        "GET:/later:p99<5s (gate not exercised)"
    )


def test_a_failed_request_event_is_noted_through_the_steps_listener_before_and_after_a_new_run():
    """user_errors learns of a failed request through steps' one request listener (``steps_requests.note_failures``): the
    event of a failed request, before and after a new run renewed the steps' state, keeps its exception from
    counting again as a user error when it propagates out of the task."""
    environment = Environment(user_classes=[IdleUser], parsed_options=argparse.Namespace(exit_code_on_error=1))
    steps._on_init(environment)
    user_errors._on_init(environment)
    failures = [ConnectionError("first"), ConnectionError("second")]
    for failure in failures:
        environment.events.request.fire(
            request_type="GET", name="/", response_time=1.0, response_length=0, exception=failure
        )
        steps.fresh_state(environment)  # a new run (a web UI's next START) in the same process
        user_errors.record(environment, failure)
    user_errors.record(environment, KeyError("x"))
    steps.merge_local_now(environment)
    assert user_errors.total(environment) == 1
    assert [c["class"] for c in user_errors.by_class(environment)] == ["KeyError"]
