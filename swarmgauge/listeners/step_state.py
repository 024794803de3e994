"""The per-step state ``listeners/steps.py`` records into, and the fold of recordings into it: split off steps.py."""

from __future__ import annotations

import time
import weakref
from typing import Any

import gevent
from locust.env import Environment
from locust.runners import MasterRunner

from swarmgauge.core.hooks import StepInfo
from swarmgauge.core.run_context import PerEnvironment
from swarmgauge.listeners import stalls
from swarmgauge.listeners.step_stats import NameStats, StepMerge, StepRecorder, TimelinePoint
from swarmgauge.listeners.steps_csv import Timeline

LOCAL_DRAIN_INTERVAL = 1.0
WORKER_REPORT_SECONDS = 3.0  # Locust's WORKER_REPORT_INTERVAL: a master's timeline cannot be finer than this


class StepState(PerEnvironment):
    """Owned by ``listeners/steps.py`` (kept here with the fold into it): everything this process knows about the
    steps of the current run."""

    def __init__(self) -> None:
        self.transitions: list[tuple[float, StepInfo]] = []
        self.recorder = StepRecorder()
        self.merged = StepMerge()
        self.announced: dict[int, StepInfo] = {}
        self.timeline = Timeline()
        self.open_bucket: int | None = None
        self.open_step = 0
        self.open_stats: NameStats | None = None
        self.stopped_at: float | None = None
        self.finalized = False
        self.sampler: gevent.Greenlet | None = None
        self.sampler_stop = False
        self.flush_pending: set[str] = set()
        self.stall_watch = stalls.StallWatch(self.recorder.note_stall)
        #: answered requests the request hook handed over, not yet recorded: (type, name, response time, start)
        self.incoming: list[tuple[str, str, float | None, float]] = []


#: [weak reference to the Environment last asked for, its state]: every request and iteration asks, nearly always
#: for the same Environment; every replacement of the slot clears it
state_cache: list[Any] = [None, None]


def state_of(environment: Environment) -> StepState:
    last, state = state_cache
    if last is not None and last() is environment:
        return state
    state = StepState.of(environment)
    try:
        state_cache[:] = [weakref.ref(environment), state]
    except TypeError:  # a stand-in that takes no weak reference is not cached
        state_cache[:] = [None, None]
    return state


def fresh_state(environment: Environment) -> StepState:
    """A new run's state in place of the old one (and the cache of the last one asked for cleared)."""
    state_cache[:] = [None, None]
    return StepState.renew(environment)


def current_step(environment: Environment) -> StepInfo | None:
    """The step this process is in now, or None before the first announcement."""
    transitions = state_of(environment).transitions
    return transitions[-1][1] if transitions else None


def step_at(environment: Environment, wall_time: float) -> tuple[StepInfo, float] | None:
    """The step that was current on this process at ``wall_time``, with the local time it began."""
    transitions = state_of(environment).transitions
    for began, info in reversed(transitions):
        if wall_time >= began:
            return info, began
    return (transitions[0][1], transitions[0][0]) if transitions else None


def timeline_bucket(environment: Environment) -> float:
    """Seconds per ``timeline.csv`` row: as often as the figures arrive (local drains, or worker reports)."""
    return WORKER_REPORT_SECONDS if isinstance(environment.runner, MasterRunner) else LOCAL_DRAIN_INTERVAL


def merge_batch(environment: Environment, source: str, batch: dict[str, Any]) -> None:
    state = state_of(environment)
    combined = state.merged.add_batch(source, batch)
    if combined.requests:
        bucket = int(time.time() // timeline_bucket(environment))
        if state.open_bucket is not None and bucket != state.open_bucket:
            close_bucket(state)
        if state.open_stats is None:
            state.open_bucket, state.open_stats = bucket, NameStats()
        state.open_stats.add(combined)
        info = current_step(environment)
        state.open_step = info.index if info else 0


def close_bucket(state: StepState) -> None:
    """A finished bucket (buckets follow the wall clock) kept as its figures, its histogram dropped: flat memory."""
    if state.open_bucket is not None and state.open_stats is not None:
        state.timeline.add(state.open_bucket, state.open_step, TimelinePoint.of(state.open_stats))
    state.open_bucket, state.open_stats = None, None
