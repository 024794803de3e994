"""The one place that fires Locust ``request`` events.

Every client in ``users/`` wraps each operation in :func:`measure`; protocol code never touches Locust events.
Latency is taken around the whole operation, in the calling greenlet. An open-model ticket's lag is added to the
event where every request's is, Locust's own clients' too (``core/intended.py``, installed at ``init``), not here:
``measure()`` reports what it measured, and the event is counted from the ticket's intended start once.

A request its user is stopped in (``GreenletExit`` from the run's end, a step's ramp-down or ``--stop-timeout``
running out) is recorded here once, as an :class:`~swarmgauge.errors.Unfinished` failure timed up to the stop, in the
stopped greenlet itself: Locust kills users with ``block=True``, so the event is in before a worker's last report
and before the master computes its steps and gates. Nothing is added to a request that finishes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from locust import events as locust_events
from locust.env import Environment

from swarmgauge.core import intended
from swarmgauge.core.intended import set_intended_start
from swarmgauge.core.locust_compat import (
    default_stop_timeout,
    mark_stop_timeout_unset,
    stop_waiting_users_between_tasks,
)
from swarmgauge.core.locust_memory import queue_tasks_in_lists, start_users_with_one_function
from swarmgauge.errors import SwarmgaugeError, Unfinished
from swarmgauge.redaction import contains_secret, redact_known, register_secret_options

__all__ = [
    "Outcome",
    "RedactedFailure",
    "Unfinished",
    "fire",
    "fire_unfinished",
    "measure",
    "redacted_exception",
    "set_intended_start",
]


class RedactedFailure(SwarmgaugeError):
    """A failure whose message held a secret (a server echoing the bearer token) and could not be rebuilt as its
    own class; the message names the original class, with the secret replaced by ``***``."""


def redacted_exception(exception: BaseException) -> BaseException:
    """``exception`` as Locust may show and store it: no known secret in its text (failures table, CSVs, HTML).

    The same class with the message redacted when it can be rebuilt that way, else a :class:`RedactedFailure`.
    """
    text = str(exception)
    if not contains_secret(text) and not contains_secret(repr(exception)):
        return exception
    clean = redact_known(text)
    try:
        rebuilt = type(exception)(clean)
        if not contains_secret(repr(rebuilt)) and not contains_secret(str(rebuilt)):
            return rebuilt
    except Exception:  # noqa: BLE001 - a class with its own constructor: fall back to the named stand-in
        pass
    return RedactedFailure(f"{type(exception).__name__}: {clean}")


@dataclass(slots=True)
class Outcome:
    """What a measured operation reports: set ``response_length`` (and ``context``) inside the block."""

    request_type: str
    name: str
    response_length: int = 0
    context: dict[str, Any] = field(default_factory=dict)
    exception: BaseException | None = None
    response_time: float = 0.0  # as the event counts it: an open-model ticket's lag included
    start_time: float = 0.0  # wall clock of the start the event carries: the step the request is counted in

    @property
    def ok(self) -> bool:
        return self.exception is None


def fire(
    events: Any,
    *,
    request_type: str,
    name: str,
    response_time: float,
    response_length: int = 0,
    exception: BaseException | None = None,
    context: dict[str, Any] | None = None,
    start_time: float | None = None,
    url: str | None = None,
) -> None:
    """Fire one ``request`` event with every keyword Locust and its plugins read; no known secret in the failure."""
    if exception is not None:
        exception = redacted_exception(exception)
    events.request.fire(
        request_type=request_type,
        name=name,
        response_time=response_time,
        response_length=response_length,
        exception=exception,
        context=context if context is not None else {},
        start_time=start_time if start_time is not None else time.time(),
        url=url,
        response=None,
    )


def fire_unfinished(
    events: Any, *, request_type: str, name: str, started: float, context: dict[str, Any] | None = None
) -> None:
    """One :class:`Unfinished` failure for a request begun at ``started`` (``time.perf_counter()``) whose user was
    stopped before its answer: its time so far is the response time, its start the wall-clock moment it began (the
    step it is counted in). For clients that do not go through :class:`measure` (Locust's ``FastHttpSession``)."""
    elapsed = time.perf_counter() - started
    fire(
        events,
        request_type=request_type,
        name=name,
        response_time=elapsed * 1000.0,
        exception=Unfinished(),
        context=context,
        start_time=time.time() - elapsed,
    )


class measure:  # noqa: N801 - used as a function: ``with measure(events, "FETCH", path) as outcome:``
    """Time the block and fire one event; an ``Exception`` inside becomes the recorded failure.

    The exception is swallowed (the user greenlet goes on) unless ``reraise`` is set; either way it is
    available as ``outcome.exception`` afterwards. A ``BaseException`` that is no ``Exception`` (the user stopped
    mid-operation: ``GreenletExit``, a ``gevent.Timeout`` of the caller's) fires one :class:`Unfinished` failure with
    the time so far and goes on up. ``since`` (a ``time.perf_counter()`` value) times the
    operation from an earlier moment of its own (``run queued`` counts from its submit). A class rather than a
    ``@contextmanager``: it runs once per request, and a generator-based context manager costs several times more.
    """

    __slots__ = ("_events", "_lag", "_outcome", "_reraise", "_since", "_started", "_wall_start")

    def __init__(
        self,
        events: Any,
        request_type: str,
        name: str,
        *,
        context: dict[str, Any] | None = None,
        reraise: bool = False,
        since: float | None = None,
    ) -> None:
        self._events = events
        self._reraise = reraise
        self._outcome = Outcome(request_type, name, 0, dict(context) if context else {})
        self._since = since

    def __enter__(self) -> Outcome:
        wall_start = time.time()
        started = time.perf_counter()
        since = self._since
        if since is not None and since < started:
            wall_start -= started - since
            started = since
        self._started = started
        self._wall_start = wall_start
        # the open-model lag of this greenlet's iteration (``intended.as_counted``), read once: it holds until the
        # iteration ends, so the start and the response time the event counts use the same one
        self._lag = lag = intended.current_lag()
        self._outcome.start_time = wall_start - lag if lag else wall_start
        return self._outcome

    def __exit__(self, exc_type: Any, exc: BaseException | None, _traceback: Any) -> bool:
        outcome = self._outcome
        measured = (time.perf_counter() - self._started) * 1000.0
        lag = self._lag
        outcome.response_time = measured + lag * 1000.0 if lag else measured
        if exc is None:  # the common case, fired without fire()'s redaction step (there is no failure to redact)
            if self._events is not None:
                self._events.request.fire(
                    request_type=outcome.request_type,
                    name=outcome.name,
                    response_time=measured,
                    response_length=outcome.response_length,
                    exception=None,
                    context=outcome.context,
                    start_time=self._wall_start,
                    url=None,
                    response=None,
                )
            return False
        stopped = not isinstance(exc, Exception)  # stopped mid-request: recorded as unfinished
        outcome.exception = Unfinished() if stopped else exc
        if self._events is not None:
            fire(
                self._events,
                request_type=outcome.request_type,
                name=outcome.name,
                response_time=measured,
                response_length=outcome.response_length,
                exception=outcome.exception,
                context=outcome.context,
                start_time=self._wall_start,
            )
        if stopped:
            return False  # the stop goes on up
        return not self._reraise


@locust_events.init.add_listener
def _register_secrets_at_init(environment: Environment, **_kwargs: Any) -> None:
    register_secret_options(getattr(environment, "parsed_options", None))
    intended.install(environment)  # a User's own pacer (MCPChurnUser) hands out tickets without a shape


#: Seconds a stopped user (a ramp-down, the run's end) has to finish the task it is in, when ``--stop-timeout`` is not
#: given: a healthy target's requests in flight then are answered and counted as they are, and only a request left
#: unanswered this long is recorded :class:`Unfinished`.
IN_FLIGHT_GRACE_SECONDS = 5.0

locust_events.init_command_line_parser.add_listener(mark_stop_timeout_unset)
stop_waiting_users_between_tasks()  # a stop that finds a user waiting must not land in its next request
queue_tasks_in_lists()  # Locust's deque per TaskSet holds a 64-slot block for a queue of at most one task
start_users_with_one_function()  # Locust's User.start makes a function per user, kept by its greenlet


@locust_events.test_start.add_listener
def grace_for_requests_in_flight(environment: Environment, **_kwargs: Any) -> None:
    """Locust's default (no ``--stop-timeout``: 0) kills a stopped user mid-request; a user here gets
    :data:`IN_FLIGHT_GRACE_SECONDS` instead, unless ``--stop-timeout`` was given (0 included). At ``test_start``,
    after every ``init`` listener set a default of its own (kneo's 15 s); a master sends the value to its workers."""
    default_stop_timeout(environment, IN_FLIGHT_GRACE_SECONDS)


@locust_events.test_start.add_listener
def _register_secrets_at_start(environment: Environment, **_kwargs: Any) -> None:
    """A worker gets the master's options with its first spawn message: register their secrets too."""
    register_secret_options(getattr(environment, "parsed_options", None))
