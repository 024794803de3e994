"""The open model: a per-process ticket scheduler, and tickets taken by every User of an open-model step.

When a step has a ``rate``, every worker (or the local process) runs one scheduler greenlet that issues its share
of the step's arrival schedule (every ``StepInfo.slots``-th ticket from ``slot`` on, so N workers together issue
exactly rate x duration), each stamped with its *intended* start time. Users are only the concurrency cap (the
stage's ``max_users``, k6's maxVUs). A ticket nobody takes within ``drop_after`` seconds is counted in the step's
``dropped`` column and never run; ``tickets`` counts the ones issued.

What a User needs to do: nothing. In an open-model step every task iteration of every User class, Locust's own
``HttpUser``/``FastHttpUser`` included, first takes a ticket (``core/intended.py`` routes each iteration through
Locust's own ``wait()``), the User's ``wait_time`` between iterations is not slept (the next ticket is the wait),
and every request the iteration fires counts from the ticket's intended start: a stalled target shows in the
percentiles whichever client measured it (no coordinated omission, as wrk2). In a closed-model step the same Users
run as Locust runs them. A User class that runs its own loop (it overrides ``User.run``) cannot take tickets: a
plan that would run it in an open-model step stops with exit 2 before any load.

A User may still take its ticket in its own ``wait_time`` (``tickets()``, or the ``OpenModel`` mixin, which also
waits for the first ticket in ``on_start``): ``MDKBurstUser`` does, and submits only in an iteration that began on
a ticket (``intended.in_ticketed_iteration``). An iteration never takes a second ticket.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gevent
from gevent.event import AsyncResult
from locust import events
from locust.env import Environment
from locust.runners import MasterRunner

from swarmgauge.core import hooks, intended, locust_compat
from swarmgauge.core.intended import set_intended_start
from swarmgauge.core.run_context import PerEnvironment
from swarmgauge.errors import UsageError

MAX_TICKET_WAIT = 3600.0
IDLE_WAIT = 0.5
MAX_SLEEP = 0.05
hooks.register_step_counter("tickets")


class TicketScheduler:
    """Issues this process's tickets for the current open-model step; users take them in order.

    A ticket goes straight to the longest-waiting user when one is free (one wake-up per ticket, so 1,000/s
    costs 1,000 switches, not 1,000 times the number of idle users); otherwise it queues until a user is free
    or it is older than ``drop_after``.
    """

    def __init__(self, environment: Environment) -> None:
        self.environment = environment
        self.queue: deque[tuple[float, int]] = deque()
        self.waiters: deque[AsyncResult] = deque()
        self.greenlet: gevent.Greenlet | None = None
        self.step: hooks.StepInfo | None = None
        self._schedule: _Schedule | None = None
        self.issued = 0
        self.dropped = 0

    def start(self, info: hooks.StepInfo) -> None:
        self.finish_step()
        self.step = info
        if info.rate is None:
            return
        self._schedule = _Schedule(info, time.perf_counter())
        self.greenlet = gevent.spawn(self._issue, self._schedule)

    def stop_issuing(self) -> None:
        """Stop where the schedule is (the run was cut short): tickets not yet due are never issued."""
        if self.greenlet is not None and not self.greenlet.dead:
            self.greenlet.kill(block=False)
        self.greenlet = None
        self._schedule = None

    def finish_step(self) -> None:
        """The step is over: issue the tickets of its schedule a late issuer has not reached yet, then stop.

        The step lasted its full duration, so all of them were due; a loaded process wakes its issuer late, and
        without this the last one or two would vanish instead of being taken or counted as dropped.
        """
        schedule = self._schedule
        self.stop_issuing()
        if schedule is not None and schedule.info.duration:
            self._issue_due(schedule, float("inf"))

    def tickets_left(self) -> bool:
        """Tickets still to come or to take: the issuer is running, or one waits in the queue for a free user."""
        return (self.greenlet is not None and not self.greenlet.dead) or bool(self.queue)

    def _hand_out(self, due: float, step_index: int) -> None:
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.ready():
                waiter.set((due, step_index))
                return
        self.queue.append((due, step_index))

    def _issue_due(self, schedule: _Schedule, now: float) -> None:
        """Issue every ticket of ``schedule`` due by ``now`` (perf_counter time)."""
        issued_now = 0
        while schedule.next < schedule.total:
            due = schedule.due(schedule.next)
            if due > now:
                break
            self._hand_out(min(due, time.perf_counter()), schedule.info.index)
            schedule.next += schedule.stride
            issued_now += 1
        if issued_now:
            self.issued += issued_now
            hooks.count_step(self.environment, "tickets", issued_now, step=schedule.info.index)

    def _issue(self, schedule: _Schedule) -> None:
        """Every ``slots``-th arrival of the step's schedule from ``slot`` on, each at its due time."""
        while schedule.next < schedule.total:
            now = time.perf_counter()
            self._issue_due(schedule, now)
            self.expire(now)
            if schedule.next >= schedule.total:
                break
            gevent.sleep(min(max(schedule.due(schedule.next) - time.perf_counter(), 0.0), MAX_SLEEP))

    def expire(self, now: float | None = None, *, everything: bool = False) -> int:
        """Count queued tickets older than ``drop_after`` (or all of them) as dropped, in their own step."""
        now = time.perf_counter() if now is None else now
        bound = self.step.drop_after if self.step and self.step.drop_after is not None else 1.0
        dropped = 0
        while self.queue and (everything or now - self.queue[0][0] > bound):
            _due, step_index = self.queue.popleft()
            hooks.count_step(self.environment, "dropped", 1, step=step_index)
            dropped += 1
        self.dropped += dropped
        return dropped

    def take(self, timeout: float, still_wanted: Callable[[], bool] | None = None) -> float | None:
        """The intended start (perf_counter time) of the next live ticket, or None after ``timeout``.

        ``still_wanted`` is asked every :data:`IDLE_WAIT` seconds of the wait (None when it says no: the step
        stopped being open); the user keeps its place in the queue between the looks.
        """
        self.expire()
        if self.queue:
            return self.queue.popleft()[0]
        waiter = AsyncResult()
        self.waiters.append(waiter)
        taken = False
        deadline = time.monotonic() + max(timeout, 0.0)
        try:
            while True:
                left = deadline - time.monotonic()
                waiter.wait(timeout=max(min(left, IDLE_WAIT), 0.0))
                # A ticket handed over while this wait was timing out is still this user's: check, do not assume.
                if waiter.ready() or left <= IDLE_WAIT or (still_wanted is not None and not still_wanted()):
                    break
            taken = waiter.ready()
            return waiter.value[0] if taken else None
        finally:
            if not waiter.ready():
                if waiter in self.waiters:
                    self.waiters.remove(waiter)
            elif not taken:
                self.queue.appendleft(waiter.value)  # killed after a ticket reached it: the next user takes it


