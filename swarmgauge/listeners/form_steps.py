"""The web form drives the users when no plan is in effect: EDIT moves them, and each user count held is a step.

Locust refuses every EDIT while a shape is installed ("There is an ongoing shape test running. Editing is
disabled"), and swarmgauge's ``PlanShape`` is installed in every run: without a plan option it runs ``-u/-r/-t`` as
one stage. So at each START the installed shape is asked whether a plan is in effect (:func:`take_control`). If not,
it steps aside for that run (``environment.shape_class`` is None), Locust's own ``/swarm`` handler starts and edits
the users as in plain Locust, and each count the form sets becomes a step of its own, "6 users (set at 00:41)", whose
ramp from the previous count is left out as warm-up (requests started during it count apart; the first count has
no previous one, so its start-up counts, as the first step of a plan does). With a plan in effect the plan drives the
users: the EDIT dialog says so above its fields, and how to take over (:func:`edit_notice`), and an EDIT is refused
with that same line (:func:`refuse_edit`), since Locust's dialog closes on UPDATE whatever the answer. An EDIT whose
Custom parameters empty Steps, Plan and Rate stops the plan where it is, marked cut short by EDIT, and the form drives
from there (:func:`take_over`).

Headless runs are untouched: there ``-u/-r/-t`` stays the shape's one-stage plan.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from locust.env import Environment

from swarmgauge.core import locust_compat
from swarmgauge.core.hooks import StepInfo
from swarmgauge.core.run_context import PerEnvironment
from swarmgauge.listeners import steps

logger = logging.getLogger("swarmgauge.webui")

#: The EDIT dialog's fields that make a plan (the shapes' ``PLAN_MAKERS``): emptied, the form takes the users over.
TAKE_OVER_FIELDS = ("steps", "plan", "rate")


@dataclass
class FormState(PerEnvironment):
    """Owned by ``listeners/form_steps.py``: who sets the users of the web UI's run, the form or the shape."""

    #: the shape the locustfile installed (a form-driven run sets ``environment.shape_class`` to None)
    installed_shape: Any = None
    installed_shape_known: bool = False
    #: True while the form (START, EDIT) sets the users of this run
    driven: bool = False
    #: True once a START came from the form (not ``--autostart``)
    started: bool = False
    #: the plan the form took the users over from, for run.json's plan name
    taken_over: str | None = None


def _plan_in_effect(shape: Any) -> bool:
    """A shape without ``plan_in_effect`` (a plain LoadTestShape) always drives the users."""
    decide = getattr(shape, "plan_in_effect", None)
    return bool(decide()) if callable(decide) else True


def installed_shape(environment: Environment) -> Any:
    """The shape the locustfile installed (kept here: a form-driven run sets ``environment.shape_class`` to None)."""
    form = FormState.of(environment)
    if not form.installed_shape_known:
        form.installed_shape = getattr(environment, "shape_class", None)
        form.installed_shape_known = True
    return form.installed_shape


def restore_shape(environment: Environment) -> None:
    """Before a START rebuilds the plan: the locustfile's shape back in place, whatever the last run did."""
    environment.shape_class = installed_shape(environment)
    form = FormState.of(environment)
    form.driven, form.taken_over = False, None


def form_driven(environment: Environment) -> bool:
    """True while the form (START, EDIT) sets the users of this run."""
    return FormState.of(environment).driven


def take_control(environment: Environment) -> bool:
    """After the plan of a START is built: with no plan in effect the shape steps aside and the form drives."""
    FormState.of(environment).started = True
    shape = installed_shape(environment)
    if shape is not None and _plan_in_effect(shape):
        return False
    environment.shape_class = None
    FormState.of(environment).driven = True
    return True


