"""SIGTERM, SIGINT and SIGHUP end a run the way the end of its plan does, so nothing measured or written is lost.

Compose and Kubernetes stop containers with SIGTERM. Locust installs its own SIGTERM handler only after
``start_automatic_run()`` returns, which it never does while a shape runs: until then SIGTERM kills the process
with no files, no exit code and the embedded target orphaned. This module installs a handler at ``init`` on the
master or local runner: the first SIGTERM or SIGINT asks a swarmgauge shape to end its plan now (stop the users,
collect every worker's last figures, then let Locust quit, which stops the workers and fires ``quitting``, where
the listeners write their files). A second signal, or a run with no swarmgauge shape, falls back to Locust's own
Ctrl+C path (``KeyboardInterrupt``); before the run has started (a master waiting for its workers) the process exits
with 128 + the signal number, as nothing was measured. The signal that ended the plan is noted in ``run.json``
(``ended_by``) and the plan is marked cut short by it (``cut_short``), so its report, summary and exit code say so
(``listeners.outcome``); nothing else is written here. A signal that comes once the plan has ended (compose sends the
master SIGTERM as soon as its workers quit at the plan's end) ended nothing: it is logged, not noted.

SIGHUP is what a closed terminal or a dropped ssh session sends: Python's default for it ends the process at once,
with nothing written. It ends a run as SIGTERM does, everywhere: on the master or local runner through the handler
above, and on workers and the web UI (which keep Locust's own SIGTERM handler, installed before their main loop:
a worker's shutdown fires ``quitting``, where it first sends its last per-step figures (here) and then tells the
master it is gone) by sending the process SIGTERM (:func:`hang_up_as_terminate`).

Once the process's end has begun, Locust's own SIGTERM handler (installed when the plan's run began) would run its
whole shutdown again on a later SIGTERM: compose sends one to the master as soon as its workers exit, while the master
still writes its report. Two ends would write the same files at once and print every table twice, and the second's
``sys.exit`` lands in gevent's hub as a traceback. "One end at a time" (:func:`one_end_at_a_time`) holds the second
end (bounded) while the first finishes and the process exits with the first's code.

The order of a run's end is written in ``core/lifecycle.py``; this module does its first three steps. Locust's
``shutdown()`` fires ``quitting`` before ``runner.quit()``, so on the web UI's SIGTERM, Ctrl+C or a headless run
without a shape the users are still sending requests then: "users stopped" (:func:`stop_users_first`) stops them on
the master or local runner, so every step after it sees a run whose requests are all in, and "final reports in"
(:func:`send_last_figures`) sends a worker's last figures before it tells the master it quit.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from dataclasses import dataclass
from typing import Any

import gevent
from locust import events
from locust.env import Environment
from locust.runners import STATE_CLEANUP, STATE_INIT, STATE_RUNNING, STATE_SPAWNING, STATE_STOPPING, WorkerRunner

from swarmgauge.core import hooks
from swarmgauge.core.lifecycle import at_end
from swarmgauge.core.run_context import PerEnvironment, RunContext

logger = logging.getLogger("swarmgauge.signals")

HANDLED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
#: ``run.json``'s key naming the signal that ended the run (None when the run ended by itself)
ENDED_BY = "ended_by"
STOP_GRACE_SECONDS = 10.0
POLL_SECONDS = 0.1
#: The longest a second end of the process waits for the first one (its files, its exit) before going on as Locust's.
SECOND_END_WAIT_SECONDS = 600.0


class StopOnSignal:
    """The handler: ends the plan on the first signal, falls back to ``KeyboardInterrupt`` on the next."""

    def __init__(self, environment: Environment) -> None:
        self.environment = environment
        self.received: list[int] = []

    def __call__(self, signum: int, _frame: Any) -> None:
        self.received.append(signum)
        name = signal.Signals(signum).name
        shape = getattr(self.environment, "shape_class", None)
        runner = self.environment.runner
        if runner is not None and runner.state == STATE_INIT:
            logger.info("Got %s before the run started: exiting, nothing was measured", name)
            raise SystemExit(128 + signum)  # gevent hands it to the main greenlet; atexit stops embedded targets
        plan_ended = getattr(shape, "plan_ended", None)
        if len(self.received) == 1 and callable(plan_ended) and plan_ended():
            logger.info("Got %s after the plan's end: the run closes as it was (again to quit at once)", name)
            return
        if len(self.received) == 1:
            hooks.add_run_info(self.environment, ENDED_BY, name)
        request_end = getattr(shape, "request_end", None)
        if len(self.received) == 1 and callable(request_end) and runner is not None:
            request_end()  # first: whatever the notes below meet, the plan ends at its next tick
            logger.info("Got %s: ending the plan now (files are written as at its end; again to quit at once)", name)
            note_stop = getattr(shape, "note_stop", None)
            if callable(note_stop):
                note_stop(by=name)  # the steps it will not run are "cut short by SIGTERM", as -t's are
            return
        logger.info("Got %s: stopping at once", name)
        raise KeyboardInterrupt(name)


def install(environment: Environment) -> StopOnSignal | None:
    """Install the handler on a master or local runner (workers keep Locust's); returns it, or None."""
    if isinstance(environment.runner, WorkerRunner):
        return None
    handler = StopOnSignal(environment)
    for signum in HANDLED_SIGNALS:
        signal.signal(signum, handler)
    return handler


def hang_up_as_terminate(environment: Environment) -> None:
    """SIGHUP sends this process SIGTERM, whose handler (Locust's, on a worker or the web UI) ends the run in order;
    the master's or local run's ``run.json`` names SIGHUP."""

    def handler(signum: int, _frame: Any) -> None:
        logger.info("Got SIGHUP: ending as on SIGTERM")
        hooks.add_run_info(environment, ENDED_BY, signal.Signals(signum).name)
        os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGHUP, handler)


