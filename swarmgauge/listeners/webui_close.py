"""The close of a web UI run (STOP, or the plan's end): the steps of a run's end, in the lifecycle's order, with the
process kept for the next START.

``core/lifecycle.py`` writes the order once; a STOP runs its :data:`~swarmgauge.core.lifecycle.STOP_STEPS` (a quit's
steps less the process's: the embedded targets and the shared connections stay) in a greenlet of its own, so Locust's
STOP answers at once. What a STOP needs beyond a quit's handlers is registered here at its step, for a STOP only: the
master's workers and their last figures waited for (bounded), the verdicts logged and the repeat command recorded
before the folder closes. A quit that comes while a close is under way waits for it at ``web run closed``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

import gevent
from locust.env import Environment
from locust.runners import STATE_STOPPED, MasterRunner

from swarmgauge.core import hooks, lifecycle
from swarmgauge.core.lifecycle import at_end
from swarmgauge.core.run_context import PerEnvironment, RunContext
from swarmgauge.listeners import form_steps, rundir, slo, steps
from swarmgauge.listeners.repeat_command import repeat_command

logger = logging.getLogger("swarmgauge.webui")

CLOSE_WAIT_SECONDS = 30.0
POLL_SECONDS = 0.1


@dataclass
class _Closing(PerEnvironment):
    """Owned by ``listeners/webui_close.py``: the close of the last STOPped run under way, the monotonic time its
    waits end, and whether Locust is quitting."""

    closing: gevent.Greenlet | None = None
    deadline: float = 0.0
    quitting: bool = False


def begin_close(environment: Environment) -> None:
    """At ``test_stop`` of a web run: the close, in a greenlet (none once Locust quits: the quit closes the run)."""
    closing = _Closing.of(environment)
    if closing.quitting:
        return
    note_stop = getattr(environment.shape_class, "note_stop", None)
    if callable(note_stop):
        note_stop()  # a plan STOP ended before its end is marked cut short (its own end or -t mark themselves)
    closing.closing = gevent.spawn(close_ui_run, environment)


def finish_close(environment: Environment) -> None:
    """Wait (bounded) for a close under way: before a START opens the next run, or a quit closes the rest."""
    pending = _Closing.of(environment).closing
    if pending is not None:
        pending.join(timeout=CLOSE_WAIT_SECONDS)


def close_ui_run(environment: Environment) -> Path | None:
    """Close the run the way the end of a headless run does, into its own folder; returns the folder."""
    folder = rundir.run_dir(environment)
    _Closing.of(environment).deadline = time.monotonic() + CLOSE_WAIT_SECONDS
    try:
        lifecycle.close_stopped_run(environment)
    finally:  # a step's error is raised after every later step ran: the folder may be closed all the same
        closed = folder if folder is not None and rundir.run_is_closed(environment) else None
        RunContext.of(environment).closed_run = closed
    if closed is not None:
        logger.info("run closed: %s", closed)
    return closed


@at_end("users stopped", only_at_stop=True)
def wait_for_workers(environment: Environment) -> None:
    """A master's STOP is under way until every worker says it stopped (bounded): their last figures come after."""
    runner = environment.runner
    deadline = _Closing.of(environment).deadline
    if isinstance(runner, MasterRunner):
        while runner.state != STATE_STOPPED and time.monotonic() < deadline:
            gevent.sleep(POLL_SECONDS)
    steps.end_run(environment)


@at_end("final reports in", only_at_stop=True)
def wait_for_final_reports(environment: Environment) -> None:
    """The workers' last per-step figures (locally: the last recordings folded in), within the close's bound. A
    quit's run got them at its plan's end, or from the STOP close it waits for."""
    hooks.collect_final_reports(environment, _Closing.of(environment).deadline - time.monotonic(), POLL_SECONDS)


@at_end("verdicts decided", only_at_stop=True)
def log_verdicts_and_repeat_command(environment: Environment) -> None:
    """The verdicts in the log (no summary follows a STOP), and run.json's repeat command before the folder closes."""
    verdicts = RunContext.of(environment).slo_verdicts
    if verdicts:
        logger.info("SLO verdicts:\n%s", slo.format_verdicts(verdicts))
    record_repeat_command(environment)


def record_repeat_command(environment: Environment) -> None:
    """run.json's ``repeat_command`` (and, for a form-driven run, its plan: the counts as held)."""
    driven = form_steps.form_driven(environment)
    held = form_steps.held_steps(environment) if driven else None
    if driven:
        rundir.add_run_info(environment, "plan", form_steps.held_plan(environment))
    command = repeat_command(environment, held=held, plan_in_effect=not driven)
    rundir.add_run_info(environment, "repeat_command", command)


@at_end("web run closed")
def finish_close_at_quit(environment: Environment) -> None:
    """Right after the users stopped at a quit: a STOP's close under way finishes before the rest, and no other
    starts (the quit's own steps close what is left)."""
    _Closing.of(environment).quitting = True
    finish_close(environment)
