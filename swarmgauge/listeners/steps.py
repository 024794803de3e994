"""Exact per-step statistics, merged across workers.

The shape on the master calls :func:`announce` at each stage change; the master applies it and sends it to every
worker (``swarmgauge_step`` message), and each process fires :data:`step_changed`. Every process records each
``request`` event into an HDR histogram per (step, request type, name), keyed by the step that was current on that
process when the request *started* (the event's ``start_time``), so a request in flight across a boundary counts in
the step it started in. Requests that start within a step's warm-up are counted apart and left out of its figures,
except one still unanswered when its user was stopped (``errors.Unfinished``): that is no start-up transient, and is
counted in its step's ``unfinished``.
Workers drain their histograms into ``report_to_master``; the master merges them. When the plan is over the shape
stops the users and calls :func:`request_final_reports`: each worker fires :data:`before_flush`, drains what is left
and sends it back (``swarmgauge_flushed``), so nothing measured is lost to Locust's short wait for final reports.
At the end the master writes ``steps.csv`` (one row per step and name plus an ``Aggregated`` row per step) and
``timeline.csv`` into the run directory. Named per-step counters (:func:`register_step_counter`, :func:`count`) are
summed across workers and become columns of ``steps.csv``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, replace
from functools import partial
from typing import Any

from locust import events
from locust.env import Environment
from locust.runners import MasterRunner, WorkerRunner

from swarmgauge.core import hooks, run_context
from swarmgauge.core.hooks import StepInfo, before_flush, step_changed, step_counter_names
from swarmgauge.core.lifecycle import at_end
from swarmgauge.core.locust_compat import (
    cache_default_args,
    has_message_handler,
    live_worker_ids,
    send_worker_stats_now,
)
from swarmgauge.files import write_atomic
from swarmgauge.listeners import rundir
from swarmgauge.listeners.step_percentiles import COLUMNS as PERCENTILE_COLUMNS
from swarmgauge.listeners.step_percentiles import percentile_rows
from swarmgauge.listeners.step_state import (
    StepState,
    close_bucket,
    current_step,
    fresh_state,
    merge_batch,
    state_of,
    step_at,
    timeline_bucket,
)
from swarmgauge.listeners.step_stats import StepMerge
from swarmgauge.listeners.steps_csv import TIMELINE_COLUMNS, step_rows, timeline_rows, write_rows
from swarmgauge.listeners.steps_requests import ensure_sampler, on_request_later, record_incoming

logger = logging.getLogger("swarmgauge.steps")

MESSAGE_TYPE = "swarmgauge_step"
FLUSH_MESSAGE = "swarmgauge_flush"
FLUSHED_MESSAGE = "swarmgauge_flushed"

register_step_counter = hooks.register_step_counter  # kept here for locustfiles that declare counters


def reset(environment: Environment) -> None:
    """A new run in the same process (the web UI's next START): step clock, recorder and sampler start clean."""
    old = StepState.peek(environment)
    if old is not None and old.sampler is not None:
        old.sampler_stop = True
        old.sampler.kill(block=False)
    fresh_state(environment)


def _apply(environment: Environment, info: StepInfo) -> None:
    state = state_of(environment)
    if info.index == 0 and state.transitions:
        state = fresh_state(environment)
    state.transitions.append((time.time(), info))
    ensure_sampler(environment)
    step_changed.fire(environment=environment, step=info)


def announce(environment: Environment, info: StepInfo) -> None:
    """Called by the shape on the master (or a local run) when a new stage begins."""
    runner = environment.runner
    _apply(environment, info)
    state_of(environment).announced[info.index] = info  # after _apply: step 0 of a new run starts a fresh state
    if isinstance(runner, MasterRunner):
        workers = live_worker_ids(runner)
        for slot, client_id in enumerate(workers):
            share = replace(
                info,
                rate_share=(info.rate / len(workers)) if info.rate is not None else None,
                slot=slot,
                slots=len(workers),
            )
            runner.send_message(MESSAGE_TYPE, asdict(share), client_id=client_id)


def request_final_reports(environment: Environment) -> None:
    """Ask every worker for what it has not reported yet (locally: fire :data:`before_flush` and fold it in)."""
    runner = environment.runner
    state = state_of(environment)
    if isinstance(runner, MasterRunner):
        state.flush_pending = set(live_worker_ids(runner))
        for client_id in sorted(state.flush_pending):
            runner.send_message(FLUSH_MESSAGE, None, client_id=client_id)
        return
    before_flush.fire(environment=environment)
    merge_batch(environment, "local", record_incoming(environment).recorder.drain(encoded=False))


def final_reports_in(environment: Environment) -> bool:
    """True once every worker asked by :func:`request_final_reports` has answered."""
    return not state_of(environment).flush_pending


def _on_flush_message(environment: Environment, msg: Any, **_kwargs: Any) -> None:
    send_last_figures(environment)


def send_last_figures(environment: Environment) -> None:
    """A worker's final figures, when the master asks for them or the worker quits on its own (SIGTERM)."""
    before_flush.fire(environment=environment)
    if isinstance(environment.runner, WorkerRunner):
        send_worker_stats_now(environment.runner)  # Locust's own counts arrive before FLUSHED, so before the quit
    if environment.runner is not None:
        environment.runner.send_message(FLUSHED_MESSAGE, record_incoming(environment).recorder.drain())


def _on_flushed_message(environment: Environment, msg: Any, **_kwargs: Any) -> None:
    state = state_of(environment)
    if msg.data:
        merge_batch(environment, str(msg.node_id), msg.data)
    state.flush_pending.discard(str(msg.node_id))


def end_run(environment: Environment) -> None:
    """The shape calls this when its plan is over, so the last step's duration ends here."""
    state = state_of(environment)
    if state.stopped_at is None:
        state.stopped_at = time.time()


def _on_step_message(environment: Environment, msg: Any, **_kwargs: Any) -> None:
    _apply(environment, StepInfo(**msg.data))


def count(environment: Environment, name: str, n: int = 1, step: int | None = None, at: float | None = None) -> None:
    """Add ``n`` to counter ``name`` of the current step, of ``step``, or of the step current at wall time ``at``.

    Pass ``at`` = the request's ``start_time`` for a counter that belongs to a request (a session it started), so
    the counter lands in the same step as the request when the request straddles a boundary.
    """
    if step is None:
        found = step_at(environment, at) if at is not None else None
        info = found[0] if found else current_step(environment)
        step = info.index if info else 0
    state_of(environment).recorder.count(step, name, n)


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    runner = environment.runner
    if isinstance(runner, WorkerRunner):
        cache_default_args()
    handlers = {MESSAGE_TYPE: _on_step_message}
    if isinstance(runner, WorkerRunner):
        handlers[FLUSH_MESSAGE] = _on_flush_message
    if isinstance(runner, MasterRunner):
        handlers[FLUSHED_MESSAGE] = _on_flushed_message
    for message_type, handler in handlers.items():
        if runner is not None and not has_message_handler(runner, message_type):
            runner.register_message(message_type, handler)
    environment.events.request.add_listener(partial(on_request_later, environment))
    run_context.listen(environment, environment.events.report_to_master, _on_report_to_master)
    run_context.listen(environment, environment.events.worker_report, _on_worker_report)


def _on_report_to_master(environment: Environment, client_id: str, data: dict[str, Any]) -> None:
    state = record_incoming(environment)
    if not state.recorder.empty():
        data["swarmgauge_steps"] = state.recorder.drain()


def _on_worker_report(environment: Environment, client_id: str, data: dict[str, Any]) -> None:
    batch = data.get("swarmgauge_steps")
    if batch:
        merge_batch(environment, str(client_id), batch)


@events.test_stop.add_listener
def _on_test_stop(environment: Environment, **_kwargs: Any) -> None:
    if not isinstance(environment.runner, WorkerRunner):
        end_run(environment)


@at_end("tables rewritten")
def finalize(environment: Environment) -> StepMerge:
    """Fold in the last local recordings and write ``steps.csv``/``timeline.csv`` once; returns the merge."""
    state = state_of(environment)
    if isinstance(environment.runner, WorkerRunner):
        return state.merged
    if not state.finalized:
        state.sampler_stop = True
        merge_batch(environment, "local", record_incoming(environment).recorder.drain(encoded=False))
        close_bucket(state)
        end_run(environment)
        state.finalized = True
        directory = rundir.run_dir(environment)
        if directory is not None:
            rows = step_rows(state.merged, step_infos(environment), state.stopped_at, step_counter_names())
            write_atomic(directory / "steps.csv", write_rows(rows))
            write_atomic(
                directory / "timeline.csv",
                write_rows(timeline_rows(state.timeline, timeline_bucket(environment)), TIMELINE_COLUMNS),
            )
            rundir.add_run_info(environment, "steps", [asdict(i) for i in step_infos(environment)])
            write_atomic(directory / "percentiles.csv", write_rows(percentile_rows(state.merged), PERCENTILE_COLUMNS))
    return state.merged


def step_infos(environment: Environment) -> list[StepInfo]:
    """The steps announced in this run, in order (on the master or a local run)."""
    state = state_of(environment)
    return [state.announced[i] for i in sorted(state.announced)]


def rows_now(environment: Environment) -> list[dict[str, Any]]:
    """``steps.csv`` rows from what the master has merged so far, without writing anything (live views, summary)."""
    state = state_of(environment)
    return step_rows(state.merged, step_infos(environment), state.stopped_at or time.time(), step_counter_names())


def merge_local_now(environment: Environment) -> None:
    """On a local run, fold this process's latest recordings in now, so a live check sees them (a master merges
    what its workers report)."""
    if not isinstance(environment.runner, (MasterRunner, WorkerRunner)):
        merge_batch(environment, "local", record_incoming(environment).recorder.drain(encoded=False))


def merged(environment: Environment) -> StepMerge:
    """The master's merged per-step statistics so far (for SLO checks and the web UI)."""
    return state_of(environment).merged


def stopped_at(environment: Environment) -> float | None:
    return state_of(environment).stopped_at


def finalized(environment: Environment) -> bool:
    """The run's final ``steps.csv`` is written: nothing may write a partial one over it."""
    return state_of(environment).finalized


hooks.count_step.implement(count)
hooks.current_step.implement(current_step)
hooks.announce_step.implement(announce)
hooks.end_run.implement(end_run)
hooks.request_final_reports.implement(request_final_reports)
hooks.final_reports_in.implement(final_reports_in)
