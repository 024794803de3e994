"""Plans from documents, options and files; bad ones raise UsageError, and stop a real run with exit 2."""

import subprocess
import sys

import pytest

from swarmgauge.errors import UsageError
from swarmgauge.plans.plan import build_plan, load_plan_file, parse_duration
from swarmgauge.run_folders import resolve
from swarmgauge.shapes.open_model import arrival_time, arrivals_by
from tests.listeners.sim_run import run_local

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs


def test_step_ramp_expands_to_one_stage_per_step():
    plan = build_plan({"kind": "step_ramp", "steps": [1, 4, 16], "step_time": "30s", "warmup": "2s"})
    assert [s.users for s in plan.stages] == [1, 4, 16]
    assert all(s.duration == 30 and s.warmup == 2 for s in plan.stages)


@pytest.mark.parametrize(
    "doc, words",
    [
        ({"kind": "zigzag"}, "unknown shape"),
        ({"kind": "arrival_rate", "rate": -5, "duration": "3s"}, "negative"),
        ({"kind": "step_ramp", "steps": [4, 1], "step_time": 5}, "strictly increasing"),
        ({"kind": "step_ramp", "steps": [1, 2], "step_time": 5, "colour": 1}, "unknown key"),
    ],
)
def test_bad_plans_raise_usage_error_saying_what_is_wrong(doc, words):
    with pytest.raises(UsageError, match=words):
        build_plan(doc)


def test_durations_and_bad_duration():
    assert parse_duration("5m", "x") == 300
    with pytest.raises(UsageError):
        parse_duration("soon", "x")


def test_constant_rate_issues_exactly_rate_times_duration_tickets():
    assert arrivals_by(3.0, 1000.0, None, 3.0) == 3000
    assert arrivals_by(3.0, 5.0, None, 3.0) == 15
    assert arrival_time(10, 5.0, None, 3.0) == pytest.approx(2.0)


def test_ramping_rate_inverse_matches_count():
    total = arrivals_by(10.0, 10.0, 30.0, 10.0)
    assert total == 200
    assert arrival_time(total - 1, 10.0, 30.0, 10.0) < 10.0


@pytest.mark.parametrize("name", ["demarkus-reads", "demarkus-write-soak", "mcp-churn", "kneo-sweep", "mdk-burst"])
def test_bundled_plans_load(name):
    assert load_plan_file(name).stages


# --- bad plans stop a real run before it starts ---------------------------------------------------------------------

NOWHERE = "http://127.0.0.1:9"  # never contacted: the run must stop before any user starts


@pytest.mark.parametrize(
    "args, words",
    [
        (("--shape-kind", "zigzag", "--steps", "1,2", "--step-time", "1"), "unknown shape 'zigzag'"),
        (("--rate=-5", "--duration", "3s"), "must not be negative"),
        (("--steps", "4,1", "--step-time", "1"), "steps must be strictly increasing, got 4, 1"),
        (("--steps", "1,4", "--step-time", "soon"), "expected a duration"),
        (("--plan", "no-such-plan"), "plan file 'no-such-plan' not found"),
    ],
)
def test_bad_plan_options_exit_2_with_one_line(tmp_path, args, words):
    run_dir = tmp_path / "run"
    result = run_local(NOWHERE, *args, "--run-dir", str(run_dir), timeout=60)
    assert result.returncode == 2, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("swarmgauge:")]
    assert len(lines) == 1 and words in lines[0], result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert not (resolve(run_dir) / "steps.csv").exists()


def test_a_bad_plan_file_exits_2_with_one_line(tmp_path):
    plan = tmp_path / "bad.yaml"
    plan.write_text("name: bad\nkind: burst\nrate: 1000\nduration: 3s\nmax_users: 0\n")
    result = run_local(NOWHERE, "--plan", str(plan), timeout=60)
    assert result.returncode == 2, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("swarmgauge:")]
    assert len(lines) == 1 and "max_users: must be greater than zero" in lines[0], lines


NO_SHAPE_LOCUSTFILE = """
from locust import User, task

import swarmgauge.locust  # noqa: F401 - the options, but no shape


class IdleUser(User):
    @task
    def idle(self):
        pass
"""


@pytest.mark.integration
def test_plan_options_for_a_locustfile_without_a_shape_exit_2_instead_of_being_ignored(tmp_path):
    locustfile = tmp_path / "no_shape.py"
    locustfile.write_text(NO_SHAPE_LOCUSTFILE)
    result = subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(locustfile), "--headless", "--host", NOWHERE]
        + ["--steps", "1,2", "--plan", "demarkus-reads"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("swarmgauge:")]
    assert len(lines) == 1 and "--plan, --steps need a swarmgauge shape" in lines[0], result.stderr[-2000:]
