"""Open-model timing: the ticket a user greenlet holds, and the lag every request of its iteration carries.

A *ticket* is an intended start (a ``time.perf_counter()`` value): the open-model scheduler (``shapes/open_model``)
or a User's own pacer (``MCPChurnUser``'s ``SessionPacer``) gives one to a user greenlet with
:func:`set_intended_start`. The greenlet's next *iteration* (one task of its User, a function or method, never a
nested ``TaskSet``) runs on it. The iteration begins ``lag = actual start - intended start`` late (0 when on time),
and **every request fired in that greenlet while the iteration runs** is counted ``lag`` later than measured: its
``response_time`` gains the lag and its ``start_time`` moves back by it. So a stalled target, which holds the
tickets due during the stall in the queue, shows in the percentiles (no coordinated omission, as wrk2), whichever
client fired the request: swarmgauge's ``measure()``, Locust's ``HttpUser``/``FastHttpUser``, ``events.request``.

Why every request of the iteration and not only its first: had the iteration started on time, each of its requests
would have been sent ``lag`` earlier, and a user of the service would have waited that much longer for each; the time
one request of the iteration spends behind another is the iteration's own work, already in those requests' times.
A request fired outside an iteration (``on_start``, ``on_stop``, another greenlet the task spawned) carries no lag.

The one place that adjusts is :func:`adjust_request`, run on every ``request`` event before any listener (Locust's
own statistics, the per-step HDR histograms, SLOs) sees it while some iteration carries a lag (a run with none pays
nothing for it per request); :func:`install` puts it there and has every task iteration routed through
:func:`run_task` / :func:`sleep_for` (both through ``core/locust_compat``) while anything here needs it: an
Environment's step has a rate, or a ticket or a lag exists (:func:`_route_while_needed` decides, at each change of
those); otherwise Locust's own task loop runs, a closed-model run paying nothing per iteration. In an open-model step
(``hooks.current_step`` has a rate) an iteration that holds no ticket waits for one first, through Locust's own
``wait()`` (so a stopping user is killed there), and the User's ``wait_time`` between iterations is not slept: the
next ticket is the wait. A ``wait_time`` that takes the ticket itself (``shapes.open_model.tickets()``) still runs,
and a ``self.wait()`` inside a task is the task's own and sleeps as asked.

Dicts keyed by greenlet rather than a ``gevent.local``: every request reads them, and a closed-model run (no ticket)
then finds them empty at the cost of one truth test.
"""

from __future__ import annotations

import time
import weakref
from typing import Any

from greenlet import getcurrent

from swarmgauge.core import hooks, locust_compat

_tickets: dict[Any, float] = {}  # greenlet -> intended start of the ticket its next iteration runs on
_lags: dict[Any, float] = {}  # greenlet -> seconds its running ticketed iteration began late (0.0: on time)
_PRUNE_AT = 4096  # entries before those of finished greenlets (a user stopped between ticket and task) go
#: the request hooks :func:`adjust_request` is put in front of: engaged while some iteration carries a lag (``_lags``
#: not empty), released once none does, so a run with no lag pays nothing per request for it
_adjustments: weakref.WeakSet[locust_compat.RequestAdjustment] = weakref.WeakSet()
#: this process's task routing (made at :func:`install`), engaged and released by :func:`_route_while_needed`
_routing: locust_compat.TaskRouting | None = None


def _route_while_needed() -> None:
    """The one place that decides whether iterations are routed: while an Environment's step has a rate (an
    iteration may wait for a ticket, and a wait is one), or a ticket waits for its iteration, or an iteration
    carries a lag (its ``finally`` is in :func:`run_task`, which a release leaves running where it is)."""
    if _routing is None:
        return
    if _open_step_environments or _tickets or _lags:
        _routing.engage()
    else:
        _routing.release()


def _lag_begins(greenlet: Any, lag: float) -> None:
    if not _lags:
        for adjustment in _adjustments:
            adjustment.engage()
    _lags[greenlet] = lag


def _lag_ends(greenlet: Any) -> None:
    _lags.pop(greenlet, None)
    if not _lags:
        for adjustment in _adjustments:
            adjustment.release()
        _route_while_needed()


def set_intended_start(perf_time: float | None) -> None:
    """This greenlet's next iteration runs on a ticket due at ``perf_time`` (None: on none)."""
    if perf_time is None:
        if _tickets.pop(getcurrent(), None) is not None and not _tickets:
            _route_while_needed()
        return
    if len(_tickets) >= _PRUNE_AT:
        _drop_finished_tickets()
    first = not _tickets
    _tickets[getcurrent()] = perf_time
    if first:
        _route_while_needed()  # before this greenlet's next iteration looks up Locust's execute_task


