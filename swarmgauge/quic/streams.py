"""The QUIC driver's requests in flight: one waiter per stream, answered from the hub, and the request deadlines that
the driver's one timer enforces.

Why not an ``AsyncResult`` and a ``gevent.Timeout`` per request: each answer then cost a result object, a timer
started and cancelled, and a callback hop before the waiting greenlet ran. Here the hub's service pass switches
straight into the waiting greenlet once the pass is over, and a stream whose deadline passed is answered with
``RequestTimeout`` by that same pass.
"""

from __future__ import annotations

from typing import Any

from gevent.hub import Waiter

from swarmgauge.quic.errors import ResponseTooLarge

Outcome = bytes | BaseException


class PendingStream:
    """One request's stream: the answer's chunks so far, its deadline, and its outcome once known."""

    __slots__ = ("chunks", "deadline", "outcome", "size", "timeout", "waiter")

    def __init__(self, waiter: Any, deadline: float, timeout: float) -> None:
        self.waiter = waiter
        self.deadline = deadline
        self.timeout = timeout
        self.chunks: list[bytes] = []
        self.size = 0
        self.outcome: Outcome | None = None

    @property
    def done(self) -> bool:
        return self.outcome is not None


class InFlight:
    """The streams of one connection awaiting their answer, and the earliest deadline among them."""

    __slots__ = ("_answered", "_hub", "next_deadline", "streams")

    def __init__(self, hub: Any) -> None:
        self._hub = hub
        self.streams: dict[int, PendingStream] = {}
        self.next_deadline: float | None = None
        # outcomes recorded and not yet handed over; None between passes (an idle pooled connection keeps no list)
        self._answered: list[PendingStream] | None = None

    def __len__(self) -> int:
        return len(self.streams)

    def open(self, stream_id: int, deadline: float, timeout: float) -> PendingStream:
        pending = self.streams[stream_id] = PendingStream(Waiter(self._hub), deadline, timeout)
        if self.next_deadline is None or deadline < self.next_deadline:
            self.next_deadline = deadline
        return pending

    def wait(self, pending: PendingStream) -> bytes:
        """Block the calling greenlet until the hub hands over the stream's answer (or raises its error)."""
        outcome = pending.outcome if pending.outcome is not None else pending.waiter.get()
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def forget(self, stream_id: int) -> None:
        """The request is over (answered, failed or abandoned): drop its stream and its deadline."""
        streams = self.streams
        pending = streams.pop(stream_id, None)
        if not streams:
            self.streams = {}  # an emptied dict keeps its table (224 B): a pooled connection idles between requests
        if pending is not None and pending.deadline == self.next_deadline:
            self._next_deadline_again()

    def finish(self, pending: PendingStream, outcome: Outcome) -> None:
        """Record the stream's outcome (the first one wins); it reaches the waiter at the next ``deliver``."""
        if pending.outcome is None:
            pending.outcome = outcome
            if self._answered is None:
                self._answered = [pending]
            else:
                self._answered.append(pending)
            if pending.deadline == self.next_deadline:
                if len(self.streams) <= 1:  # it is the only stream (a pooled user's): no deadline is left
                    self.next_deadline = None
                else:
                    self._next_deadline_again()

    def _next_deadline_again(self) -> None:
        """Only unanswered streams have a deadline that still matters (at most ``max_streams`` of them)."""
        streams = self.streams
        if len(streams) <= 1:  # a pooled user's one stream: no generator to run
            only = next(iter(streams.values()), None)
            self.next_deadline = only.deadline if only is not None and only.outcome is None else None
            return
        self.next_deadline = min((p.deadline for p in streams.values() if p.outcome is None), default=None)

    def receive(self, stream_id: int, data: bytes, end_stream: bool, cap: int) -> bool:
        """Add a chunk of a stream's answer; True when the answer grew past ``cap`` (it then fails with
        ``ResponseTooLarge`` and the caller gives the stream up)."""
        pending = self.streams.get(stream_id)
        if pending is None or pending.outcome is not None:
            return False
        pending.size += len(data)
        if pending.size > cap:
            self.finish(pending, ResponseTooLarge(f"response exceeds {cap} bytes"))
            return True
        pending.chunks.append(data)
        if end_stream:
            chunks = pending.chunks
            self.finish(pending, chunks[0] if len(chunks) == 1 else b"".join(chunks))
        return False

    def fail(self, stream_id: int, error: BaseException) -> None:
        pending = self.streams.get(stream_id)
        if pending is not None:
            self.finish(pending, error)

    def fail_all(self, error: BaseException) -> None:
        for pending in list(self.streams.values()):
            self.finish(pending, type(error)(str(error)))

    def overdue(self, now: float) -> list[tuple[int, PendingStream]]:
        """The unanswered streams whose deadline has passed."""
        if self.next_deadline is None or now < self.next_deadline:
            return []
        return [(sid, p) for sid, p in self.streams.items() if p.outcome is None and p.deadline <= now]

    def deliver(self) -> None:
        """Hand every recorded outcome to its greenlet (from the hub; each runs until it blocks again)."""
        answered, self._answered = self._answered, None
        if answered is None:
            return
        for pending in answered:
            outcome = pending.outcome
            if isinstance(outcome, BaseException):
                pending.waiter.throw(outcome)
            else:
                pending.waiter.switch(outcome)
