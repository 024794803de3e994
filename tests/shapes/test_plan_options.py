"""Plan options are checked whatever the shape, and a shape with a plan of its own refuses them (issue 28, defect 2).

The README's own-locustfile example (``class Ramp(sg.StepRamp): steps = [...]``) ran its own plan in silence when
given ``--steps``, ``--step-time``, ``--plan nosuchplan`` or ``--warmup``, and did not even check ``--steps 1,,2``.
"""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import pytest

from swarmgauge.errors import UsageError
from swarmgauge.shapes import PlanShape, StepRamp
from swarmgauge.shapes.plan_options import check_plan_option_values, refuse_plan_options

OPTION_DESTS = ("plan", "steps", "step_time", "warmup", "rate", "plan_duration", "max_users", "drop_after")


def _options(**given):
    defaults = {dest: None for dest in (*OPTION_DESTS, "shape_kind", "num_users", "run_time", "spawn_rate")}
    return SimpleNamespace(**{**defaults, **given})


class Ramp(StepRamp):
    steps = [1, 4]
    step_time = "2s"


def _plan_of(shape, **given):
    shape.runner = SimpleNamespace(environment=SimpleNamespace(parsed_options=_options(**given)))
    return shape.plan()


@pytest.mark.parametrize(
    "given, words",
    [
        (
            {"steps": "3,5"},
            "--steps cannot apply: this locustfile's shape Ramp sets its own steps [1, 4]; remove --steps",
        ),
        ({"step_time": "3s"}, "--step-time cannot apply: this locustfile's shape Ramp sets its own step_time 2s"),
        ({"warmup": "10s"}, "--warmup cannot apply: this locustfile's shape Ramp sets its own plan (steps [1, 4]"),
        ({"plan": "demarkus-reads"}, "--plan cannot apply"),
        ({"steps": "3,5", "warmup": "1s"}, "--steps, --warmup cannot apply"),
    ],
)
def test_a_shape_with_its_own_plan_refuses_plan_options(given, words):
    with pytest.raises(UsageError) as raised:
        _plan_of(Ramp(), **given)
    assert words in str(raised.value) and "PlanShape" in str(raised.value)


def test_a_refusal_says_where_to_set_an_option_the_shape_lacks():
    with pytest.raises(UsageError, match="set warmup on Ramp"):
        refuse_plan_options("Ramp", {"kind": "step_ramp", "steps": [1], "step_time": "2s"}, _options(warmup="5s"))


@pytest.mark.parametrize(
    "given, words",
    [
        ({"steps": "1,,2"}, "--steps: empty item in '1,,2'"),
        ({"step_time": "5x"}, "--step-time: expected a duration"),
        ({"warmup": "soon"}, "--warmup: expected a duration"),
        ({"plan_duration": "-3s"}, "--duration: expected a duration"),
        ({"rate": "5,x"}, "--rate: expected a number"),
        ({"max_users": "0"}, "--max-users: must be greater than zero"),
        ({"shape_kind": "zigzag"}, "--shape-kind: unknown shape 'zigzag'"),
        ({"plan": "nosuchplan"}, "plan file 'nosuchplan' not found; give a YAML file's path or one of the bundled"),
    ],
)
def test_every_value_is_checked_whether_or_not_the_shape_reads_it(given, words):
    with pytest.raises(UsageError) as raised:
        check_plan_option_values(_options(**given))
    assert words in str(raised.value)
    with pytest.raises(UsageError) as by_shape:
        _plan_of(Ramp(), **given)
    assert words in str(by_shape.value), "the value is checked before the shape's own plan is chosen"


def test_an_unknown_plan_names_the_bundled_ones():
    with pytest.raises(UsageError, match=r"demarkus-reads, .*mcp-churn"):
        check_plan_option_values(_options(plan="nosuchplan"))


def test_a_plan_option_beside_a_plan_file_is_refused_not_ignored():
    with pytest.raises(UsageError, match="--steps, --warmup cannot apply beside --plan demarkus-reads"):
        _plan_of(PlanShape(), plan="demarkus-reads", steps="1,2", warmup="1s")
    assert _plan_of(PlanShape(), plan="demarkus-reads").name == "demarkus-reads"


def test_a_shape_without_a_plan_of_its_own_takes_the_options():
    assert [s.users for s in _plan_of(PlanShape(), steps="3,5", step_time="3s").stages] == [3, 5]
    assert [s.users for s in _plan_of(Ramp()).stages] == [1, 4]


README_RAMP = """
from locust import HttpUser, constant, task

import swarmgauge.locust  # noqa: F401
from swarmgauge import api as sg


class Ramp(sg.StepRamp):
    steps = [1, 4]
    step_time = "2s"


class ShopUser(HttpUser):
    wait_time = constant(0.5)

    @task
    def home(self) -> None:
        self.client.get("/")
"""


@pytest.mark.integration
@pytest.mark.parametrize(
    "args, words",
    [
        (("--steps", "3,5"), "--steps cannot apply: this locustfile's shape Ramp sets its own steps [1, 4]"),
        (("--plan", "nosuchplan"), "plan file 'nosuchplan' not found"),
        (("--steps", "1,,2"), "--steps: empty item in '1,,2'"),
        (("--step-time", "5x"), "--step-time: expected a duration"),
    ],
)
def test_the_readme_ramp_stops_before_load_on_a_plan_option(tmp_path, args, words):
    locustfile = tmp_path / "locustfile.py"
    locustfile.write_text(README_RAMP)
    command = [sys.executable, "-m", "locust", "-f", str(locustfile), "--headless", "--host", "http://127.0.0.1:9"]
    result = subprocess.run(
        [*command, "--run-dir", str(tmp_path / "runs"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("swarmgauge:")]
    assert len(lines) == 1 and words in lines[0], result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "runs").exists(), "no run folder for a run that never started"
