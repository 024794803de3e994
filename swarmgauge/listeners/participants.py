"""Who took part in a run: the most workers connected at once, and the User classes that spawned users.

``run.json`` is finished at ``quitting``, when a master's workers have already quit and every user has stopped, so
reading the runner then says "0 workers" and gives no hint which classes ran. Both are sampled while the run goes
instead: at its start, at each worker report (every 3 s), when a spawn completes, when a worker connects and when
the run is stopped, the last before Locust stops the users. :mod:`listeners.rundir` opens the tally at each run's
start and reads it into ``run.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from locust import events
from locust.env import Environment
from locust.runners import MasterRunner, WorkerRunner

from swarmgauge.core.run_context import PerEnvironment


@dataclass
class Tally(PerEnvironment):
    """One run's participants; ``open`` from its start, so the idle reports before it do not count."""

    open: bool = False
    peak_workers: int = 0
    ran: set[str] = field(default_factory=set)


def _tally(environment: Environment) -> Tally:
    return Tally.of(environment)


def _running_classes(runner: Any) -> dict[str, int]:
    """Users per class now: a master adds up its workers' reports, a local runner counts its own users."""
    counts = runner.reported_user_classes_count if isinstance(runner, MasterRunner) else runner.user_classes_count
    return dict(counts)


def begin(environment: Environment) -> None:
    """A run starts: the tally of the previous one (a web UI's last START) is dropped."""
    tally = _tally(environment)
    tally.open, tally.peak_workers, tally.ran = True, 0, set()
    note(environment)


def note(environment: Environment) -> None:
    """Sample the runner now; a no-op before the run's start."""
    tally, runner = _tally(environment), environment.runner
    if not tally.open or runner is None or isinstance(runner, WorkerRunner):
        return
    if isinstance(runner, MasterRunner):
        tally.peak_workers = max(tally.peak_workers, runner.worker_count)
    tally.ran.update(name for name, count in _running_classes(runner).items() if count > 0)


def peak_workers(environment: Environment) -> int:
    """The most workers connected at once during the run (a worker lost mid-run included)."""
    note(environment)
    return _tally(environment).peak_workers


def classes_that_ran(environment: Environment) -> list[str]:
    """The User classes that had at least one user running at some sample, sorted."""
    note(environment)
    return sorted(_tally(environment).ran)


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    if isinstance(environment.runner, WorkerRunner):
        return
    environment.events.spawning_complete.add_listener(lambda **_: note(environment))
    environment.events.test_stopping.add_listener(lambda **_: note(environment))
    if isinstance(environment.runner, MasterRunner):
        environment.events.worker_report.add_listener(lambda **_: note(environment))
        environment.events.worker_connect.add_listener(lambda **_: note(environment))
