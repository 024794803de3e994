"""The open-model hand-off: a scheduler (``shapes/``) gives a user greenlet a ticket's intended start time, and the
user's next measured request (``users/recording``) is timed from it, so a stalled target shows in the percentiles.

It lives in the core so shapes and users share it without importing each other.
"""

from __future__ import annotations

import gevent.local

_local = gevent.local.local()


def set_intended_start(perf_time: float | None) -> None:
    """Time the next request of this greenlet from ``perf_time`` (a ``time.perf_counter()`` value)."""
    _local.intended_start = perf_time


def take_intended_start() -> float | None:
    """The intended start set for this greenlet, once (it is cleared on reading)."""
    value = getattr(_local, "intended_start", None)
    _local.intended_start = None
    return value
