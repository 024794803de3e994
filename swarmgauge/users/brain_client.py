"""The 2dph brain's answers, checked: each failed answer a named error with a fixed message, its body kept apart.

Backend failures are 502 ``{"error": …}``; the buffer-pool-full 502 (the unclosed-results bug) is its own class,
``PoolExhausted``, apart from other ``BackendError``s, so a report shows when the pool ran out.
"""

from __future__ import annotations

from swarmgauge.errors import SwarmgaugeError

POOL_FULL_MARK = "buffer pool is full"


class BrainError(SwarmgaugeError):
    """A brain answer that is not the success the endpoint promises."""

    detail = ""


class BackendError(BrainError):
    """502 from the brain: its database or embedder failed."""


class PoolExhausted(BackendError):
    """502 with Ladybug's buffer-pool-full message: unclosed results pinned the pool (restart needed)."""


class MalformedAnswer(BrainError):
    """A 200 whose body is not the JSON the endpoint returns."""


class BrainUnreachable(BrainError):
    """No complete answer: refused, reset, cut short or timed out; the message is the fault's class name."""


def unreachable(fault: BaseException) -> BrainUnreachable:
    """The named failure for a transport fault (a bounded set of messages: one per fault class, never its text)."""
    error = BrainUnreachable(type(fault).__name__)
    error.detail = str(fault)[:200]
    return error


def classify(status: int, body: bytes) -> BrainError | None:
    """The named failure for an answer, or None for a 200.

    The failure's message is fixed per kind (Locust groups failures by message, so a body in it would make one row
    per distinct body); the start of the body is kept on ``detail`` for a person reading the exception.
    """
    if status == 200:
        return None
    detail = body[:200].decode("utf-8", "replace")
    if status == 502:
        error: BrainError = (
            PoolExhausted(f"HTTP 502: {POOL_FULL_MARK}") if POOL_FULL_MARK in detail else BackendError("HTTP 502")
        )
    else:
        error = BrainError(f"HTTP {status}")
    error.detail = detail
    return error
