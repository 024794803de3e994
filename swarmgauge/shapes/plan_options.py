"""The plan options (``--plan``, ``--steps``, ``--rate``, ...): every value checked, and none silently left unread.

A value is checked on its own whether or not this run's shape reads it (``--steps 1,,2`` is a typo in any run), and
a shape whose class attributes make its plan (the README's ``class Ramp(sg.StepRamp): steps = [1, 2]``) refuses a
plan option instead of running its own plan in silence: only a shape without a plan of its own (``PlanShape``, a
bare ``StepRamp``) takes its plan from the options.
"""

from __future__ import annotations

from typing import Any

from swarmgauge.core.durations import parse_duration
from swarmgauge.errors import UsageError
from swarmgauge.plans.plan import KINDS, MAX_RATE, MAX_USERS, load_plan_file, parse_number, parse_number_list

#: Every plan option by its dest, with its flag.
PLAN_OPTIONS = {
    "plan": "--plan",
    "steps": "--steps",
    "step_time": "--step-time",
    "warmup": "--warmup",
    "rate": "--rate",
    "plan_duration": "--duration",
    "max_users": "--max-users",
    "drop_after": "--drop-after",
    "shape_kind": "--shape-kind",
}
#: The plan key each option sets (``--rate 1,2`` sets ``rates``; ``--plan`` sets the whole plan).
PLAN_KEYS = {
    "steps": ("steps",),
    "step_time": ("step_time",),
    "warmup": ("warmup",),
    "rate": ("rate", "rates"),
    "plan_duration": ("duration",),
    "max_users": ("max_users",),
    "drop_after": ("drop_after",),
    "shape_kind": ("kind",),
}
DURATION_OPTIONS = ("step_time", "warmup", "plan_duration", "drop_after")


def given_plan_options(options: Any) -> dict[str, Any]:
    """The plan options this run was given (command line, environment, config file or web form), by dest."""
    given = {dest: getattr(options, dest, None) for dest in PLAN_OPTIONS} if options is not None else {}
    return {dest: value for dest, value in given.items() if value not in (None, "")}


def check_plan_option_values(options: Any) -> None:
    """Each given plan option's value on its own, whatever the shape: a bad one raises UsageError naming it."""
    for dest, value in given_plan_options(options).items():
        flag = PLAN_OPTIONS[dest]
        if dest == "plan":
            load_plan_file(value)
        elif dest == "steps":
            parse_number_list(value, flag, integer=True, limit=MAX_USERS)
        elif dest == "rate":
            parse_number_list(str(value), flag, limit=MAX_RATE)
        elif dest == "max_users":
            parse_number(value, flag, integer=True, positive=True)
        elif dest == "shape_kind" and str(value).strip() not in KINDS:
            raise UsageError(f"{flag}: unknown shape {value!r}; choose one of {', '.join(KINDS)}")
        elif dest in DURATION_OPTIONS:
            parse_duration(value, flag)


def _shown(value: Any) -> str:
    return f"[{', '.join(str(v) for v in value)}]" if isinstance(value, (list, tuple)) else str(value)


def refuse_plan_options(shape_name: str, class_plan: dict[str, Any], options: Any) -> None:
    """A shape with a plan of its own cannot apply plan options: raise UsageError naming them and what to do."""
    given = list(given_plan_options(options))
    if not given:
        return
    flags = ", ".join(PLAN_OPTIONS[dest] for dest in given)
    set_here = [key for dest in given for key in PLAN_KEYS.get(dest, ()) if key in class_plan]
    if len(given) == 1 and set_here:
        own = f"its own {set_here[0]} {_shown(class_plan[set_here[0]])}"
    else:
        keys = [key for key in class_plan if key not in ("kind", "name")]
        own = f"its own plan ({', '.join(f'{key} {_shown(class_plan[key])}' for key in keys)})"
    if len(given) == 1 and not set_here and given[0] in PLAN_KEYS:
        fix = f"remove {flags}, set {PLAN_KEYS[given[0]][0]} on {shape_name}, or use PlanShape (plans from options)"
    else:
        fix = f"remove {flags if len(given) == 1 else 'them'} or use PlanShape, which takes its plan from the options"
    raise UsageError(f"{flags} cannot apply: this locustfile's shape {shape_name} sets {own}; {fix}")


def refuse_beside_plan_file(options: Any) -> None:
    """``--plan FILE`` makes the whole plan, so another plan option beside it would be ignored: refuse it instead."""
    given = given_plan_options(options)
    others = [PLAN_OPTIONS[dest] for dest in given if dest != "plan"]
    if "plan" in given and others:
        flags = ", ".join(others)
        raise UsageError(
            f"{flags} cannot apply beside --plan {given['plan']}: the plan file sets every stage; remove {flags}, "
            "or remove --plan to build the plan from the options"
        )
