"""Locust's per-user objects made smaller: a TaskSet's queue and a User's greenlet (patches ``locust-task-queue-list``
and ``locust-one-run-function``, moved out of ``core/locust_compat.py`` to keep it under 400 lines; its rule holds
here: ``tests/core/test_locust_memory.py`` fails by name when a Locust upgrade changes what these replace).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gevent
from locust import User
from locust.user.task import TaskSet


class TaskQueue(list[Any]):
    """A TaskSet's queue of scheduled tasks as a list: what Locust's ``TaskSet`` calls of its deque
    (``append``, ``appendleft``, ``popleft``, truth, ``len``), with list's ``clear`` and iteration beside them.

    Locust makes a ``deque`` per TaskSet, and an empty deque holds a 64-slot block: 760 bytes per user for a queue
    that holds one task at most between two of them (``TaskSet.run`` schedules the next task when it is empty). An
    empty list holds no storage and a one-task list a 4-slot one."""

    __slots__ = ()

    def popleft(self) -> Any:
        return self.pop(0)

    def appendleft(self, task: Any) -> None:
        self.insert(0, task)


def queue_tasks_in_lists() -> None:
    """Every TaskSet made from now on queues its tasks in a :class:`TaskQueue` (process-wide, idempotent)."""
    made_with_deque: Callable[..., None] = TaskSet.__init__
    if getattr(made_with_deque, "swarmgauge_list_queue", False):
        return

    def init_with_list(self: Any, parent: Any) -> None:
        made_with_deque(self, parent)
        self._task_queue = TaskQueue(self._task_queue)

    init_with_list.swarmgauge_list_queue = True  # type: ignore[attr-defined]
    init_with_list.__wrapped__ = made_with_deque  # type: ignore[attr-defined]
    TaskSet.__init__ = init_with_list  # type: ignore[method-assign]


def run_user(user: Any) -> None:
    """What every User greenlet runs, as Locust's ``User.start`` defines it (``greenlet.args[0]`` is the user)."""
    user.run()


class UserGreenlet(gevent.Greenlet):
    """A User's greenlet, running :func:`run_user` from its class.

    A ``Greenlet`` given its function keeps it in its instance dict, 184 B a user where an empty one is 64; here
    the function is the class's (gevent's documented override of ``_run``), a plain function as before, so the
    greenlet's C stack is no deeper."""

    __slots__ = ()
    _run = staticmethod(run_user)


def start_users_with_one_function() -> None:
    """``User.start`` spawns a :class:`UserGreenlet` (process-wide, idempotent).

    Locust's defines its ``run_user`` inside ``start``: a new function object per user (152 B), which the user's
    greenlet keeps for the user's life, in a dict of the greenlet's own (184 B). The same body, defined once on
    the greenlet's class, does the same; ``greenlet.args[0]`` is still the user."""
    defines_one_per_user: Callable[..., Any] = User.start
    if getattr(defines_one_per_user, "swarmgauge_one_function", False):
        return

    def start(self: Any, group: Any) -> Any:
        self._greenlet = UserGreenlet(None, self)
        group.start(self._greenlet)
        self._group = group
        return self._greenlet

    start.swarmgauge_one_function = True  # type: ignore[attr-defined]
    start.__wrapped__ = defines_one_per_user  # type: ignore[attr-defined]
    User.start = start  # type: ignore[method-assign]
