"""The end of a run, in order, written once: named steps that the modules doing the work register into.

Locust fires ``quitting`` once, in reverse order of registration; which listener ran first used to follow from which
module was imported first. Here the order is a list. :data:`OPENING` runs at the front of ``quitting`` (added per
Environment at ``init``, after every module's listener and the runner's own: before a worker tells its master it
quit), :data:`CLOSING` at its back (this module's ``quitting`` listener, registered when the first module that has a
step imports it), so a locustfile's own ``quitting`` listeners run in between: with every user stopped and the run
folder still open for their files. A module registers its work with :func:`at_end` under a step's name (any layer
may: this module imports nothing of ours).

A run can also end without the process: the web UI's STOP (or its plan's end) closes the run and keeps the process
for the next START. :func:`close_stopped_run` runs :data:`STOP_STEPS` for it: the same steps in the same order, less
:data:`NOT_AT_STOP`, the ones that belong to the process (its shared connections and its targets serve the next
START). A handler given ``only_at_stop=True`` runs at a STOP only, after
its step's other handlers: work a quit gets elsewhere (the web UI waits for a master's workers and their last figures,
which a quit's run got from its plan's end or from the STOP close it waits for at ``web run closed``).

A run killed (SIGKILL, the OOM killer) runs none of these steps: what it keeps is what was written as it went,
``run.json`` from its start and ``steps.csv`` as each step ended (``listeners/step_checkpoints.py``); SIGTERM, SIGINT
and SIGHUP end a run through these steps (``listeners/signals.py``).

Not steps: Locust's ``--csv`` tables rewritten and the end-of-run summary (``listeners/rundir.py``,
``swarmgauge/summary.py``) run at Locust's ``quit``, which fires after ``quitting``, after ``runner.quit()`` (a
master's workers send their last Locust stats while it runs) and after Locust prints its own tables. The rewrite
needs those last stats and the summary must come after those tables, so neither can run inside ``quitting``; and both
are the process's, not a run's (``--csv`` covers every run the process made; a web STOP prints no summary).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from locust import events

from swarmgauge.core import run_context

logger = logging.getLogger("swarmgauge.lifecycle")

#: A step of the end that takes this long is named in the log with its time (INFO; DEBUG below): an end that waits
#: (for users, workers, a target) says where.
SLOW_STEP_SECONDS = 2.0

Handler = Callable[[Any], object]  # what it returns is not used
H = TypeVar("H", bound=Handler)

#: Before anything else at ``quitting``: no request left in flight, every figure in.
OPENING: tuple[str, ...] = (
    "one end at a time",  # listeners/signals.py: a second end of the process (a SIGTERM while this one writes) waits
    "users stopped",  # listeners/signals.py: a master's or local runner's users, stopped and waited for (bounded)
    "final reports in",  # listeners/signals.py: a worker sends its last per-step figures before it says it quit;
    # listeners/handoff.py: the load is over (--handoff: the driver's progress line times the drain from here)
    "web run closed",  # listeners/webui.py: a STOP's close under way finishes before the rest
)
#: After every other ``quitting`` listener (a locustfile's own included).
CLOSING: tuple[str, ...] = (
    "ledgers reconciled",  # users/kneo_ledger.py: runs sent against kneo's store, kneo.json
    "resources sampled",  # listeners/resources.py: sampling stopped, resources.csv and its verdict; then
    # listeners/handoff.py: the measurements are over (--handoff: the driver may start the next run's process)
    "tables rewritten",  # listeners/steps.py: steps.csv and timeline.csv from every figure
    "verdicts decided",  # listeners/slo.py: slo.json, JUnit, the exit code
    "run folder closed",  # listeners/rundir.py: Locust's CSVs, the final run.json, the report rendered
    "connections closed",  # users/mark_user.py: the shared Mark connections
    "targets stopped",  # targets/embedded.py: the embedded targets, with nothing left to send them requests
)
END_STEPS: tuple[str, ...] = OPENING + CLOSING
#: Steps of the process's end only: a web STOP keeps the process, its shared connections and its targets for the next
#: START ("web run closed" is a quit waiting for a STOP's close; a process ends once, a web run at each STOP). Each run reconciles its own kneo ledger.
NOT_AT_STOP: tuple[str, ...] = ("one end at a time", "web run closed", "connections closed", "targets stopped")
#: A run's end that keeps the process (the web UI's STOP): the end's steps in the end's order, less those.
STOP_STEPS: tuple[str, ...] = tuple(step for step in END_STEPS if step not in NOT_AT_STOP)


@dataclass
class RunEnd:
    """The handlers of each step, in the order they registered within it; ``stop_handlers``: those run at a STOP
    only, after the step's others."""

    handlers: dict[str, list[Handler]] = field(default_factory=lambda: {step: [] for step in END_STEPS})
    stop_handlers: dict[str, list[Handler]] = field(default_factory=lambda: {step: [] for step in STOP_STEPS})

    def at_end(self, step: str, handler: Handler, *, only_at_stop: bool = False) -> Handler:
        known = STOP_STEPS if only_at_stop else END_STEPS
        if step not in known:
            raise ValueError(f"no end-of-run step {step!r}; the steps are {', '.join(known)}")
        chosen = (self.stop_handlers if only_at_stop else self.handlers)[step]
        if handler not in chosen:
            chosen.append(handler)
        return handler

    def run(self, environment: Any, steps: tuple[str, ...], *, at_stop: bool = False) -> list[str]:
        """Run ``steps`` in order for ``environment`` (``at_stop``: with the STOP-only handlers); returns the steps
        that had work. One handler's error is logged by the caller's event hook, so it is raised only after every
        later step ran."""
        ran: list[str] = []
        failure: BaseException | None = None
        for step in steps:
            chosen = self.handlers[step] + (self.stop_handlers.get(step, []) if at_stop else [])
            began = time.monotonic()
            for handler in chosen:
                try:
                    handler(environment)
                except Exception as exc:  # noqa: BLE001 - one step's failure must not skip the run folder's close
                    failure = failure or exc
            if chosen:
                ran.append(step)
                took = time.monotonic() - began
                logger.log(logging.INFO if took >= SLOW_STEP_SECONDS else logging.DEBUG, "end: %s (%.1f s)", step, took)
        if failure is not None:
            raise failure
        return ran


RUN_END = RunEnd()


def at_end(step: str, *, only_at_stop: bool = False) -> Callable[[H], H]:
    """Decorator: run the function (given the Environment) at ``step`` of every run's end (``only_at_stop``: of a
    run ended by a STOP only)."""

    def register(handler: H) -> H:
        RUN_END.at_end(step, handler, only_at_stop=only_at_stop)
        return handler

    return register


def close_stopped_run(environment: Any) -> list[str]:
    """A run's end that keeps the process (the web UI's STOP): :data:`STOP_STEPS` in order; returns those that ran."""
    return RUN_END.run(environment, STOP_STEPS, at_stop=True)


def open_the_end(environment: Any, **_kwargs: Any) -> list[str]:
    """The opening steps (users stopped, final reports in, a web run's close finished); returns those that ran."""
    return RUN_END.run(environment, OPENING)


@events.quitting.add_listener
def close_the_end(environment: Any, **_kwargs: Any) -> list[str]:
    """The closing steps (ledgers, resources, tables, verdicts, the run folder, connections, targets)."""
    return RUN_END.run(environment, CLOSING)


@events.init.add_listener
def _on_init(environment: Any, **_kwargs: Any) -> None:
    run_context.listen(environment, environment.events.quitting, open_the_end)
