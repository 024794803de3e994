"""Step, counter, SLO, run-info and sampling hooks: Users and shapes call them, listeners implement them.

A User or shape never imports a listener; a listener module, when imported, installs its implementation here
(``count_step.implement(count)``). Without that listener a hook does what a run without it needs: nothing, and
the queries answer "no step", "no run directory", "every final report is in".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from locust.event import EventHook

Result = TypeVar("Result")
#: An SLO term's value: ``provider(environment, step_index_or_None) -> float | None`` in base units.
MetricProvider = Callable[[Any, "int | None"], "float | None"]

step_changed = EventHook()
"""Fired on every process as ``step_changed.fire(environment=env, step=StepInfo)`` at each stage change."""

before_flush = EventHook()
"""Fired on each load-generating process as ``before_flush.fire(environment=env)`` just before its final drain."""


@dataclass(frozen=True)
class StepInfo:
    """One stage of a plan as the master announced it; ``started_at`` is the master's wall clock.

    ``slot`` of ``slots`` says which share of an open-model step's arrivals this process issues (every
    ``slots``-th ticket, starting at ``slot``), so the workers together issue exactly the plan's count.
    """

    index: int
    label: str
    users: int | None
    rate: float | None
    started_at: float
    duration: float | None = None
    warmup: float = 0.0
    rate_share: float | None = None
    drop_after: float | None = None
    rate_end: float | None = None
    slot: int = 0
    slots: int = 1


class Hook(Generic[Result]):
    """One call a lower layer makes, with one implementation that a listener installs (the last one wins)."""

    def __init__(self, name: str, default: Callable[..., Result]) -> None:
        self.name = name
        self.default = default
        self.implementation: Callable[..., Result] | None = None

    def implement(self, function: Callable[..., Result]) -> Callable[..., Result]:
        """Install ``function`` as what this hook does; returns it, so it works as a decorator."""
        self.implementation = function
        return function

    def __call__(self, *args: Any, **kwargs: Any) -> Result:
        return (self.implementation or self.default)(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Hook({self.name!r}, implemented={self.implementation is not None})"


def _nothing(*_args: Any, **_kwargs: Any) -> None:
    return None


def _all_in(*_args: Any, **_kwargs: Any) -> bool:
    return True


def _unchanged(text: str, *_args: Any, **_kwargs: Any) -> str:
    return text


count_step: Hook[None] = Hook("count_step", _nothing)
"""``count_step(env, name, n=1, step=None, at=None)``: add to a per-step counter (``listeners.steps.count``)."""
current_step: Hook[StepInfo | None] = Hook("current_step", _nothing)
"""``current_step(env)``: the step this process is in now, or None."""
announce_step: Hook[None] = Hook("announce_step", _nothing)
"""``announce_step(env, info)``: the shape begins a stage."""
end_run: Hook[None] = Hook("end_run", _nothing)
"""``end_run(env)``: the shape's plan is over; the last step ends here."""
request_final_reports: Hook[None] = Hook("request_final_reports", _nothing)
"""``request_final_reports(env)``: ask every worker for what it has not reported yet."""
final_reports_in: Hook[bool] = Hook("final_reports_in", _all_in)
"""``final_reports_in(env)``: True once every asked worker answered."""
add_slos: Hook[None] = Hook("add_slos", _nothing)
"""``add_slos(env, exprs)``: a User's own gates, checked alongside ``--slo``."""
validate_slos: Hook[None] = Hook("validate_slos", _nothing)
"""``validate_slos(env)``: raise UsageError for a bad ``--slo`` (a shape checks its plan's SLOs with it)."""
add_run_info: Hook[None] = Hook("add_run_info", _nothing)
"""``add_run_info(env, key, value)``: merge a JSON-able value into ``run.json``."""
run_dir: Hook[Path | None] = Hook("run_dir", _nothing)
"""``run_dir(env)``: the run directory, or None when not asked for (or no run-dir listener)."""
redact: Hook[str] = Hook("redact", _unchanged)
"""``redact(text, env=None)``: hide secrets; only written where :data:`run_dir` gives a folder."""
render_report: Hook[None] = Hook("render_report", _nothing)
"""``render_report(run_dir)``: write the report at the end of a run (``swarmgauge.locust`` installs ``reports``)."""
take_ticket: Hook[bool] = Hook("take_ticket", lambda *_args, **_kwargs: False)
"""``take_ticket(user)``: wait for an open-model ticket while the step is open; False when none comes (no scheduler,
a closed step). With one, the user's next iteration runs on it (``core/intended.py``)."""
tickets_left: Hook[bool] = Hook("tickets_left", lambda *_args, **_kwargs: True)
"""``tickets_left(env)``: this process's open-model step still has tickets to hand out (its issuer not done, or one
queued for a free user). True when nothing says otherwise, so the run's open-model tail is waited out in full."""
add_sample_source: Hook[None] = Hook("add_sample_source", _nothing)
"""``add_sample_source(env, spec)``: sample one more resource source (an embedded target's pid)."""
next_row: Hook[dict[str, Any] | None] = Hook("next_row", _nothing)
"""``next_row(user)``: the next row of ``--feeder`` for this user's iteration, or None when no feeder is given.
Rows ran out with ``--feeder-exhausted stop``: raises Locust's ``StopUser`` and the run ends (``listeners.feeder``)."""