class _Schedule:
    """One process's share of a step's arrivals: ticket ``k`` is due ``arrival_time(k)`` after ``began``."""

    def __init__(self, info: hooks.StepInfo, began: float) -> None:
        self.info, self.began = info, began
        self.rate, self.rate_end = float(info.rate or 0.0), info.rate_end
        self.duration = info.duration if info.duration else MAX_TICKET_WAIT * 24
        self.total = arrivals_by(self.duration, self.rate, self.rate_end, self.duration)
        self.stride = max(1, int(info.slots))
        self.next = int(info.slot)

    def due(self, k: int) -> float:
        return self.began + arrival_time(k, self.rate, self.rate_end, self.duration)


def arrivals_by(t: float, rate: float, rate_end: float | None, duration: float) -> int:
    """How many tickets are due in [0, t): a constant rate, or linear from ``rate`` to ``rate_end``."""
    if rate_end is None or duration <= 0:
        return int(math.ceil(rate * t - 1e-9)) if rate > 0 else 0
    return int(math.ceil(rate * t + (rate_end - rate) * t * t / (2.0 * duration) - 1e-9))


def arrival_time(k: int, rate: float, rate_end: float | None, duration: float) -> float:
    """When ticket ``k`` (0-based) is due: the inverse of :func:`arrivals_by`."""
    if rate_end is None or rate_end == rate or duration <= 0:
        return k / rate
    slope = (rate_end - rate) / duration
    return (-rate + math.sqrt(max(rate * rate + 2.0 * slope * k, 0.0))) / slope


@dataclass
class _Tickets(PerEnvironment):
    """Owned by ``shapes/open_model.py``: this process's ticket scheduler, made at its first ticket."""

    scheduler: TicketScheduler | None = None


def scheduler(environment: Environment) -> TicketScheduler:
    tickets = _Tickets.of(environment)
    if tickets.scheduler is None:
        tickets.scheduler = TicketScheduler(environment)
    return tickets.scheduler


