"""``-t/--run-time`` bounds every run, a planned one too: the plan stops there, the run closes normally and the
report says the plan was cut short."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest

from swarmgauge.core import hooks
from swarmgauge.plans.plan import build_plan
from swarmgauge.run_folders import resolve
from swarmgauge.shapes import PlanShape
from swarmgauge.targets.launch import child_env
from tests import REPO_ROOT

#: Locust asks a shape for its next tick once a second: a plan stops at the first tick at or past -t, so the time it
#: was cut at is -t within one tick (later on a loaded machine), and the report says that time to a tenth of a second.
SHAPE_TICK_S = 1.0
CUT_SHORT_AT = re.compile(r"The plan was cut short by -t/--run-time at (?P<seconds>\d+\.\d) s of its 40 min 0 s")


def _shape(run_time: float | None) -> PlanShape:
    shape = PlanShape()
    environment = SimpleNamespace(parsed_options=SimpleNamespace(run_time=run_time))
    shape.runner = SimpleNamespace(environment=environment)
    shape._plan = build_plan({"kind": "step_ramp", "steps": [1, 4, 16], "step_time": "60s"}, source="test")
    return shape


def test_the_limit_comes_from_locusts_run_time_option():
    assert _shape(20).run_time_limit() == 20.0
    assert _shape(None).run_time_limit() is None


def test_cutting_short_records_where_and_what_was_left(monkeypatch):
    noted = {}
    monkeypatch.setattr(hooks.add_run_info, "implementation", lambda env, key, value: noted.update({key: value}))
    shape = _shape(70)
    shape.cut_short(70.0)
    assert noted["cut_short"] == {
        "by": "-t/--run-time",
        "run_time_s": 70.0,
        "planned_s": 180.0,
        "during_step": "4 users",
        "steps_not_run": ["16 users"],
    }


def test_a_stop_during_the_plan_marks_it_cut_short_by_stop_and_a_stop_after_its_end_does_not(monkeypatch):
    noted: dict = {}
    monkeypatch.setattr(hooks.add_run_info, "implementation", lambda env, key, value: noted.update({key: value}))
    shape = _shape(None)
    shape._announced = 1
    monkeypatch.setattr(shape, "get_run_time", lambda: 95.0)
    shape.note_stop()
    assert noted["cut_short"]["by"] == "STOP" and noted["cut_short"]["during_step"] == "4 users"
    assert noted["cut_short"]["run_time_s"] == 95.0 and noted["cut_short"]["planned_s"] == 180.0
    noted.clear()
    ended = _shape(None)
    ended._announced, ended._ended = 2, True
    ended.note_stop()
    assert noted == {}


def test_only_a_plan_option_or_a_class_plan_is_a_plan_in_effect():
    assert _shape(None).plan_in_effect()
    fallback = PlanShape()
    fallback.runner = SimpleNamespace(
        environment=SimpleNamespace(parsed_options=SimpleNamespace(num_users=2, spawn_rate=1.0, run_time=None))
    )
    assert not fallback.plan_in_effect()


@pytest.mark.integration
@pytest.mark.timeout(150)
def test_run_time_20s_ends_the_40_minute_churn_plan_at_20s_with_a_report(tmp_path):
    run_dir = tmp_path / "run"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "locust",
            "-f",
            str(REPO_ROOT / "locustfiles" / "mcp_churn.py"),
            "--headless",
            "-t",
            "20s",
            "--run-dir",
            str(run_dir),
            "--only-summary",
            "--stop-timeout",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=child_env(),
        cwd=REPO_ROOT,
    )
    # Cut short is not a failure: the exit code is the SLOs' verdict alone. A busy machine (parallel tests) can make
    # the churn plan's own "dropped==0" fail, so 3 is accepted when slo.json says an SLO failed.
    assert result.returncode in (0, 3), result.stderr[-3000:]
    slos = json.loads((resolve(run_dir) / "slo.json").read_text())
    assert (result.returncode == 3) == (slos["passed"] is False), slos
    info = json.loads((resolve(run_dir) / "run.json").read_text())
    assert info["plan"]["stages"][0]["duration"] == 2400.0  # the plan runs 40 minutes
    assert info["cut_short"]["run_time_s"] == pytest.approx(20.0, abs=SHAPE_TICK_S)
    assert 18.0 <= info["ended_at"] - info["started_at"] <= 22.0
    report = (resolve(run_dir) / "report.md").read_text()
    said = CUT_SHORT_AT.search(report)
    assert said is not None, report
    assert float(said["seconds"]) == pytest.approx(info["cut_short"]["run_time_s"], abs=0.05)  # the recorded cut
    assert "The plan was cut short by -t/--run-time" in result.stdout  # the end-of-run summary says so too
