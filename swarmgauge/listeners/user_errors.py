"""Exceptions raised by user code (a task, ``on_start``), counted per step and for the run, with their classes.

Locust keeps them in ``runner.exceptions`` and folds them into its "errors" exit code, so a run where half the
iterations raised ``KeyError`` after a successful request read as "requests failed" with 0 failed requests, and an
SLO on failed requests then passed it. Here every ``user_error`` event adds 1 to the per-step counter
``user_errors`` (a ``steps.csv`` column, summed across workers like every step counter, and so an SLO term:
``user_errors<10``, ``user_errors==0@step``) and to a per-class tally (class name, count, first message) that workers
send with their stats reports, so the master can say what was raised. :mod:`listeners.outcome` turns the count into
the exit code: a run whose user code raised fails unless an SLO names ``user_errors``.

An exception that was itself recorded as a failed request and then propagated out of the task (a client's named
error with ``measure(..., reraise=True)``, as the MCP and kneo clients raise on a failed ``initialize``) is that
request's failure, already counted and judged by ``fail_ratio``; it is not counted again here. Recognised by
identity: the last :data:`REMEMBERED_FAILURES` failure exceptions of each process are kept, and the raised
exception or one it was raised from (``__cause__``/``__context__``) matches one of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from locust import events
from locust.env import Environment
from locust.runners import WorkerRunner

from swarmgauge.core import hooks, run_context
from swarmgauge.core.run_context import PerEnvironment
from swarmgauge.listeners import run_redaction, steps
from swarmgauge.listeners.steps_requests import note_failures

COUNTER = "user_errors"
REPORT_KEY = "swarmgauge_user_errors"
MAX_MESSAGE_CHARS = 120
MAX_CLASSES = 100
CLASSES_NAMED = 3
REMEMBERED_FAILURES = 64  # it propagates at once, in the same greenlet; a longer window would keep tracebacks alive
CHAIN_DEPTH = 5

hooks.register_step_counter(COUNTER)


@dataclass
class Raised:
    """One exception class: how often user code raised it and the first message seen."""

    count: int = 0
    message: str = ""


@dataclass
class Tally(PerEnvironment):
    """Per class, on this process (``by_class``) and, on a worker, not yet sent to the master (``unsent``)."""

    by_class: dict[str, Raised] = field(default_factory=dict)
    unsent: dict[str, Raised] = field(default_factory=dict)
    failures: dict[int, BaseException] = field(default_factory=dict)

    def note_failure(self, exception: BaseException) -> None:
        """A request failed with this exception: if it propagates out of the task, it is that failure, not a bug."""
        self.failures[id(exception)] = exception
        if len(self.failures) > REMEMBERED_FAILURES:
            del self.failures[next(iter(self.failures))]

    def was_a_failed_request(self, exception: BaseException) -> bool:
        link: BaseException | None = exception
        for _ in range(CHAIN_DEPTH):
            if link is None:
                return False
            if self.failures.get(id(link)) is link:
                return True
            link = link.__cause__ or link.__context__
        return False

    def add(self, into: dict[str, Raised], name: str, message: str, n: int = 1) -> None:
        if name not in into and len(into) >= MAX_CLASSES:
            name = "other"
        entry = into.setdefault(name, Raised(0, message[:MAX_MESSAGE_CHARS]))
        entry.count += n

    def drain(self) -> list[list[Any]]:
        batch = [[name, raised.count, raised.message] for name, raised in self.unsent.items()]
        self.unsent = {}
        return batch


def tally(environment: Environment) -> Tally:
    return Tally.of(environment)


def record(environment: Environment, exception: BaseException) -> None:
    """Count one exception raised by user code in the current step and in its class's tally (unless it is a failed
    request's own exception, propagated: that one is counted as the failure it is)."""
    counts = tally(environment)
    if counts.was_a_failed_request(exception):
        return
    steps.count(environment, COUNTER)
    name, message = type(exception).__name__, str(exception)
    counts.add(counts.unsent if isinstance(environment.runner, WorkerRunner) else counts.by_class, name, message)


def total(environment: Environment, step: int | None = None) -> int:
    """User-code exceptions merged so far on the master (or a local run), for one step or the whole run."""
    return steps.merged(environment).counter(step, COUNTER)


def by_class(environment: Environment) -> list[dict[str, Any]]:
    """The classes raised, most frequent first, messages redacted like every file of the run."""
    ranked = sorted(tally(environment).by_class.items(), key=lambda item: (-item[1].count, item[0]))
    return [
        {"class": name, "count": raised.count, "message": run_redaction.redact(raised.message, environment)}
        for name, raised in ranked
    ]


def describe(count: int, classes: list[dict[str, Any]]) -> str:
    """``user code raised 37 exceptions (KeyError: 'x' (30), ValueError: bad (7))``: the count and what was raised."""
    named = [
        f"{c['class']}: {c['message']} ({c['count']})" if c["message"] else f"{c['class']} ({c['count']})"
        for c in classes[:CLASSES_NAMED]
    ]
    if len(classes) > CLASSES_NAMED:
        named.append(f"{len(classes) - CLASSES_NAMED} more classes")
    plural = "exception" if count == 1 else "exceptions"
    return f"user code raised {count} {plural}" + (f" ({', '.join(named)})" if named else "")


def summary(environment: Environment) -> dict[str, Any]:
    """What ``slo.json`` and ``run.json`` record: the run's total, per step, and the classes."""
    merged = steps.merged(environment)
    per_step = {step: merged.counter(step, COUNTER) for step in merged.steps()}
    return {
        "total": total(environment),
        "by_step": {str(step): n for step, n in sorted(per_step.items()) if n},
        "by_class": by_class(environment),
    }


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    run_context.listen(environment, environment.events.report_to_master, _on_report_to_master)
    run_context.listen(environment, environment.events.worker_report, _on_worker_report)
    environment.events.user_error.add_listener(
        lambda user_instance, exception, tb, **_kw: record(environment, exception)
    )
    note_failures(environment, lambda exception: tally(environment).note_failure(exception))


@events.test_start.add_listener
def _on_test_start(environment: Environment, **_kwargs: Any) -> None:
    Tally.renew(environment)  # a web UI's next START counts afresh, as steps does


def _on_report_to_master(environment: Environment, data: dict[str, Any], **_kwargs: Any) -> None:
    batch = tally(environment).drain()
    if batch:
        data[REPORT_KEY] = batch


def _on_worker_report(environment: Environment, data: dict[str, Any], **_kwargs: Any) -> None:
    counts = tally(environment)
    for name, n, message in data.get(REPORT_KEY, []):
        counts.add(counts.by_class, str(name), str(message), int(n))