def clock(seconds: float) -> str:
    """00:41, or 1:02:05 past an hour: the time into the run a count was set."""
    whole = int(max(0.0, seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def _read(form: Any, field: str, read: Any) -> Any:
    try:
        return read((form.get(field) or "").strip())
    except ValueError:
        return None


def announce_form_step(environment: Environment, form: Any) -> StepInfo | None:
    """The count the form sets, as a new step (not when it is the count already held, or a value Locust refuses)."""
    users, spawn_rate = _read(form, "user_count", int), _read(form, "spawn_rate", float)
    if users is None or users < 0 or spawn_rate is None or spawn_rate <= 0:
        return None
    held = steps.step_infos(environment)
    previous = held[-1] if held else None
    if previous is not None and previous.users == users:
        return None
    prior = (previous.users or 0) if previous is not None else 0
    now = time.time()
    began = held[0].started_at if held else now
    info = StepInfo(
        index=previous.index + 1 if previous is not None else 0,
        label=f"{users} users (set at {clock(now - began)})",
        users=users,
        rate=None,
        started_at=now,
        warmup=abs(users - prior) / spawn_rate if previous is not None else 0.0,
    )
    steps.announce(environment, info)
    logger.info("step %d: %s, the ramp's %.1f s kept out as warm-up", info.index, info.label, info.warmup)
    return info


def _where_in_plan(shape: Any, stages: list[dict[str, Any]]) -> str:
    """Where the plan is ("stage 2 of 3, 00:41 of 02:00"), from its summary and the shape's clock."""
    run_time = shape.get_run_time() if callable(getattr(shape, "get_run_time", None)) else 0.0
    durations = [float(s.get("duration") or 0) for s in stages]
    planned = sum(durations)
    elapsed, stage = 0.0, len(stages)
    for index, duration in enumerate(durations, start=1):
        elapsed += duration
        if run_time < elapsed:
            stage = index
            break
    where = f"{clock(run_time)} of {clock(planned)}" if planned else clock(run_time)
    return f"stage {stage} of {len(stages)}, {where}" if stages else where


def take_over_offered(environment: Environment) -> bool:
    """Can an EDIT that empties :data:`TAKE_OVER_FIELDS` take this run's plan over? Not an --autostart run's, nor
    a plan a shape class sets (emptying its options leaves it in effect)."""
    shape = getattr(environment, "shape_class", None)
    return (
        shape is not None
        and FormState.of(environment).started
        and callable(getattr(shape, "plan_in_effect_for", None))
        and not getattr(shape, "class_plan_doc", dict)()
    )


def edit_notice(environment: Environment) -> str | None:
    """What the EDIT dialog says while a plan drives the users, and what an EDIT refused says (one text for both);
    None when the form drives them (no plan in effect, or it was taken over)."""
    if form_driven(environment):
        return None
    shape = getattr(environment, "shape_class", None)
    if shape is None:
        return None
    if not FormState.of(environment).started:
        return (
            "This run was started by --autostart, and Locust ends it when its shape stops, so its shape keeps the "
            "users: UPDATE cannot change them. Start from the form (no --autostart) to set them by EDIT."
        )
    summary = getattr(shape, "plan_summary", lambda: None)() or {}
    stages = summary.get("stages") or []
    name = summary.get("name", type(shape).__name__)
    take_over_how = (
        "To stop the plan here and set the users yourself, empty Steps, Plan and Rate under Custom parameters, "
        "then UPDATE: each count you set from then on is a step of its own."
        if take_over_offered(environment)
        else "The locustfile's shape sets this plan: STOP, then START with a locustfile or options that set no plan."
    )
    return (
        f"The plan {name!r} drives the users ({_where_in_plan(shape, stages)}): UPDATE cannot change them. "
        f"{take_over_how}"
    )


def refuse_edit(environment: Environment, form: Any) -> str | None:
    """Why an EDIT cannot move the users of this run (a plan drives them, and the dialog did not empty its Steps,
    Plan and Rate), or None when it can: the dialog's notice (:func:`edit_notice`), as one log line."""
    notice = edit_notice(environment)
    if notice is None:
        return None
    shape = environment.shape_class
    still_planned = getattr(shape, "plan_in_effect_for", None)
    if FormState.of(environment).started and callable(still_planned) and not still_planned(form):
        return None
    return f"swarmgauge: {notice}"


def take_over(environment: Environment) -> bool:
    """An EDIT that :func:`refuse_edit` let through while a plan ran: the plan stops where it is (marked cut short by
    EDIT), its users stay, and the form drives them from here. False when the form already drove them."""
    shape = getattr(environment, "shape_class", None)
    if form_driven(environment) or shape is None:
        return False
    if _plan_in_effect(shape):  # a fallback -u/-r/-t shape is only ever installed here by --autostart: refused
        name = (getattr(shape, "plan_summary", lambda: None)() or {}).get("name", type(shape).__name__)
        at = clock(shape.get_run_time())
        shape.hand_over(by="EDIT")
        FormState.of(environment).taken_over = f"plan {name!r} until {at}, then set in the web form"
        logger.warning("swarmgauge: plan %r stopped at %s by EDIT: the form sets the users from here", name, at)
    locust_compat.stop_shape_worker(environment.runner)
    environment.shape_class = None
    FormState.of(environment).driven = True
    return True


def held_steps(environment: Environment) -> list[tuple[int, float]]:
    """(users, seconds held, ramp included) of each step of a form-driven run, once it ended."""
    infos = steps.step_infos(environment)
    end = steps.stopped_at(environment) or time.time()
    ends = [info.started_at for info in infos[1:]] + [end]
    return [(int(info.users or 0), max(0.0, stop - info.started_at)) for info, stop in zip(infos, ends, strict=True)]


def held_plan(environment: Environment) -> dict[str, Any]:
    """run.json's plan of a form-driven run: the counts as they were held, in the shape of a plan's summary."""
    infos = steps.step_infos(environment)
    stages = [
        {"label": info.label, "users": users, "duration": round(seconds, 1), "warmup": round(info.warmup, 1)}
        for info, (users, seconds) in zip(infos, held_steps(environment), strict=True)
    ]
    name = FormState.of(environment).taken_over or "set in the web form"
    return {"name": name, "kind": "stages", "source": "web form", "slos": [], "stages": stages}
