"""A ``--plan FILE``'s ``feeder:`` key applied to the run's feeder options, and what ``run.json`` says of it.

The master (or a local run) applies it at init, before ``listeners/feeder.py`` reads the options, and again at each
web START (the form may name another plan): what the previous plan filled in is taken back first, so a plan without
a ``feeder:`` runs without the last plan's rows. Workers get the filled-in options with Locust's spawn message, as
they get ``--feeder``. An option given for the run wins over the
plan's value (:func:`swarmgauge.plans.plan_feeder.merge_plan_feeder`): the run logs each one and ``run.json`` lists
them (``feeder.overrides``, beside ``feeder.plan``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from locust.env import Environment
from locust.runners import WorkerRunner

from swarmgauge.core.run_context import PerEnvironment
from swarmgauge.errors import UsageError
from swarmgauge.plans.plan import load_plan_file
from swarmgauge.plans.plan_feeder import FEEDER_OPTIONS, merge_plan_feeder

logger = logging.getLogger("swarmgauge.feeder")


@dataclass
class _PlanFeeder(PerEnvironment):
    """Owned by ``listeners/feeder_plan.py``: the plan file whose ``feeder:`` set options, and what options given
    for the run replaced of it."""

    plan: str = ""
    overrides: list[dict[str, Any]] = field(default_factory=list)
    #: the options the plan filled in, by dest: (the value before, the value the plan set)
    filled: dict[str, tuple[Any, Any]] = field(default_factory=dict)


def _take_back(options: Any, record: _PlanFeeder) -> None:
    """Undo what the last plan filled in, where the option still holds the plan's value (the form did not change
    it: a value typed since is the run's own)."""
    for dest, (before, planned) in record.filled.items():
        if getattr(options, dest, None) == planned:
            setattr(options, dest, before)
    record.plan, record.overrides, record.filled = "", [], {}


def take_plan_feeder(environment: Environment) -> None:
    """At init and each web START on the master or a local run: the ``--plan`` file's ``feeder:`` fills the feeder
    options the run was not given (a missing file is a UsageError naming the plan); each given option that differs
    is logged."""
    options = getattr(environment, "parsed_options", None)
    if options is None or isinstance(environment.runner, WorkerRunner):
        return
    record = _PlanFeeder.of(environment)
    _take_back(options, record)
    plan_file = getattr(options, "plan", None)
    if not plan_file:
        return
    plan = load_plan_file(plan_file)
    if plan.feeder is None:
        return
    if not getattr(options, "feeder", "") and not Path(plan.feeder.file).is_file():
        raise UsageError(
            f"plan {plan.source}: feeder: file {plan.feeder.file}: no such file (a relative file is read from the "
            "plan file's folder)"
        )
    before = {dest: getattr(options, dest, None) for _key, _flag, dest in FEEDER_OPTIONS}
    overrides = merge_plan_feeder(options, plan.feeder, plan.source)
    for override in overrides:
        logger.warning("swarmgauge: %s", override["message"])
    record.plan, record.overrides = plan.source, overrides
    record.filled = {
        dest: (value, getattr(options, dest, None))
        for dest, value in before.items()
        if getattr(options, dest, None) != value
    }


def summary(environment: Environment) -> dict[str, Any]:
    """``run.json``'s ``feeder.plan`` and ``feeder.overrides`` (nothing when no plan set the feeder)."""
    record = _PlanFeeder.of(environment)
    if not record.plan:
        return {}
    info: dict[str, Any] = {"plan": record.plan}
    if record.overrides:
        info["overrides"] = list(record.overrides)
    return info
