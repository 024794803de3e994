"""The open-model hand-off: a scheduler (``shapes/``) gives a user greenlet a ticket's intended start time, and the
user's next measured request (``users/recording``) is timed from it, so a stalled target shows in the percentiles.

It lives in the core so shapes and users share it without importing each other. A dict keyed by greenlet rather than
a ``gevent.local``: every measured request reads it, and a closed-model run (no scheduler) then finds it empty at
the cost of one truth test instead of a greenlet-local lookup.
"""

from __future__ import annotations

from typing import Any

from greenlet import getcurrent

_starts: dict[Any, float] = {}
_PRUNE_AT = 4096  # entries before those of finished greenlets (a user stopped between ticket and request) go


def set_intended_start(perf_time: float | None) -> None:
    """Time the next request of this greenlet from ``perf_time`` (a ``time.perf_counter()`` value)."""
    if perf_time is None:
        _starts.pop(getcurrent(), None)
        return
    if len(_starts) >= _PRUNE_AT:
        for finished in [glet for glet in _starts if glet.dead]:
            del _starts[finished]
    _starts[getcurrent()] = perf_time


def take_intended_start() -> float | None:
    """The intended start set for this greenlet, once (it is cleared on reading)."""
    if not _starts:
        return None
    return _starts.pop(getcurrent(), None)
