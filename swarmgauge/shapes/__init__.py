"""Load shapes: step ramps, soaks, open-model arrival rates, bursts and session churn, from options or a YAML plan.

Import the one shape you want into your locustfile (Locust runs every shape class it finds there)::

    from swarmgauge.shapes import PlanShape          # --plan demarkus-reads (bundled) or a file, or --steps 1,4,16 --step-time 30s

or subclass one with class attributes::

    class Ramp(StepRamp):
        steps = [1, 4, 16, 64]
        step_time = "60s"
        warmup = "5s"

Open-model shapes (``ArrivalRate``, ``Burst``, ``Churn``, a soak with a ``rate``) run any User: each iteration of
each User takes a ticket of the rate, Locust's ``HttpUser``/``FastHttpUser`` included (:mod:`shapes.open_model`).
Options: ``--plan``, ``--steps``, ``--step-time``, ``--warmup``, ``--rate``,
``--duration``, ``--max-users``, ``--drop-after``, ``--shape-kind``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from locust import events
from locust.env import Environment
from locust.runners import WorkerRunner

from swarmgauge.core import hooks
from swarmgauge.core.durations import UNTIL_STOPPED
from swarmgauge.core.options import add_option
from swarmgauge.errors import UsageError, stop_on_usage_error
from swarmgauge.plans.plan import KINDS, Plan, Stage, build_plan, load_plan_file, plan_from_options
from swarmgauge.shapes import open_model  # its step listener runs the ticket scheduler
from swarmgauge.shapes.base import SwarmShape
from swarmgauge.shapes.overrides import LOCUST_OPTIONS_SOURCE
from swarmgauge.shapes.plan_options import PLAN_OPTIONS, check_plan_option_values, given_plan_options

__all__ = [
    "ArrivalRate",
    "Burst",
    "Churn",
    "Plan",
    "PlanShape",
    "Soak",
    "Stage",
    "StepRamp",
    "SwarmShape",
    "build_plan",
    "load_plan_file",
    "plan_from_options",
]

_OPEN_KEYS = ("rate", "duration", "max_users", "drop_after", "warmup", "user_classes", "slos")


class StepRamp(SwarmShape):
    """Closed-model user steps (``1,4,16,64,256``) with a hold per step and an optional warm-up."""

    kind = "step_ramp"
    plan_keys = ("steps", "step_time", "warmup", "user_classes", "slos", "spawn_rate")
    steps: ClassVar[list[int] | None] = None
    step_time: ClassVar[Any] = None
    warmup: ClassVar[Any] = None
    user_classes: ClassVar[list[str] | None] = None
    slos: ClassVar[list[str] | None] = None
    spawn_rate: ClassVar[float | None] = None


class _OpenKnobs:
    """The class attributes of the shapes that may run an open model (``plan_keys`` names which a shape reads)."""

    rate: ClassVar[float | None] = None
    duration: ClassVar[Any] = None
    max_users: ClassVar[int | None] = None
    drop_after: ClassVar[Any] = None
    warmup: ClassVar[Any] = None
    user_classes: ClassVar[list[str] | None] = None
    slos: ClassVar[list[str] | None] = None


class Soak(_OpenKnobs, SwarmShape):
    """A fixed number of users, or a fixed rate, for a long duration (the reference soaks: 30 min, 1 h)."""

    kind = "soak"
    plan_keys = ("users",) + _OPEN_KEYS
    users: ClassVar[int | None] = None


class ArrivalRate(_OpenKnobs, SwarmShape):
    """Open model: iterations per second independent of response times, capped at ``max_users`` concurrent."""

    kind = "arrival_rate"
    plan_keys: ClassVar[tuple[str, ...]] = _OPEN_KEYS + ("rates", "step_time")
    rates: ClassVar[list[float] | None] = None
    step_time: ClassVar[Any] = None


class Burst(ArrivalRate):
    """A rate for a short time (the MDK benchmark: 1,000 action submits/s for 3 s)."""

    kind = "burst"
    plan_keys = _OPEN_KEYS


class Churn(ArrivalRate):
    """An arrival rate of *new sessions* for users that open a fresh session per iteration (5/s for 40 min)."""

    kind = "churn"
    plan_keys = _OPEN_KEYS


class PlanShape(SwarmShape):
    """Whatever ``--plan FILE`` or ``--steps/--rate/...`` says; with neither, Locust's ``-u/-r/-t`` as one step."""

    use_common_options = True

    def fallback_plan(self, options: Any) -> Plan:
        users = int(getattr(options, "num_users", None) or 1)
        run_time = getattr(options, "run_time", None)
        stage = Stage(
            label=f"{users} users",
            duration=float(run_time) if run_time else UNTIL_STOPPED,
            users=users,
            spawn_rate=getattr(options, "spawn_rate", None) or None,
        )
        return Plan(name="options", kind="stages", stages=[stage], source=LOCUST_OPTIONS_SOURCE)


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    def option(flag: str, text: str, **kwargs: Any) -> None:
        add_option(parser, flag, type=str, default=None, include_in_web_ui=True, help=text, **kwargs)

    option("--plan", "Stage plan YAML file (or the name of a bundled one, swarmgauge/plans/)")
    option("--steps", "User steps for a step ramp, e.g. 1,4,16,64")
    option("--step-time", "Hold per step, e.g. 30s or 2m")
    option("--warmup", "Start of each step left out of its statistics, e.g. 5s")
    option("--rate", "Open model: iterations/s, or a list of rates (one step each)")
    option("--duration", "Open model or soak: how long, e.g. 3s or 40m", dest="plan_duration")
    option("--max-users", "Open model: the concurrency cap (users that take tickets)")
    option("--drop-after", "Open model: a ticket not started within this is dropped")
    option("--shape-kind", f"Plan kind for the options: {', '.join(KINDS)}")


