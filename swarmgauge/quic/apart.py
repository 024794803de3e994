"""Running a one-off call that blocks (a QUIC handshake) on a short-lived greenlet started from the hub, while the
caller's greenlet waits on it.

Why: a Locust user's greenlet lives for the whole run, and a pooled MarkUser whose handshake ran on it left ~3 KiB
more resident per user at 1,000 users than the same handshake run on a greenlet of its own (measured under Locust,
interleaved, 45.5-46.1 against 48.6-49.7 KiB per added user; tracemalloc saw the same Python objects in both, so the
difference is in the native heap: the likely cause is the user's deep stack, saved to the heap by greenlet at each
switch of the handshake, interleaved with the connection's long-lived native state). A raw greenlet started from
the caller, its stack below the caller's, did not help; one started from the hub, as ``gevent.spawn`` does, does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import gevent

Result = TypeVar("Result")


def _outcome(function: Callable[..., Any], args: tuple[Any, ...]) -> tuple[bool, Any]:
    """(True, the result) or (False, the exception): handed to the caller, who raises it, so the hub never reports
    it as an error of its own."""
    try:
        return True, function(*args)
    except BaseException as exc:  # noqa: BLE001 - every outcome, a kill included, goes back to the caller to raise
        return False, exc


def run_apart(function: Callable[..., Result], *args: Any) -> Result:
    """``function(*args)`` on a new greenlet; it returns or raises to the caller as the call in place would.

    If the caller is interrupted while it waits (a kill or a ``Timeout`` thrown into the caller's greenlet), the same
    exception is thrown into the call where it waits, so that it cleans up as it would have in place, and the
    caller gets the call's outcome: that exception unless the call handled it."""
    apart = gevent.spawn(_outcome, function, args)
    try:
        succeeded, value = apart.get()
    except BaseException as interrupt:
        if apart.dead:  # it had ended: the interruption came after it, as it would in place
            raise
        apart.kill(interrupt, block=True)
        succeeded, value = apart.value if apart.value is not None else (False, interrupt)
    if not succeeded:
        raise value
    return value  # type: ignore[no-any-return]


__all__ = ["run_apart"]
