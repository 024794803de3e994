"""shapes/mdk_plan.py: the MDK scenarios' plans, and what the run asks of its plan (actions? readers in a step?)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from swarmgauge.errors import UsageError
from swarmgauge.plans.plan import build_plan
from swarmgauge.shapes import mdk_plan


class FleetPlan(mdk_plan.MDKPlan):
    """The plan as a locustfile runs it (the library class is abstract)."""


def _options(**given):
    return SimpleNamespace(
        **{"mdk_scenario": "benchmark", "mdk_read_time": "30s", "mdk_readers": 50, "mdk_burst_users": 200, **given}
    )


def _environment(stages):
    plan = build_plan({"name": "p", "kind": "stages", "stages": stages}, source="test")
    return SimpleNamespace(shape_class=SimpleNamespace(plan=lambda: plan))


def test_the_benchmark_reads_then_swaps_the_readers_for_the_burst():
    plan = FleetPlan().fallback_plan(_options(mdk_readers=7, mdk_burst_users=30))
    assert [s.label for s in plan.stages] == ["7 readers", "switch", "discover", "action burst"]
    assert plan.stages[0].user_classes == ("MDKReader",) and plan.stages[0].duration == 30
    assert plan.stages[1].users == 0
    assert plan.stages[3].rate == 1000 and plan.stages[3].max_users == 30
    assert plan.stages[3].user_classes == ("MDKBurstUser",)


@pytest.mark.parametrize(("scenario", "labels"), [("reads", ["50 readers"]), ("burst", ["discover", "action burst"])])
def test_each_scenario_is_its_own_part_of_the_benchmark(scenario, labels):
    plan = FleetPlan().fallback_plan(_options(mdk_scenario=scenario))
    assert plan.name == f"mdk-{scenario}" and [s.label for s in plan.stages] == labels


@pytest.mark.parametrize(
    ("option", "flag"), [("mdk_readers", "--mdk-readers"), ("mdk_burst_users", "--mdk-burst-users")]
)
def test_no_readers_or_no_burst_users_is_a_usage_error(option, flag):
    with pytest.raises(UsageError, match=flag):
        FleetPlan().fallback_plan(_options(**{option: 0}))


def test_a_reads_only_plan_submits_no_actions_and_a_plan_naming_no_classes_may():
    reads = _environment([{"users": 5, "duration": 10, "user_classes": ["MDKReader"]}])
    assert not mdk_plan.plan_submits_actions(reads)
    anyone = _environment([{"users": 5, "duration": 10}])
    assert mdk_plan.plan_submits_actions(anyone)
    assert mdk_plan.plan_submits_actions(SimpleNamespace(shape_class=None))


def test_a_bad_plan_is_judged_on_actions_and_left_to_the_shape_to_report():
    def bad_plan():
        raise UsageError("bad plan")

    assert mdk_plan.plan_submits_actions(SimpleNamespace(shape_class=SimpleNamespace(plan=bad_plan)))


def test_a_step_runs_readers_when_it_names_them_or_names_no_class():
    environment = _environment(
        [
            {"users": 5, "duration": 10, "user_classes": ["MDKReader"]},
            {"users": 1, "duration": 2, "user_classes": ["MDKBurstUser"]},
            {"users": 3, "duration": 2},
        ]
    )
    assert [mdk_plan.step_runs_readers(environment, i) for i in range(4)] == [True, False, True, True]