def _drop_finished_tickets() -> None:
    """Tickets of greenlets that ended between the ticket and its iteration (a user stopped in its wait)."""
    for finished in [glet for glet in _tickets if glet.dead]:
        del _tickets[finished]


def holds_ticket() -> bool:
    """Whether this greenlet holds a ticket its next iteration has not begun on yet."""
    return bool(_tickets) and getcurrent() in _tickets


def begin_iteration() -> None:
    """This greenlet's iteration begins now, on the ticket it holds (if any): its requests carry the lag."""
    if not _tickets:
        return
    intended = _tickets.pop(getcurrent(), None)
    if intended is not None:
        _lag_begins(getcurrent(), max(0.0, time.perf_counter() - intended))


def end_iteration() -> None:
    if _lags:
        _lag_ends(getcurrent())


def in_ticketed_iteration() -> bool:
    """Whether this greenlet is running an iteration that began on a ticket."""
    return bool(_lags) and getcurrent() in _lags


def current_lag() -> float:
    """Seconds the running iteration of this greenlet began after its ticket was due (0 without one)."""
    return _lags.get(getcurrent(), 0.0) if _lags else 0.0


def as_counted(response_time: float, start_time: float) -> tuple[float, float]:
    """A request measured as ``response_time`` ms from ``start_time`` (wall clock), as its event counts it."""
    lag = current_lag()
    return (response_time + lag * 1000.0, start_time - lag) if lag else (response_time, start_time)


def adjust_request(event: dict[str, Any]) -> None:
    """Add this greenlet's iteration lag to a ``request`` event's keyword arguments, in place."""
    if not _lags:
        return
    lag = _lags.get(getcurrent())
    if not lag or event.get("response_time") is None:
        return  # a None response time is counted apart by Locust, in no percentile
    event["response_time"] += lag * 1000.0
    start_time = event.get("start_time")
    event["start_time"] = (start_time if start_time is not None else time.time()) - lag


#: ids of the Environments whose last announced step has a rate: every iteration of every User asks whether its step
#: is open-model, and in a closed-model run (nearly every run) this empty set answers at the cost of one truth test.
#: An id left here by an Environment gone sends that question the long way round, never to a wrong answer.
_open_step_environments: set[int] = set()


@hooks.step_changed.add_listener
def note_step(environment: Any, step: hooks.StepInfo, **_kwargs: Any) -> None:
    """Keep the set above: a listener of ``hooks.step_changed``, which every process fires at each step."""
    if step.rate is None:
        _open_step_environments.discard(id(environment))
        _drop_finished_tickets()  # so a ticket no iteration will take keeps no routing engaged
    else:
        _open_step_environments.add(id(environment))
    _route_while_needed()


def in_open_step(environment: Any) -> bool:
    if not _open_step_environments:
        return False
    hook = hooks.current_step  # called by hand, not through Hook.__call__: twice per iteration of every User
    current = (hook.implementation or hook.default)(environment)
    return current is not None and current.rate is not None


def run_task(taskset: Any, execute: Any, task: Any) -> None:
    """One iteration: on a ticket in an open-model step (waited for first when none is held), with its lag.

    Runs for every iteration of every User while routed, so the ticket tables' checks are inlined."""
    if not (_tickets and getcurrent() in _tickets) and in_open_step(taskset.user.environment):
        taskset.wait()  # the User's own wait_time runs (it may take the ticket), then sleep_for takes one
    if _tickets:
        begin_iteration()
    try:
        execute(taskset, task)
    finally:
        if _lags:
            _lag_ends(getcurrent())


def sleep_for(taskset: Any, seconds: float) -> float | None:
    """What Locust's wait sleeps after the User's ``wait_time`` gave ``seconds`` (None: not at all).

    Holding a ticket, the iteration starts at once (no yield, in which a stop could lose the ticket); a wait
    inside a ticketed iteration (a task calling ``self.wait()``) is the task's own and sleeps as asked; between
    iterations of an open-model step the ticket is the wait, the think time is not slept.
    """
    if _tickets and getcurrent() in _tickets:  # holds_ticket(), inlined
        return seconds if seconds > 0 else None
    if _lags and getcurrent() in _lags:  # in_ticketed_iteration(), inlined
        return seconds
    if in_open_step(taskset.user.environment) and hooks.take_ticket(taskset.user):
        return None
    return seconds


def install(environment: Any) -> None:
    """Adjust every request event of ``environment`` and route task iterations while needed; idempotent."""
    global _routing
    adjustment = locust_compat.request_adjustment(environment.events, adjust_request)
    _adjustments.add(adjustment)
    if _lags:
        adjustment.engage()
    _routing = locust_compat.route_task_iterations(run_task, sleep_for)
    _route_while_needed()
