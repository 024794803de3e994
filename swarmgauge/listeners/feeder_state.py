"""One process's feeder state and what ``run.json`` says of it, kept apart from ``feeder.py``, which deals the rows."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

import gevent.event
from locust.env import Environment
from locust.runners import MasterRunner

from swarmgauge.core.feeder_rows import FeederRows, RowDealer
from swarmgauge.core.feeder_settings import FeederSettings
from swarmgauge.core.locust_compat import missing_worker_ids
from swarmgauge.core.run_context import PerEnvironment
from swarmgauge.listeners import feeder_plan


@dataclass
class FeederState:
    """One process's feeder: its rows (if it reads the file), its dealer or buffer, and what it counted."""

    settings: FeederSettings
    rows: FeederRows | None = None
    dealer: RowDealer | None = None
    held: deque = field(default_factory=deque)  # a worker's rows from the master, not yet drawn
    asking: gevent.event.Event | None = None
    out: bool = False
    used: int = 0
    sent: dict[str, int] = field(default_factory=dict)  # master: rows sent per worker
    reported: dict[str, dict[str, int]] = field(default_factory=dict)  # master: each worker's last report
    out_workers: set[str] = field(default_factory=set)
    stopping: bool = False
    stopped: dict[str, Any] = field(default_factory=dict)  # the reason and time the feeder ended the run
    lost_said: bool = False


@dataclass
class Feeder(PerEnvironment):
    """Owned by ``listeners/feeder.py`` (kept here with its record): this Environment's feeder, None while it has
    none."""

    state: FeederState | None = None


def state_of(environment: Environment) -> FeederState | None:
    return Feeder.of(environment).state


def summary(environment: Environment) -> dict[str, Any] | None:
    """What ``run.json`` says of the feeder: file, mode, rows, what was dealt and used, per worker, lost workers."""
    state = state_of(environment)
    if state is None:
        return None
    settings = state.settings
    info: dict[str, Any] = {"file": settings.path, "mode": settings.mode, "exhausted": settings.exhausted}
    if state.rows is not None:
        info["rows"] = len(state.rows)
    if state.dealer is not None and isinstance(environment.runner, MasterRunner) and settings.mode == "unique":
        info["dealt"], info["passes"] = state.dealer.dealt, state.dealer.passes
        workers = sorted(set(state.sent) | set(state.reported))
        info["workers"] = {w: {"sent": state.sent.get(w, 0), **state.reported.get(w, {})} for w in workers}
        lost = {}
        for worker in missing_worker_ids(environment.runner):
            if worker in state.sent:
                used = state.reported.get(worker, {}).get("used", 0)
                lost[worker] = {"sent": state.sent[worker], "used_at_last_report": used, "not_reissued": True}
        if lost:
            info["lost"] = lost
    elif isinstance(environment.runner, MasterRunner):
        info["workers"] = dict(state.reported)
    else:
        info["used"] = state.used
    if state.stopped:
        info["stopped"] = dict(state.stopped)
    info.update(feeder_plan.summary(environment))
    return info
