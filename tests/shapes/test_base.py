"""The shape engine: class-attribute plans for every public shape, ramps that never eat their stage, and the
stage lookup the tick runs on."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from swarmgauge.errors import UsageError
from swarmgauge.shapes import ArrivalRate, Burst, Churn, PlanShape, Soak, StepRamp
from swarmgauge.shapes.base import MAX_RAMP_SECONDS, RAMP_FRACTION, SETTLE_SECONDS


def _with_options(shape, **options):
    defaults = {
        "plan": None,
        "steps": None,
        "step_time": None,
        "warmup": None,
        "rate": None,
        "plan_duration": None,
        "max_users": None,
        "drop_after": None,
        "shape_kind": None,
        "num_users": None,
        "run_time": None,
        "spawn_rate": None,
    }
    shape.runner = SimpleNamespace(
        environment=SimpleNamespace(parsed_options=SimpleNamespace(**{**defaults, **options}))
    )
    return shape


class Ramp(StepRamp):
    steps = [1, 4, 16]
    step_time = "30s"
    warmup = "2s"


class LongSoak(Soak):
    users = 3
    duration = "30m"


class SubmitBurst(Burst):
    rate = 1000
    duration = "3s"
    max_users = 200


class SessionChurn(Churn):
    rate = 5
    duration = "40m"
    max_users = 64


def test_class_attributes_make_the_plan():
    ramp = _with_options(Ramp()).plan()
    assert (ramp.kind, [s.users for s in ramp.stages], ramp.stages[0].warmup) == ("step_ramp", [1, 4, 16], 2.0)
    soak = _with_options(LongSoak()).plan()
    assert (soak.stages[0].users, soak.stages[0].duration) == (3, 1800.0)
    burst = _with_options(SubmitBurst()).plan().stages[0]
    assert (burst.rate, burst.duration, burst.user_count) == (1000.0, 3.0, 200)
    churn = _with_options(SessionChurn()).plan().stages[0]
    assert churn.label == "churn 5 sessions/s" and churn.rate == 5.0


def test_bare_shapes_take_their_plan_from_the_options():
    plan = _with_options(StepRamp(), steps="2,8", step_time="5s").plan()
    assert [s.users for s in plan.stages] == [2, 8]
    rates = _with_options(ArrivalRate(), rate="10,50", step_time="4s", max_users="20").plan()
    assert [(s.rate, s.duration, s.max_users) for s in rates.stages] == [(10.0, 4.0, 20), (50.0, 4.0, 20)]


def test_a_shape_refuses_a_plan_of_another_kind():
    with pytest.raises(UsageError, match="StepRamp runs step_ramp plans"):
        _with_options(StepRamp(), rate="5", plan_duration="3s").plan()
    with pytest.raises(UsageError, match="no plan"):
        _with_options(ArrivalRate()).plan()


def test_plan_shape_falls_back_to_locusts_own_options():
    plan = _with_options(PlanShape(), num_users=7, run_time=12).plan()
    assert [(s.users, s.duration) for s in plan.stages] == [(7, 12.0)]


def test_ramps_take_at_most_a_tenth_of_their_stage_and_two_seconds():
    shape = _with_options(Ramp())
    stages = shape.plan().stages
    for index, stage in enumerate(stages):
        previous = stages[index - 1].users if index else 0
        ramp_seconds = (stage.users - previous) / shape.spawn_rate_for(index, stage)
        assert ramp_seconds <= min(MAX_RAMP_SECONDS, RAMP_FRACTION * stage.duration) + 1e-9


def test_new_users_wait_for_the_running_users_requests_within_the_warmup_only():
    ramp = _with_options(Ramp())
    stages = ramp.plan().stages
    assert [ramp.settle_seconds(i, stage) for i, stage in enumerate(stages)] == [0.0, 1.0, 1.0]  # half of 2 s
    long_warmup = _with_options(StepRamp(), steps="4,16", step_time="30s", warmup="10s")
    settles = [long_warmup.settle_seconds(i, s) for i, s in enumerate(long_warmup.plan().stages)]
    assert settles == [0.0, SETTLE_SECONDS]  # nothing runs before the first step, so it spawns at once
    no_warmup = _with_options(StepRamp(), steps="1,4", step_time="10s")
    assert [no_warmup.settle_seconds(i, s) for i, s in enumerate(no_warmup.plan().stages)] == [0.0, 0.0]
    rates = _with_options(ArrivalRate(), rate="10,50", step_time="4s", max_users="20", warmup="2s")
    assert [rates.settle_seconds(i, s) for i, s in enumerate(rates.plan().stages)] == [0.0, 0.0]


def test_stage_lookup_by_run_time():
    shape = _with_options(Ramp())
    assert shape.stage_at(0.0)[0] == 0
    index, stage, left = shape.stage_at(45.0)
    assert (index, stage.users, left) == (1, 4, 15.0)
    assert shape.stage_at(90.0) is None


def test_only_the_stop_ticks_spawn_rate_warning_is_dropped():
    import logging

    from swarmgauge.shapes.base import _STOP_TICK_WARNING

    def passes(message: str) -> bool:
        return _STOP_TICK_WARNING.filter(logging.LogRecord("locust.runners", logging.WARNING, "", 0, message, (), None))

    warning = "Your selected spawn rate is very high (>100), and this is known to sometimes cause issues."
    try:
        assert passes(warning)  # a user's own fast ramp is still warned of
        _STOP_TICK_WARNING.armed = True
        assert not passes(warning) and passes("Ramping to 0 users at a rate of 10000.00 per second")
    finally:
        _STOP_TICK_WARNING.armed = False


PLAN_OF_ONE_CLASS = """
from locust import HttpUser, constant, task