def note_web_ui_signals(environment: Environment) -> None:
    """The web UI's run ends on Locust's own SIGTERM handler and Ctrl-C path; this only notes which signal it was, so
    its ``run.json`` and exit line say so as a headless run's do. SIGTERM: a second gevent watcher beside Locust's
    (libev runs every watcher of a signal); SIGINT: noted, then Python's own ``KeyboardInterrupt``."""

    def note_sigterm() -> None:
        if not RunContext.of(environment).run_info.get(ENDED_BY):  # SIGHUP ends through SIGTERM: it stays named
            hooks.add_run_info(environment, ENDED_BY, signal.SIGTERM.name)

    def note_sigint(_signum: int, _frame: Any) -> None:
        hooks.add_run_info(environment, ENDED_BY, signal.SIGINT.name)
        raise KeyboardInterrupt(signal.SIGINT.name)

    gevent.signal_handler(signal.SIGTERM, note_sigterm)
    signal.signal(signal.SIGINT, note_sigint)


@dataclass
class EndBegun(PerEnvironment):
    """The greenlet that runs the process's end of this Environment, None before it began."""

    by: Any = None


def wait_for_the_first_end() -> None:
    """Hold a second end while the first one writes and the process exits (bounded)."""
    gevent.sleep(SECOND_END_WAIT_SECONDS)


@at_end("one end at a time")
def one_end_at_a_time(environment: Environment) -> None:
    """A second end that comes from another greenlet (a SIGTERM's, while the first end writes or exits) waits here:
    the first writes every file once and the process exits with its code before this wait is over. An end fired
    again from the greenlet that ran the first (a test's, in turn) runs as before."""
    begun, current = EndBegun.of(environment), gevent.getcurrent()
    if begun.by is None:
        begun.by = current
    if begun.by is current:
        return
    logger.info(
        "Got a second end while this one writes its files: they are written once, then the process exits "
        "(SIGKILL stops it at once)"
    )
    wait_for_the_first_end()


@at_end("final reports in")
def send_last_figures(environment: Environment) -> None:
    """A worker's last per-step figures, sent before it tells the master it quit (the opening steps run before the
    runner's own ``quitting`` listener)."""
    if isinstance(environment.runner, WorkerRunner):
        from swarmgauge.listeners import steps

        steps.send_last_figures(environment)


@at_end("users stopped")
def stop_users_first(environment: Environment) -> None:
    """Stop the users of a master or local runner that still run, and wait (bounded) for a stop under way.

    Runs first at ``quitting``: every listener after it sees a run whose requests are all in (a request cut mid-way
    is no measurement), and the web UI's STOP path (``test_stop``) closes the run as a STOP does.
    """
    runner = environment.runner
    if runner is None or isinstance(runner, WorkerRunner):
        return
    if runner.state in (STATE_SPAWNING, STATE_RUNNING):
        logger.info("Quitting: stopping the users before the run is closed")
        runner.stop()
    deadline = time.monotonic() + float(environment.stop_timeout or 0) + STOP_GRACE_SECONDS
    while _stopping(runner) and time.monotonic() < deadline:
        gevent.sleep(POLL_SECONDS)


def _stopping(runner: Any) -> bool:
    """A local runner's stop is under way until it reads stopped; a master's until its workers' users are gone."""
    return bool(runner.state == STATE_CLEANUP or (runner.state == STATE_STOPPING and runner.user_count))


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    options = getattr(environment, "parsed_options", None)
    web_ui = options is not None and not getattr(options, "headless", False)
    if isinstance(environment.runner, WorkerRunner) or web_ui:
        hang_up_as_terminate(environment)  # Locust's SIGTERM handler (shutdown, firing quitting) is theirs
        if web_ui and not isinstance(environment.runner, WorkerRunner):
            note_web_ui_signals(environment)
        return
    install(environment)
