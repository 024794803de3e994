"""What a plan replaces of what was asked, said in the log and in run.json (``plan.overrides``), or refused.

- **Users and ramp.** A plan sets each step's users and ramps them itself, so ``-u``/``-r`` (the web form's Number
  of users and Ramp up) are not used once a plan applies; the run says so instead of running 64 users for 5 typed.
- **Open-model steps run the Users that take tickets.** A rate step with no ``user_classes`` runs only the selected
  classes that take tickets (:func:`shapes.open_model.takes_tickets`) when the locustfile also has others: those
  would run closed-loop at full speed under a "5/s" label. The plan's ``user_classes`` names them to run them.
- **A User's own rate option.** A class paced by an option of its own outside rate steps (``paced_by_option``, as
  ``MCPChurnUser`` and ``--mcp-churn-rate``) takes the step's rate inside one, so that option given with a plan that
  runs it in a rate step is refused, unless the plan took it as its rate (recorded as an override of the plan).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from swarmgauge.errors import UsageError
from swarmgauge.plans.plan import Plan, Stage
from swarmgauge.shapes.open_model import takes_tickets

logger = logging.getLogger("swarmgauge.shapes")

#: ``Plan.source`` of a plan made of Locust's own ``-u/-r/-t`` (``PlanShape.fallback_plan``): those options apply.
LOCUST_OPTIONS_SOURCE = "locust options"
COMMON_OPTIONS = (
    ("num_users", "-u/--users", "Number of users", "sets each step's users (up to {peak})"),
    ("spawn_rate", "-r/--spawn-rate", "Ramp up", "ramps each step's users itself"),
)


def add_override(plan: Plan, option: str, given: Any, message: str) -> None:
    """Record that ``plan`` replaced ``option``'s ``given`` value (run.json's ``plan.overrides``)."""
    plan.overrides.append({"option": option, "given": given, "message": message})


def unused_common_options(plan: Plan, options: Any) -> None:
    """``-u``/``-r`` (typed in the web form, or given) that a plan's own steps replace; a headless run has no form, so
    its message names the option alone (given on the command line or as ``LOCUST_USERS``/``LOCUST_SPAWN_RATE``)."""
    if plan.source == LOCUST_OPTIONS_SOURCE or options is None:
        return
    peak = max((stage.user_count for stage in plan.stages), default=0)
    headless = bool(getattr(options, "headless", False))
    for dest, flag, field, what in COMMON_OPTIONS:
        value = getattr(options, dest, None)
        if value is not None:
            where = "" if headless else f" (the web form's {field})"
            message = f"{flag} {value:g}{where} is not used: plan {plan.name!r} {what}"
            add_override(plan, flag, value, message.format(peak=peak))


def _known_classes(environment: Any) -> dict[str, type]:
    available = getattr(environment, "available_user_classes", None) or {}
    classes = list(available.values()) or list(getattr(environment, "user_classes", None) or [])
    return {cls.__name__: cls for cls in classes}


def stage_classes(stage: Stage, environment: Any) -> list[type]:
    """The User classes a stage runs: the ones it names, else every class selected for the run."""
    if stage.user_classes:
        known = _known_classes(environment)
        return [known[name] for name in stage.user_classes if name in known]
    return list(getattr(environment, "user_classes", None) or [])


def ticket_users_for_open_stages(plan: Plan, environment: Any) -> None:
    """Rate stages with no ``user_classes`` run only the selected classes that take tickets, when others exist."""
    selected = list(getattr(environment, "user_classes", None) or [])
    takers = [cls.__name__ for cls in selected if takes_tickets(cls)]
    others = [cls.__name__ for cls in selected if not takes_tickets(cls)]
    open_free = [i for i, stage in enumerate(plan.stages) if stage.open_model and not stage.user_classes]
    if not (open_free and takers and others):
        return
    for index in open_free:
        plan.stages[index] = replace(plan.stages[index], user_classes=tuple(takers))
    add_override(
        plan,
        "user_classes",
        others,
        f"plan {plan.name!r}: its rate steps run only the User classes that take tickets ({', '.join(takers)}); "
        f"{', '.join(others)} would run closed-loop under a rate label: name them in the plan's user_classes "
        "to run them",
    )


def refuse_paced_options(plan: Plan, environment: Any, options: Any) -> None:
    """A User's own rate option given with a plan whose rate step runs that User (and did not take the option)."""
    taken = {override["option"] for override in plan.overrides}
    for stage in plan.stages:
        if not stage.open_model:
            continue
        for cls in stage_classes(stage, environment):
            paced = getattr(cls, "paced_by_option", None)
            if not paced:
                continue
            dest, flag = paced
            value = getattr(options, dest, None) if options is not None else None
            if value is None or flag in taken:
                continue
            raise UsageError(
                f"{flag} {value:g} cannot apply: step {stage.label!r} of plan {plan.name!r} runs {cls.__name__} at "
                f"the step's own rate ({stage.rate:g}/s); remove {flag}, or set the rate in the plan (--rate)"
            )


def fit_plan(plan: Plan, environment: Any, options: Any) -> Plan:
    """The plan as this run will run it, every replaced option recorded and logged once; raises UsageError for an
    option that cannot apply."""
    if environment is not None:
        ticket_users_for_open_stages(plan, environment)
        refuse_paced_options(plan, environment, options)
    unused_common_options(plan, options)
    for override in plan.overrides:
        logger.warning("%s", override["message"])
    return plan