import swarmgauge.locust  # noqa: F401
from swarmgauge import api as sg


class Ramp(sg.StepRamp):
    steps = [1]
    step_time = "2s"
    user_classes = ["Planned"]


class Planned(HttpUser):
    wait_time = constant(1)

    @task
    def get(self):
        self.client.get("/")


class Other(Planned):
    pass
"""


@pytest.mark.integration  # a real Locust process, stopped before any load
def test_a_plan_class_the_command_line_left_out_stops_the_run_in_one_line(tmp_path):
    """The plan runs Planned, the command line picks Other: Locust's runner knows only Other, and crashed with
    KeyError: 'Planned' once the stage began (issue 28: a class the plan does not run is exit 2 before any load)."""
    import subprocess
    import sys

    locustfile = tmp_path / "locustfile.py"
    locustfile.write_text(PLAN_OF_ONE_CLASS)
    command = [sys.executable, "-m", "locust", "-f", str(locustfile), "--headless", "--host", "http://127.0.0.1:9"]
    result = subprocess.run([*command, "-t", "5s", "Other"], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("swarmgauge:")]
    assert len(lines) == 1 and "runs Planned, which this run left out (it runs Other)" in lines[0], result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("left", [[], [True, True, True]])
def test_the_open_model_tail_ends_at_the_second_look_that_finds_no_ticket_left(monkeypatch, left):
    """A run that ends on a burst: once its tickets are all taken (two looks a poll apart), the tail is over."""
    from swarmgauge.core import hooks

    looks: list[bool] = []

    def tickets_left(_environment):
        looks.append(left.pop(0) if left else False)
        return looks[-1]

    monkeypatch.setattr(hooks.tickets_left, "implementation", tickets_left)
    PlanShape._wait_out_tickets(SimpleNamespace(), 60.0)
    assert looks == [True] * (len(looks) - 2) + [False, False]


def test_the_open_model_tail_is_waited_out_while_a_ticket_is_left(monkeypatch):
    from swarmgauge.core import hooks

    looks: list[bool] = []
    monkeypatch.setattr(hooks.tickets_left, "implementation", lambda _env: looks.append(True) or True)
    PlanShape._wait_out_tickets(SimpleNamespace(), 0.2)
    assert looks and all(looks)  # every look found one left, and the bound ended the wait
