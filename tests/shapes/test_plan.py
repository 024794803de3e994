import pytest

from shapes.open_model import arrival_time, arrivals_by
from shapes.plan import build_plan, load_plan_file, parse_duration
from swarmgauge.errors import UsageError


def test_step_ramp_expands_to_one_stage_per_step():
    plan = build_plan({"kind": "step_ramp", "steps": [1, 4, 16], "step_time": "30s", "warmup": "2s"})
    assert [s.users for s in plan.stages] == [1, 4, 16]
    assert all(s.duration == 30 and s.warmup == 2 for s in plan.stages)


@pytest.mark.parametrize("doc, words", [
    ({"kind": "zigzag"}, "unknown shape"),
    ({"kind": "arrival_rate", "rate": -5, "duration": "3s"}, "negative"),
    ({"kind": "step_ramp", "steps": [4, 1], "step_time": 5}, "strictly increasing"),
    ({"kind": "step_ramp", "steps": [1, 2], "step_time": 5, "colour": 1}, "unknown key"),
])
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
