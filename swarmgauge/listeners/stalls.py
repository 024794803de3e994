"""Generator stalls: the times this process's event loop could not serve its greenlets, and the requests they hit.

A request's latency is taken in its user's greenlet, so when the generator's own loop is held (spawning a step's
new users, their TLS handshakes, a GC pause, a starved CPU) every request in flight is measured late, and the step
it started in is blamed. A watch greenlet sleeps :data:`WATCH_INTERVAL` at a time; whenever it wakes more than
:data:`STALL_MS` late, the lateness is a stall (back-to-back late wakes are one stall). Each request that overlaps
a stall - it was in flight while the loop was held - counts toward its step's ``stalled_requests``, with the
longest such stall in ``generator_stall_ms``: ``steps.csv`` flags the step and the report says by how much.

A request recorded before the watch woke up from the stall is matched when the stall is noted (a short ring of
recently finished requests), one recorded after it against the stalls noted so far: each request counts once. The
ring holds the requests since the watch's last on-time wake (a few dozen milliseconds of them): one recorded before
that wake ended before any stall still to come began, so an on-time wake empties it, unless a stall that a next one
would merge with is that recent. Kept longer, it was 20,000 requests a process of cold memory that each request
evicted one of (2.6 MB, and as many objects for the collector to track). The ring is flat, three items a request
(its step, start and response time, the objects the request event already holds): a request adds no object of its
own, none the cyclic collector tracks, where a tuple each was one more container for every young collection to walk.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

WATCH_INTERVAL = 0.05  # seconds the watch sleeps between looks at the clock
STALL_MS = 100.0  # a wake this much later than asked for is a stall
MERGE_GAP = 0.1  # two stalls closer than this are one (a loop held through several wakes)
KEEP_SECONDS = 30.0  # how long stalls are kept for matching requests still in flight
MAX_STALLS = 1_000
MAX_RECENT = 20_000  # the ring's bound (in requests) when no watch empties it
MAX_WATCH_SECONDS = 30 * 24 * 3600.0
#: items a request takes in :attr:`StallWatch.recent`: its step (:data:`COUNTED` once a stall counted it), its start
#: (wall clock) and its response time in ms (or None)
PER_REQUEST = 3
COUNTED = -1


def _end(start: float, response_time_ms: float | None) -> float:
    return start + (response_time_ms or 0.0) / 1000.0


@dataclass
class _Stall:
    begin: float
    end: float
    steps: set[int] = field(default_factory=set)

    @property
    def ms(self) -> float:
        return (self.end - self.begin) * 1000.0


@dataclass
class StallWatch:
    """One process's stalls (wall-clock intervals) and the recent requests they may have hit.

    ``on_stalled(step, stall_ms, requests)`` is called once per request that overlapped a stall (``requests`` 1),
    and again with ``requests`` 0 for each step it hit when that stall grows longer.
    """

    on_stalled: Callable[[int, float, int], None]
    stalls: deque[_Stall] = field(default_factory=lambda: deque(maxlen=MAX_STALLS))
    #: the ring: :data:`PER_REQUEST` items a request, appended by :meth:`note_request` (or inline by the steps
    #: listener's request handler, when ``start`` is past :attr:`last_end`)
    recent: deque[Any] = field(default_factory=lambda: deque(maxlen=MAX_RECENT * PER_REQUEST))
    #: the end of the last stall noted (-inf: none): a request that started after it overlaps no stall noted so far
    last_end: float = float("-inf")

    def kept(self) -> int:
        """Requests in the ring."""
        return len(self.recent) // PER_REQUEST

    def note_wake(self, asked_s: float, woke_wall: float, late_s: float) -> None:
        """The watch slept ``asked_s`` and woke ``late_s`` late at ``woke_wall``: a stall when late enough."""
        if late_s * 1000.0 < STALL_MS:
            self._on_time(woke_wall)
            return
        begin = woke_wall - late_s
        if self.stalls and begin - self.stalls[-1].end <= MERGE_GAP + asked_s:
            stall = self.stalls[-1]
            stall.end = woke_wall
            for step in stall.steps:
                self.on_stalled(step, stall.ms, 0)
        else:
            stall = _Stall(begin, woke_wall)
            self.stalls.append(stall)
        self.last_end = stall.end
        recent = self.recent
        hit: list[int] = []
        for at in range(len(recent) - PER_REQUEST, -1, -PER_REQUEST):  # newest first
            step, start, response_time_ms = recent[at], recent[at + 1], recent[at + 2]
            if _end(start, response_time_ms) < stall.begin:
                break
            if step != COUNTED and start < stall.end:
                hit.append(at)
                stall.steps.add(step)
                self.on_stalled(step, stall.ms, 1)
        for at in hit:
            recent[at] = COUNTED

    def _on_time(self, woke_wall: float) -> None:
        """An on-time wake: the requests recorded so far ended before any stall still to come begins (it begins a
        sleep after this wake), so they are dropped, unless the last stall is recent enough for that one to merge
        with it (:data:`MERGE_GAP`) and so reach back over them; stalls older than :data:`KEEP_SECONDS` go."""
        stalls = self.stalls
        if not stalls or woke_wall - stalls[-1].end > MERGE_GAP:
            self.recent.clear()
        while stalls and stalls[0].end < woke_wall - KEEP_SECONDS:
            stalls.popleft()

    def note_request(self, step: int, start: float, response_time_ms: float | None) -> None:
        """A request just recorded: counted now if it overlapped a stall already noted, else kept to be matched."""
        stalls = self.stalls
        if stalls and stalls[-1].end >= start:  # else no stall noted so far overlaps it (the common case)
            end = _end(start, response_time_ms)
            for stall in reversed(stalls):
                if stall.end < start:
                    break
                if stall.begin < end:
                    stall.steps.add(step)
                    self.on_stalled(step, stall.ms, 1)
                    return
        self.recent.extend((step, start, response_time_ms))


def watch_loop(current: Callable[[], StallWatch | None], sleep: Callable[[float], object]) -> None:
    """Sleep, look at the clock, tell the current watch how late the wake was; ends when there is none (or in time)."""
    began = time.monotonic()
    while time.monotonic() - began < MAX_WATCH_SECONDS:
        asked = time.monotonic()
        sleep(WATCH_INTERVAL)
        late = time.monotonic() - asked - WATCH_INTERVAL
        watch = current()
        if watch is None:
            return
        watch.note_wake(WATCH_INTERVAL, time.time(), max(0.0, late))
