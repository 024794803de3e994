"""The MDK fleet's plans: the benchmark's reads, its action burst, or both, when no ``--plan``/``--rate`` is given.

``locustfiles/mdk_fleet.py`` runs :class:`MDKPlan` (a thin subclass there, so Locust finds it); the questions the
run asks of its plan (does it submit actions, does a step run readers) are answered here too, from the stages'
``user_classes``, which name the locustfile's User classes.
"""

from __future__ import annotations

from typing import Any, ClassVar

from locust import events

from swarmgauge import shapes
from swarmgauge.core import option_kinds
from swarmgauge.core.durations import parse_duration
from swarmgauge.core.options import add_option
from swarmgauge.errors import UsageError
from swarmgauge.plans.plan import Plan, Stage, build_plan

#: The User classes that submit actions: a plan without them is not judged on the action gates.
ACTION_USERS = {"MDKFleetUser", "MDKBurstUser", "MDKOneAtATime"}
READER_USERS = "MDKReader"
BURST = {
    "label": "action burst",
    "rate": 1000,
    "duration": 3,
    "max_users": 200,
    "drop_after": 1,
    "user_classes": ["MDKBurstUser"],
}
# One burst user discovers the fleet first, so the burst's tickets do not wait behind a summary read.
DISCOVER = {"label": "discover", "users": 1, "duration": 2, "user_classes": ["MDKBurstUser"]}


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    add_option(
        parser,
        "--mdk-scenario",
        choices=("benchmark", "reads", "burst"),
        default="benchmark",
        include_in_web_ui=True,
        help="plan when no --plan/--rate is given: reads, burst, or benchmark (reads then burst)",
    )
    add_option(
        parser,
        "--mdk-readers",
        kind=option_kinds.POSITIVE_COUNT,
        type=int,
        default=50,
        include_in_web_ui=True,
        help="closed-loop readers of the reads stage (default 50)",
    )
    add_option(
        parser,
        "--mdk-burst-users",
        kind=option_kinds.POSITIVE_COUNT,
        type=int,
        default=200,
        include_in_web_ui=True,
        help="submits the burst may have in flight (the page's harness: "
        "1000, it fires 1,000/s whatever the Kernel's pace)",
    )
    add_option(
        parser,
        "--mdk-read-time",
        default="30s",
        include_in_web_ui=True,
        help="hold of the reads stage (default 30s)",
    )


class MDKPlan(shapes.PlanShape):
    """``--plan``/``--rate`` when given; otherwise the ``--mdk-scenario`` plan."""

    abstract: ClassVar[bool] = True

    def fallback_plan(self, options: Any) -> Plan:
        scenario = getattr(options, "mdk_scenario", "benchmark")
        hold = parse_duration(getattr(options, "mdk_read_time", "30s"), "--mdk-read-time")
        readers = int(getattr(options, "mdk_readers", 50))
        if readers < 1:
            raise UsageError(f"--mdk-readers must be at least 1, got {readers}")
        reads = {"label": f"{readers} readers", "users": readers, "duration": hold, "user_classes": [READER_USERS]}
        # Locust keeps users when only the class changes at the same count: a second at 0 users swaps them.
        burst_users = int(getattr(options, "mdk_burst_users", 200))
        if burst_users < 1:
            raise UsageError(f"--mdk-burst-users must be at least 1, got {burst_users}")
        burst = {**BURST, "max_users": burst_users}
        stages = {
            "reads": [reads],
            "burst": [DISCOVER, burst],
            "benchmark": [reads, {"label": "switch", "users": 0, "duration": 1}, DISCOVER, burst],
        }[scenario]
        return build_plan({"name": f"mdk-{scenario}", "kind": "stages", "stages": stages}, source="mdk_fleet.py")


def plan_stages(environment: Any) -> tuple[Stage, ...]:
    """The stages of the run's swarmgauge shape (none for a run without one)."""
    shape = environment.shape_class
    return tuple(shape.plan().stages) if shape is not None and hasattr(shape, "plan") else ()


def plan_submits_actions(environment: Any) -> bool:
    """Whether any stage may run a user that submits actions: a reads-only plan is not judged on actions it never
    sent (a gate over no data fails the run)."""
    try:
        stages = plan_stages(environment)
    except UsageError:
        return True  # a bad plan is the shape's own start-up error to report
    return not stages or any(s.user_classes is None or set(s.user_classes) & ACTION_USERS for s in stages)


def step_runs_readers(environment: Any, index: int) -> bool:
    """Whether the plan's stage ``index`` spawns readers (a burst has none: the drill's own read arms it at once)."""
    stages = plan_stages(environment)
    classes = stages[index].user_classes if index < len(stages) else None
    return classes is None or READER_USERS in classes