_STEP_COUNTERS: list[str] = ["dropped"]
_METRIC_PROVIDERS: dict[str, MetricProvider] = {}


def register_step_counter(name: str) -> None:
    """Declare a per-step counter so it appears as a ``steps.csv`` column even when it stays zero."""
    if name not in _STEP_COUNTERS:
        _STEP_COUNTERS.append(name)


def step_counter_names() -> list[str]:
    return list(_STEP_COUNTERS)


def register_metric(term: str, provider: MetricProvider) -> None:
    """Add an SLO term: ``provider(environment, step_index_or_None) -> float | None`` in base units."""
    _METRIC_PROVIDERS[term] = provider


def metric_provider(term: str) -> MetricProvider | None:
    return _METRIC_PROVIDERS.get(term)


def metric_terms() -> list[str]:
    return list(_METRIC_PROVIDERS)


def collect_final_reports(environment: Any, seconds: float, poll_s: float = 0.05) -> bool:
    """Ask every worker for its last figures and wait until all are in or ``seconds`` have passed; True when in.
    The one wait behind a plan's end, a STOP, an abort and a feeder's stop."""
    import time

    import gevent

    request_final_reports(environment)
    deadline = time.monotonic() + seconds
    while not final_reports_in(environment) and time.monotonic() < deadline:
        gevent.sleep(poll_s)
    return bool(final_reports_in(environment))


def end_plan(environment: Any) -> bool:
    """End the run the way its plan's own end does: the last step ends now (:data:`end_run`) and the shape's plan at
    its next tick (its ``request_end``): users stop, final reports come in, Locust quits. False, with nothing done,
    when the run has no plan to end (it keeps its own end: ``-t``, a STOP)."""
    request_end = getattr(getattr(environment, "shape_class", None), "request_end", None)
    if not callable(request_end):
        return False
    end_run(environment)
    request_end()
    return True


def stop_locust(environment: Any) -> None:
    """End Locust's run as its own end would: a headless run quits, a web UI run stops and waits for another START."""
    runner = environment.runner
    if runner is None:
        return
    if getattr(environment.parsed_options, "headless", False):
        runner.quit()
    else:
        runner.stop()


ALL_HOOKS = (
    count_step,
    current_step,
    announce_step,
    end_run,
    request_final_reports,
    final_reports_in,
    add_slos,
    validate_slos,
    add_run_info,
    run_dir,
    redact,
    render_report,
    take_ticket,
    tickets_left,
    add_sample_source,
    next_row,
)
