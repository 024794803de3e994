"""Runs the end of a run (``core/lifecycle.py``'s steps) from Locust's ``quitting``, in the order written there.

Imported first of every listener (``listeners/all.py``): its ``quitting`` listener is the first registered, so (Locust
fires ``quitting`` in reverse) it runs last and holds the closing steps. The opening steps are added per Environment
at ``init``, after every module's listener and the runner's own, so they run first: the users stop and a worker's
last figures go out before anything else, and before a worker tells its master that it quit.
"""

from __future__ import annotations

from typing import Any

from locust import events
from locust.env import Environment

from swarmgauge.core import run_context
from swarmgauge.core.lifecycle import CLOSING, OPENING, RUN_END


def open_the_end(environment: Environment, **_kwargs: Any) -> list[str]:
    """The opening steps (users stopped, final reports in, a web run's close finished); returns those that ran."""
    return RUN_END.run(environment, OPENING)


@events.quitting.add_listener
def close_the_end(environment: Environment, **_kwargs: Any) -> list[str]:
    """The closing steps (tables, verdicts, the run folder, connections and targets); returns those that ran."""
    return RUN_END.run(environment, CLOSING)


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    run_context.listen(environment, environment.events.quitting, open_the_end)
