"""Greenlets asleep until a deadline, woken by one hub timer: what a paced user keeps while it waits between tasks.

A libev timer for each sleeping greenlet, with the bound ``switch`` and the arguments it calls, is ~260 B a user
that stays for the whole wait, and a paced user waits nearly all the run; an entry in one heap per hub is a
two-item tuple and an int (~100 B), and one timer stands armed for the earliest (``benchmarks/mark_user_memory.py``).
Deadlines are on ``time.monotonic()``, so a step of the wall clock moves no wake.
"""

from __future__ import annotations

import heapq
import time
import weakref
from typing import Any

import gevent
from gevent.exceptions import InvalidSwitchError

#: a key is the deadline in nanoseconds since the wheel was made, shifted left over a sequence number, so that two
#: sleepers with one deadline wake in the order they slept and no two keys are equal (a tuple compares its greenlets)
SEQUENCE_BITS = 32
SEQUENCE_MASK = (1 << SEQUENCE_BITS) - 1
#: an entry due within this much of now is woken now: libev counts a timer from its loop's cached time, a hair
#: before the deadline read here, and would otherwise fire once more for nothing
EARLY_SECONDS = 0.0005

#: what the wheel hands a sleeper it wakes: anything else that switches in is a stray switch
WOKEN = object()


class SleepWheel:
    """The sleepers of one hub, in one heap of ``(key, greenlet)``, woken by one timer armed for the earliest."""

    __slots__ = ("__weakref__", "_armed_key", "_cancelled", "_heap", "_hub", "_origin", "_sequence", "_timer")

    def __init__(self, hub: Any) -> None:
        self._hub = hub
        self._origin = time.monotonic()
        self._heap: list[tuple[int, Any]] = []
        self._cancelled: set[int] = set()  # keys whose sleeper left without its wake (a kill, a stray switch)
        self._sequence = 0
        self._timer: Any = None
        self._armed_key: int | None = None

    def __len__(self) -> int:
        """Sleepers still waiting for their wake."""
        return len(self._heap) - len(self._cancelled)

    @property
    def armed(self) -> bool:
        """Whether a timer stands armed (for the earliest sleeper still waiting)."""
        return self._timer is not None

    def sleep(self, seconds: float) -> None:
        """Sleep this greenlet ``seconds`` (> 0); a kill lands here, a switch in from anything else is refused."""
        self._sequence = sequence = (self._sequence + 1) & SEQUENCE_MASK
        key = (round((time.monotonic() - self._origin + seconds) * 1e9) << SEQUENCE_BITS) | sequence
        heapq.heappush(self._heap, (key, gevent.getcurrent()))
        if self._armed_key is None or key < self._armed_key:
            self._arm(key)
        woken = None
        try:
            woken = self._hub.switch()
        finally:
            if woken is not WOKEN:  # left without its wake: the entry wakes no one
                self._cancel(key)
        if woken is not WOKEN:
            raise InvalidSwitchError(f"a sleeping user was switched into with {woken!r}, not by its timer")

    def _cancel(self, key: int) -> None:
        self._cancelled.add(key)
        if self._heap and self._heap[0][0] == key:  # the one the timer stands for: arm for the next, or none
            self._drop_cancelled_tops()
            self._arm_for_the_earliest()

    def _drop_cancelled_tops(self) -> None:
        heap, cancelled = self._heap, self._cancelled
        while heap and heap[0][0] in cancelled:
            cancelled.discard(heapq.heappop(heap)[0])

    def _arm_for_the_earliest(self) -> None:
        if self._heap:
            if self._armed_key != self._heap[0][0]:
                self._arm(self._heap[0][0])
        elif self._timer is not None:
            self._timer.close()
            self._timer, self._armed_key = None, None

    def _arm(self, key: int) -> None:
        if self._timer is not None:
            self._timer.close()
        loop = self._hub.loop
        loop.update_now()  # libev counts the timer from its loop's time: now, not the loop's last turn
        seconds = (key >> SEQUENCE_BITS) / 1e9 - (time.monotonic() - self._origin)
        self._timer = loop.timer(max(0.0, seconds))
        self._armed_key = key
        self._timer.start(self._wake)

    def _wake(self) -> None:
        """The timer fired (in the hub): wake every sleeper now due, in key order, then arm for the next."""
        self._timer.close()
        self._timer, self._armed_key = None, None
        due = (round((time.monotonic() - self._origin + EARLY_SECONDS) * 1e9) << SEQUENCE_BITS) | SEQUENCE_MASK
        heap, cancelled = self._heap, self._cancelled
        try:
            while heap and heap[0][0] <= due:  # bounded: a sleeper woken here sleeps again past ``due``
                key, greenlet = heapq.heappop(heap)
                if key in cancelled:
                    cancelled.discard(key)
                else:
                    greenlet.switch(WOKEN)
        finally:
            self._drop_cancelled_tops()
            self._arm_for_the_earliest()


_WHEELS: weakref.WeakKeyDictionary[Any, SleepWheel] = weakref.WeakKeyDictionary()


def wheel() -> SleepWheel:
    """This thread's hub's wheel (made on first use; it goes with its hub)."""
    hub = gevent.get_hub()
    found = _WHEELS.get(hub)
    if found is None:
        found = _WHEELS[hub] = SleepWheel(hub)
    return found