def prefer_planned_shape(environment: Environment) -> None:
    """Run a locustfile's own planned shape, not a bare base class it imported to subclass.

    ``from shapes import ArrivalRate`` puts ``ArrivalRate`` itself in the locustfile too, and Locust runs the first
    shape class it finds there; a swarmgauge shape without a plan of its own gives way to one that has a plan.
    """
    chosen = getattr(environment, "shape_class", None)
    if not isinstance(chosen, SwarmShape) or chosen.class_plan_doc():
        return
    for candidate in (getattr(environment, "available_shape_classes", None) or {}).values():
        if isinstance(candidate, SwarmShape) and candidate is not chosen and candidate.class_plan_doc():
            candidate.runner = environment.runner
            environment.shape_class = candidate
            return


def validate_shape(environment: Environment) -> None:
    """Build the plan of the run's swarmgauge shape now; raises UsageError when it or one of its SLOs is bad, when a
    plan option's value is bad, or when plan options were given to a locustfile that has no shape to read them."""
    shape = getattr(environment, "shape_class", None)
    options = getattr(environment, "parsed_options", None)
    check_plan_option_values(options)
    if not isinstance(shape, SwarmShape):
        given = [PLAN_OPTIONS[dest] for dest in given_plan_options(options)]
        if given:
            raise UsageError(
                f"{', '.join(given)} need a swarmgauge shape, and this locustfile has none: use -u/-t, or add "
                "'from swarmgauge.api import PlanShape' to the locustfile"
            )
        return
    shape.runner = environment.runner
    shape.forget_plan()
    for stage, classes in shape.check_stage_classes():  # a class the run lacks fails now, not when its stage starts
        if stage.open_model:
            open_model.check_ticketed(stage.label, classes or environment.user_classes)
    hooks.validate_slos(environment)


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    if isinstance(environment.runner, WorkerRunner):
        return
    prefer_planned_shape(environment)
    stop_on_usage_error(validate_shape, environment)
