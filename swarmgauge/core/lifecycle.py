"""The end of a run, in order, written once: named steps that the modules doing the work register into.

Locust fires ``quitting`` once, in reverse order of registration; which listener ran first used to follow from which
module was imported first. Here the order is a list. :data:`OPENING` runs at the front of ``quitting`` (added per
Environment at ``init``, after every module's listener and the runner's own: before a worker tells its master it
quit), :data:`CLOSING` at its back (this module's ``quitting`` listener, registered when the first module that has a
step imports it), so a locustfile's own ``quitting`` listeners run in between: with every user stopped and the run
folder still open for their files. A module registers its work with :func:`at_end` under a step's name (any layer
may: this module imports nothing of ours).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from locust import events

from swarmgauge.core import run_context

Handler = Callable[[Any], object]  # what it returns is not used
H = TypeVar("H", bound=Handler)

#: Before anything else at ``quitting``: no request left in flight, every figure in.
OPENING: tuple[str, ...] = (
    "users stopped",  # listeners/signals.py: a master's or local runner's users, stopped and waited for (bounded)
    "final reports in",  # listeners/signals.py: a worker sends its last per-step figures before it says it quit
    "web run closed",  # listeners/webui.py: a STOP's close under way finishes before the rest
)
#: After every other ``quitting`` listener (a locustfile's own included).
CLOSING: tuple[str, ...] = (
    "ledgers reconciled",  # users/kneo_ledger.py: runs sent against kneo's store, kneo.json
    "resources sampled",  # listeners/resources.py: sampling stopped, resources.csv and its verdict
    "tables rewritten",  # listeners/steps.py: steps.csv and timeline.csv from every figure
    "verdicts decided",  # listeners/slo.py: slo.json, JUnit, the exit code
    "run folder closed",  # listeners/rundir.py: Locust's CSVs, the final run.json, the report rendered
    "connections closed",  # users/mark_user.py: the shared Mark connections
    "targets stopped",  # targets/embedded.py: the embedded targets, with nothing left to send them requests
)
END_STEPS: tuple[str, ...] = OPENING + CLOSING


@dataclass
class RunEnd:
    """The handlers of each step, in the order they registered within it."""

    handlers: dict[str, list[Handler]] = field(default_factory=lambda: {step: [] for step in END_STEPS})

    def at_end(self, step: str, handler: Handler) -> Handler:
        if step not in self.handlers:
            raise ValueError(f"no end-of-run step {step!r}; the steps are {', '.join(END_STEPS)}")
        if handler not in self.handlers[step]:
            self.handlers[step].append(handler)
        return handler

    def run(self, environment: Any, steps: tuple[str, ...]) -> list[str]:
        """Run ``steps`` in order for ``environment``; returns the steps that had work. One handler's error is
        logged by the caller's event hook, so it is raised only after every later step ran."""
        ran: list[str] = []
        failure: BaseException | None = None
        for step in steps:
            for handler in self.handlers[step]:
                try:
                    handler(environment)
                except Exception as exc:  # noqa: BLE001 - one step's failure must not skip the run folder's close
                    failure = failure or exc
            if self.handlers[step]:
                ran.append(step)
        if failure is not None:
            raise failure
        return ran


RUN_END = RunEnd()


def at_end(step: str) -> Callable[[H], H]:
    """Decorator: run the function (given the Environment) at ``step`` of every run's end."""

    def register(handler: H) -> H:
        RUN_END.at_end(step, handler)
        return handler

    return register


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
