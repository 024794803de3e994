"""``--handoff DIR``: a headless run a driver starts while the run before it is still ending (``swarmgauge demo``).

A run's start-up (the interpreter, Locust, its embedded targets: PostgreSQL, kneo-serv, a fleet) and a run's end
(its files, its targets stopped, the summary) each took seconds of every demo workload, one after the other. With
``--handoff DIR`` the process does its start-up, then waits, before any load, until ``DIR/go`` exists; and once its
own measurements are over (the ``resources sampled`` step of its end: its users stopped, a kneo queue drained, the
sampling finished) it writes ``DIR/load-done``, so the driver starts the next run's process then, and lets it go
when this one has exited. No load ever overlaps another run's load or measurements. Two more files mark its
phases for the driver's progress line: ``DIR/ready`` when its start-up is done and it starts waiting, ``DIR/load-end``
once its users are stopped (the drain and the sampling's end follow, then ``load-done``).

The wait is bounded (:data:`MAX_WAIT_S`), and ends the run (exit 2, one line) if the driver that started it is gone.
"""

from __future__ import annotations

import contextlib
import gc
import os
import time
from pathlib import Path
from typing import Any

from locust import events
from locust.env import Environment
from locust.runners import WorkerRunner

from swarmgauge.core.lifecycle import at_end
from swarmgauge.core.options import add_option
from swarmgauge.errors import UsageError, stop_on_usage_error

# imported first, so their handlers register before ours at the same end step whichever module a process imports
# first: load-done follows the sampling's end, load-end the users' stop
from swarmgauge.listeners import resources, signals  # noqa: F401

GO = "go"
READY = "ready"
LOAD_END = "load-end"
LOAD_DONE = "load-done"
#: how long a started run waits for its go: the run before it may hold for minutes
MAX_WAIT_S = 1800.0
POLL_S = 0.02


def handoff_dir(environment: Environment) -> Path | None:
    """The ``--handoff`` directory of a headless master or local run (None otherwise: a worker, the web UI)."""
    options = getattr(environment, "parsed_options", None)
    directory = getattr(options, "handoff", "") or ""
    if not directory or not getattr(options, "headless", False) or isinstance(environment.runner, WorkerRunner):
        return None
    return Path(directory)


def wait_for_go(directory: Path, *, max_wait_s: float = MAX_WAIT_S, poll_s: float = POLL_S) -> None:
    """Return once ``directory/go`` exists (``directory/ready`` says when the wait began); a UsageError when the wait
    runs out or the parent is gone."""
    parent = os.getppid()
    with contextlib.suppress(OSError):  # only a mark for the driver's progress line: no wait depends on it
        (directory / READY).touch()
    deadline = time.monotonic() + max_wait_s
    while not (directory / GO).exists():
        if os.getppid() != parent:
            raise UsageError(f"--handoff {directory}: the driver that started this run is gone; no load sent")
        if time.monotonic() >= deadline:
            raise UsageError(f"--handoff {directory}: no {GO} within {max_wait_s:.0f} s; no load sent")
        time.sleep(poll_s)


def _wait_after_the_locustfile(environment: Environment, **_kwargs: Any) -> None:
    directory = handoff_dir(environment)
    if directory is not None:
        stop_on_usage_error(lambda _env: wait_for_go(directory), environment)


@events.init_command_line_parser.add_listener
def _add_options(parser: Any, **_kwargs: Any) -> None:
    add_option(
        parser,
        "--handoff",
        default="",
        include_in_web_ui=False,
        help="A directory a driver hands runs over in: a headless run starts up, waits for DIR/go before any load, and "
        "writes DIR/load-done once its measurements are over, so the next run starts up while this one ends "
        "(DIR/ready and DIR/load-end mark its start-up's end and its users' stop, for the driver's timing)",
    )
    # registered now, after the locustfile's own init listeners (they start its targets): the wait comes last
    if _wait_after_the_locustfile not in _registered:
        events.init.add_listener(_wait_after_the_locustfile)
        _registered.append(_wait_after_the_locustfile)


_registered: list[Any] = []


@at_end("final reports in")
def say_load_ended(environment: Environment) -> None:
    """After the users stopped (their requests in flight answered): the load is over, its drain and sampling not."""
    directory = handoff_dir(environment)
    if directory is not None:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / LOAD_END).touch()


@at_end("resources sampled")
def say_load_done(environment: Environment) -> None:
    """After the run's last measurement (users stopped, a kneo drain reconciled, the sampling finished).

    Then the objects the run made are frozen out of the cyclic collector (``gc.freeze``): the process only writes
    its files and exits from here, and the interpreter's teardown scanned that whole heap again (about 0.3 to 0.7 s
    of every demo workload's end, which the next workload's go waits for). Nothing is lost: the files are written
    and closed as before, and the process's memory goes back to the system at its exit."""
    directory = handoff_dir(environment)
    if directory is not None:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / LOAD_DONE).touch()
        gc.freeze()
