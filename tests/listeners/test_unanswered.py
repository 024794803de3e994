"""A step with users and no answers fails every gate, with that said, and the run exits non-zero without a gate.

A step is silent when it offered load (users, or an arrival rate), recorded requests cut off by their user's stop
(``Unfinished``) and had no operation that ended; handshakes riding along are no answer.
"""

from __future__ import annotations

import argparse
import time

from locust import User, constant, task
from locust.env import Environment

from swarmgauge.core.hooks import StepInfo
from swarmgauge.errors import Unfinished
from swarmgauge.listeners import outcome, slo, steps, steps_requests, unanswered
from swarmgauge.listeners.step_stats import StepMerge, StepRecorder

T0 = 1_000_000.0


def _info(index: int, users: int | None = 2, rate: float | None = None) -> StepInfo:
    return StepInfo(index=index, label=f"step {index}", users=users, rate=rate, started_at=T0 + 10 * index)


def _merged(recordings: list[tuple[int, str, bool]]) -> StepMerge:
    """``(step, request type, unfinished)`` each one request; a handshake is ``QUIC``, named ``handshake``."""
    recorder = StepRecorder()
    for step, rtype, cut in recordings:
        name = "handshake" if rtype == "QUIC" else "/doc"
        recorder.record(step, rtype, name, 50.0, cut)
        if cut:
            recorder.note_unfinished(step, rtype, name)
    merged = StepMerge()
    merged.add_batch("local", recorder.drain())
    return merged


def test_a_step_whose_every_request_was_cut_off_is_silent_and_says_how_many():
    merged = _merged(
        [
            (0, "QUIC", False),  # the handshake completed: still no answer
            (0, "FETCH", True),
            (0, "FETCH", True),
            (1, "FETCH", False),  # one answer is enough
            (1, "FETCH", True),
            (2, "FETCH", True),  # no users: nothing was asked in it
            (4, "QUIC", True),  # only a cut-off handshake: silent too
            (5, "FETCH", True),  # an open-model step
        ]
    )
    infos = [_info(0), _info(1), _info(2, users=0), _info(3), _info(4), _info(5, users=None, rate=5.0)]
    silent = unanswered.find_silent(merged, infos)
    assert [(s.index, s.unfinished) for s in silent] == [(0, 2), (4, 1), (5, 1)]  # step 3 recorded nothing: not silent
    assert silent[0].reason == "no answers in step 0 (2 unfinished)"


def test_every_gate_fails_on_a_silent_step_per_step_and_for_the_run():
    silent = [unanswered.SilentStep(1, "8 users", 3)]
    run = unanswered.fail_silent(
        {"expr": "fail_ratio<0.5", "status": "pass", "colour": "green", "observed": 0.2}, silent
    )
    assert (run["status"], run["colour"], run["reason"]) == ("fail", "red", "no answers in step 1 (3 unfinished)")
    per_step = unanswered.fail_silent(
        {
            "expr": "p99<1s@step",
            "status": "pass",
            "colour": "green",
            "observed": 0.1,
            "steps": [
                {"step": 0, "label": "4 users", "observed": 0.1, "status": "pass"},
                {"step": 1, "label": "8 users", "observed": 0.9, "status": "pass"},
            ],
        },
        silent,
    )
    assert [s["status"] for s in per_step["steps"]] == ["pass", "fail"]
    assert per_step["steps"][1]["reason"] == "no answers in step 1 (3 unfinished)"
    assert (per_step["status"], per_step["worst_step"], per_step["observed"]) == ("fail", "8 users", 0.9)
    untouched = {"expr": "rps>1", "status": "pass", "colour": "green"}
    assert unanswered.fail_silent(dict(untouched), []) == untouched


class IdleUser(User):
    wait_time = constant(1)

    @task
    def nothing(self) -> None:
        """Never run: the test records the requests itself."""


def test_a_silent_step_without_a_gate_still_exits_non_zero_and_says_why():
    environment = Environment(user_classes=[IdleUser], parsed_options=argparse.Namespace(exit_code_on_error=1))
    environment.create_local_runner()
    steps.announce(environment, StepInfo(index=0, label="3 users", users=3, rate=None, started_at=time.time()))
    for _ in range(3):
        steps_requests.on_request(environment, "FETCH", "/doc", 800.0, Unfinished(), time.time())
    steps.merge_local_now(environment)
    decided = outcome.decide(environment, [])
    assert decided.code == 1
    assert decided.reasons[0] == "no answers in step 0 (3 unfinished): users ran and the target answered nothing"


def test_unfinished_is_a_request_metric_of_its_own():
    environment = Environment(user_classes=[IdleUser])
    environment.create_local_runner()
    steps.announce(environment, StepInfo(index=0, label="2 users", users=2, rate=None, started_at=time.time()))
    steps_requests.on_request(environment, "FETCH", "/doc", 5.0, None, time.time())
    steps_requests.on_request(environment, "FETCH", "/doc", 900.0, Unfinished(), time.time())
    steps.merge_local_now(environment)
    assert slo.observe(environment, slo.parse("FETCH:unfinished==0"), None) == 1.0
    assert slo.observe(environment, slo.parse("fail_ratio<0.01"), 0) == 0.5
