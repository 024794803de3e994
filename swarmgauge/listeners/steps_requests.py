"""The steps listener's request path (split off ``listeners/steps.py``): what each ``request`` event records, the
step of a run without a shape, and the loops beside the load (the per-second sampler and the stall watch).

A request answered in the step current now is kept as it came and recorded with the others at the stall watch's
next wake (every 50 ms) or before any drain (:func:`record_incoming`): in a loop whose code and objects stay in the
cache, where one request at a time met them cold among Locust's and the client's work (``benchmarks/
overhead_toggle.py``: ~3 µs a request in place against ~1 µs timed in a loop). Failures, warm-up requests and
requests that started before the step current now are recorded at once, in order, by :func:`on_request`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gevent
import psutil
from locust.env import Environment
from locust.runners import MasterRunner, WorkerRunner

from swarmgauge.core import run_context
from swarmgauge.core.hooks import StepInfo
from swarmgauge.core.locust_compat import prune_per_second_counts, thin_history
from swarmgauge.errors import Unfinished
from swarmgauge.listeners import stalls
from swarmgauge.listeners.heap_trim import trim_malloc_heap
from swarmgauge.listeners.step_state import (
    LOCAL_DRAIN_INTERVAL,
    StepState,
    current_step,
    merge_batch,
    state_cache,
    state_of,
    step_at,
)
from swarmgauge.listeners.step_stats import NameStats

logger = logging.getLogger("swarmgauge.steps")

SAMPLE_INTERVAL = 1.0
LOCUST_PRUNE_INTERVAL = 10.0
HEAP_TRIM_INTERVAL = 30.0
MAX_SAMPLER_SECONDS = 30 * 24 * 3600.0
_NO_NAMES: dict[str, NameStats] = {}  # the request path's names of a type its step has not seen: stays empty
MAX_INCOMING = 4096  # answered requests kept before they are recorded at once, if no wake or drain came first


def _implicit_step(environment: Environment) -> None:
    """A run without a swarmgauge shape is one step, labelled ``run``."""
    options = getattr(environment, "parsed_options", None)
    users = getattr(options, "num_users", None) if options is not None else None
    info = StepInfo(index=0, label="run", users=users, rate=None, started_at=time.time())
    state = state_of(environment)
    state.transitions.append((0.0, info))
    state.announced[0] = info
    ensure_sampler(environment)


@dataclass
class _FailureNotes(run_context.PerEnvironment):
    """Who is told of each failed request's exception (:func:`note_failures`); kept apart from the run's state,
    which a new run renews, as a listener of the request hook would be."""

    notes: list[Callable[[BaseException], None]] = field(default_factory=list)


def note_failures(environment: Environment, note: Callable[[BaseException], None]) -> None:
    """Call ``note(exception)`` for every failed request of ``environment``, warm-up ones included: one request
    listener for swarmgauge, not one more per module (each costs Locust's hook a call and a dict per request)."""
    _FailureNotes.of(environment).notes.append(note)


def on_request(
    environment: Environment,
    request_type: str,
    name: str,
    response_time: float | None,
    exception: BaseException | None = None,
    start_time: float | None = None,
    *,
    response_length: int = 0,
    response: Any = None,
    context: Any = None,
    url: str | None = None,
    **_kwargs: Any,
) -> None:
    """One request into its step's figures, at once (Locust's other keywords are named so a call binds them without
    a dict): the requests :func:`record_incoming` does not record itself, and direct calls."""
    state = state_of(environment)
    transitions = state.transitions
    if exception is not None:
        for note in _FailureNotes.of(environment).notes:
            note(exception)
    if not transitions:
        _implicit_step(environment)
    started = start_time if start_time is not None else time.time()
    began, info = transitions[-1]
    if started < began:
        info, began = step_at(environment, started)  # type: ignore[misc]
    if info.warmup and started < began + info.warmup and not isinstance(exception, Unfinished):
        state.recorder.record_warmup(info.index)  # a request still unanswered at its user's stop is no warm-up one
        return
    failed = exception is not None
    recorder = state.recorder
    recorder.entry(info.index, request_type, name).record(response_time, failed)
    if failed and isinstance(exception, Unfinished):
        recorder.note_unfinished(info.index, request_type, name)
    state.stall_watch.note_request(info.index, started, response_time)


def on_request_later(
    environment: Environment,
    request_type: str,
    name: str,
    response_time: float | None,
    exception: BaseException | None = None,
    start_time: float | None = None,
    *,
    response_length: int = 0,
    response: Any = None,
    context: Any = None,
    url: str | None = None,
    **_kwargs: Any,
) -> None:
    """The request hook's listener: an answered request is kept as it came and recorded with the others by
    :func:`record_incoming` at the stall watch's next wake (every 50 ms) or before any drain, in a loop whose code
    and objects stay in the cache, not among a request's own work. A failure records those first, then itself."""
    last, state = state_cache
    if last is None or last() is not environment:
        state = state_of(environment)
    if exception is None and start_time is not None and state.transitions:
        incoming = state.incoming
        incoming.append((request_type, name, response_time, start_time))
        if len(incoming) >= MAX_INCOMING:
            record_incoming(environment)
        return
    record_incoming(environment)
    on_request(environment, request_type, name, response_time, exception, start_time)


def record_incoming(environment: Environment) -> StepState:
    """Record the requests :func:`on_request_later` kept, in the order they came; returns the state."""
    state = state_of(environment)
    incoming = state.incoming
    if not incoming:
        return state
    state.incoming = []
    began, info = state.transitions[-1]  # the step current now: one kept from before it goes the general path
    since, index = max(began, began + info.warmup), info.index
    recorder, watch = state.recorder, state.stall_watch
    ring, last_end = watch.recent.extend, watch.last_end
    for request_type, name, response_time, start_time in incoming:
        try:
            if start_time < since or start_time <= last_end:  # an earlier step, a warm-up, or a stall noted may hit it
                on_request(environment, request_type, name, response_time, None, start_time)
                continue
            names = recorder.newest.get(request_type, _NO_NAMES) if recorder.newest_step == index else _NO_NAMES
            stats = names.get(name) or recorder.newest_entry(index, request_type, name)
            stats.record(response_time, False)
            ring((index, start_time, response_time))  # StallWatch.note_request's ring: no stall so far overlaps it
        except (ArithmeticError, ValueError, TypeError):  # as Locust's hook would have: logged, the others recorded
            logger.exception("steps: request %s %s (%r ms) not recorded", request_type, name, response_time)
    return state


def ensure_sampler(environment: Environment) -> None:
    state = state_of(environment)
    if state.sampler is None or state.sampler.dead:
        state.sampler_stop = False
        state.sampler = gevent.spawn(_sample_loop, environment)
        if not isinstance(environment.runner, MasterRunner):
            gevent.spawn(stalls.watch_loop, lambda: _stall_watch(environment), gevent.sleep)


def _stall_watch(environment: Environment) -> stalls.StallWatch | None:
    """The current run's stall watch, None once its sampling stopped (the watch greenlet then ends)."""
    state = record_incoming(environment)  # before the wake is noted: a stall it reveals finds them in the ring
    return None if state.sampler_stop else state.stall_watch


def _sample_loop(environment: Environment) -> None:
    """Notes this process's CPU per step; on the master also folds its own recordings in every few seconds."""
    process = psutil.Process()
    process.cpu_percent(None)
    is_worker = isinstance(environment.runner, WorkerRunner)
    generates_load = not isinstance(environment.runner, MasterRunner)
    began = time.monotonic()
    last_drain = last_prune = last_trim = began
    while not state_of(environment).sampler_stop and time.monotonic() - began < MAX_SAMPLER_SECONDS:
        gevent.sleep(SAMPLE_INTERVAL)
        state = state_of(environment)
        info = current_step(environment)
        cpu = process.cpu_percent(None)
        if info is not None and generates_load:
            state.recorder.note_cpu(info.index, cpu)
        if not is_worker and time.monotonic() - last_drain >= LOCAL_DRAIN_INTERVAL:
            last_drain = time.monotonic()
            merge_batch(environment, "local", record_incoming(environment).recorder.drain(encoded=False))
        if time.monotonic() - last_prune >= LOCUST_PRUNE_INTERVAL:
            last_prune = time.monotonic()
            bound_locust_stats(environment)
        if time.monotonic() - last_trim >= HEAP_TRIM_INTERVAL:
            last_trim = time.monotonic()
            trim_malloc_heap()


def bound_locust_stats(environment: Environment) -> None:
    """Keeps Locust's own per-second counts and chart rows bounded, so a day-long run stays flat."""
    stats = getattr(environment, "stats", None)
    if stats is not None:
        prune_per_second_counts(stats)
        thin_history(stats)