def take_ticket(user: Any, timeout: float = MAX_TICKET_WAIT) -> bool:
    """Wait up to ``timeout`` for this process's next ticket while the step is open; with one, the user's next
    iteration runs on it. False when the step is not (or stops being) open-model, or after ``timeout``.

    One place in the scheduler's queue of waiting users for the whole wait (the longest-waiting user gets the next
    ticket); the step is looked at every :data:`IDLE_WAIT` seconds. A step of no users goes on waiting: Locust is
    stopping every user, and one woken to run closed-model would send requests in a step that has none.
    """

    def waiting_is_wanted() -> bool:
        current = hooks.current_step(user.environment)
        return current is not None and (current.rate is not None or current.users == 0)

    current = hooks.current_step(user.environment)
    if current is None or current.rate is None:
        return False
    due = scheduler(user.environment).take(timeout, waiting_is_wanted)
    if due is None:
        return False
    set_intended_start(due)
    return True


hooks.take_ticket.implement(take_ticket)


@hooks.tickets_left.implement
def tickets_left(environment: Environment) -> bool:
    """Whether this process still has open-model tickets to hand out (a master's are its workers': True)."""
    if isinstance(environment.runner, MasterRunner):
        return True
    found = _Tickets.of(environment).scheduler
    return found is not None and found.tickets_left()


def check_ticketed(stage_label: str, user_classes: Any) -> None:
    """Raise UsageError when a class that would run in an open-model stage cannot take a ticket per iteration."""
    for user_class in user_classes:
        if not locust_compat.runs_its_tasks(user_class):
            raise UsageError(
                f"open-model stage {stage_label!r}: {user_class.__name__} runs its own loop (it overrides "
                "User.run), so it cannot take a ticket per iteration; run it in a closed-model stage "
                "(users, --steps) or give it @task methods"
            )


def tickets(idle_wait: float = IDLE_WAIT) -> Callable[[Any], float]:
    """A ``wait_time`` that takes the ticket itself: 0 with one; in a closed-model step it waits ``idle_wait``.

    The wait goes on until a ticket comes or the step stops being open, so an iteration never runs without one
    (a stopping user is killed in its wait, as Locust does with every wait).
    """

    def wait_for_ticket(user: Any) -> float:
        return 0.0 if take_ticket(user) else idle_wait

    setattr(wait_for_ticket, "takes_tickets", True)  # noqa: B010 - read by takes_tickets()
    return wait_for_ticket


class OpenModel:
    """User mixin: ``wait_time = tickets()``, and the first ticket is waited for at the end of ``on_start``.

    The first wait goes through Locust's own ``wait()``, so a user stopped before it got a ticket is killed there
    instead of running one iteration without a ticket.
    """

    wait_time = tickets()

    def on_start(self) -> None:
        super().on_start()  # type: ignore[misc]
        self.wait()  # type: ignore[attr-defined]


def takes_tickets(user_class: Any) -> bool:
    """Whether a User class waits for open-model tickets: the :class:`OpenModel` mixin, a :func:`tickets` wait, or a
    wait of its own that takes them, said by ``takes_tickets = True`` on the class (as ``MCPChurnUser``)."""
    if getattr(user_class, "takes_tickets", False) is True:
        return True
    if isinstance(user_class, type) and issubclass(user_class, OpenModel):
        return True
    return getattr(getattr(user_class, "wait_time", None), "takes_tickets", False) is True


def _flush_tickets(environment: Environment) -> None:
    found = _Tickets.of(environment).scheduler
    if found is not None:
        found.stop_issuing()
        found.expire(everything=True)


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    intended.install(environment)


@hooks.step_changed.add_listener
def _on_step_changed(environment: Environment, step: hooks.StepInfo, **_kwargs: Any) -> None:
    if isinstance(environment.runner, MasterRunner):
        return
    ticket_scheduler = scheduler(environment)
    ticket_scheduler.expire()
    ticket_scheduler.start(step)
    if step.rate is None:
        ticket_scheduler.expire(everything=True)


@hooks.before_flush.add_listener
def _on_before_flush(environment: Environment, **_kwargs: Any) -> None:
    _flush_tickets(environment)


@events.test_stop.add_listener
def _on_test_stop(environment: Environment, **_kwargs: Any) -> None:
    _flush_tickets(environment)
