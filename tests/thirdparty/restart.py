"""Drive a user through a target's kill and restart, and check the outage the way issue 18 asks for it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gevent

RECOVERY = 3.0  # seconds after the target is back by which calls must succeed again


@dataclass
class Outage:
    killed: float
    listening: float
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def failures(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e["exception"] is not None]

    def window(self) -> tuple[float, float]:
        """(first failure's start - kill, last failure's end - back up), in seconds."""
        first = min(e["start_time"] for e in self.failures) - self.killed
        last = max(e["start_time"] + e["response_time"] / 1000 for e in self.failures) - self.listening
        return first, last

    def check(self, allowed_names: set[str]) -> None:
        failures = self.failures
        assert failures, "the kill must show"
        assert {type(e["exception"]).__name__ for e in failures} <= allowed_names, failures
        assert all(e["start_time"] + e["response_time"] / 1000 >= self.killed for e in failures)
        assert all(e["start_time"] <= self.listening + RECOVERY for e in failures)
        after = [e for e in self.events if e["start_time"] > self.listening + RECOVERY]
        assert after and all(e["exception"] is None for e in after)

    def summary(self, name: str) -> str:
        first, last = self.window()
        kinds = sorted({type(e["exception"]).__name__ for e in self.failures})
        return (
            f"[{name}] outage: first failure {first:+.2f} s after the kill, last {last:+.2f} s after the target "
            f"was back; down {self.listening - self.killed:.2f} s; {len(self.failures)} failures {kinds}"
        )


def through_restart(
    events: list[dict[str, Any]],
    iterate: Callable[[], None],
    kill: Callable[[], None],
    start: Callable[[], None],
    *,
    before: float = 2.0,
    down: float = 1.5,
) -> Outage:
    """Run ``iterate`` in a loop while the target is killed, left down ``down`` s and started again."""
    running = [True]

    def loop() -> None:
        for _ in range(100_000):
            if not running[0]:
                return
            iterate()
            gevent.sleep(0.01)

    worker = gevent.spawn(loop)
    gevent.sleep(before)
    killed = time.time()
    kill()
    gevent.sleep(down)
    start()
    outage = Outage(killed, time.time())
    gevent.sleep(RECOVERY + 3.0)
    running[0] = False
    worker.join(timeout=30)
    assert worker.dead and worker.exception is None, "the user must live through the outage"
    outage.events = list(events)
    return outage
