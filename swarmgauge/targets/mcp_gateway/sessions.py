"""Session lifetime and the fetch-dedup store as the page's Go gateway (mcp-go, demarkus broker) has them.

``SessionSweeper``: mcp-go's ``WithSessionIdleTTL`` runs one ticker every ``max(TTL/2, 1 s)`` that removes the
sessions idle for at least the TTL, so a session lives 1.0 to 1.5 TTL after its last request (the page: "30 to 45
minutes, not 30"). The SDK reaps each session on its own deadline (exactly the TTL); to sweep instead, the SDK is
given a far-off idle deadline (``HOLD``), which it re-arms after every request, so ``deadline - HOLD`` is the
session's last activity; each tick cancels the idle scope of the sessions past the TTL and the SDK's own idle path
removes them.

``FetchDedup``: the broker keeps per-session fetch-dedup state, capped at 4,096 sessions, dropped when a session
is unregistered; past the cap it evicts the oldest and logs a WARN for every eviction (the page's log spam).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("swarmgauge.target.mcp.sessions")

#: the SDK's idle deadline while sweeping: far enough never to fire by itself (about 30 years)
HOLD = 1e9
DEDUP_CAP = 4096
REAPERS = ("sweep", "per-session")


def sweep_period(ttl: float) -> float:
    """mcp-go's ticker: every half TTL, at least every second."""
    return max(ttl / 2, 1.0)


@dataclass
class SweepCounts:
    sweeps: int = 0
    swept: int = 0
    largest_sweep: int = 0
    idle_min: float = math.nan
    idle_max: float = math.nan

    def record(self, idle: float) -> None:
        self.swept += 1
        self.idle_min = idle if math.isnan(self.idle_min) else min(self.idle_min, idle)
        self.idle_max = idle if math.isnan(self.idle_max) else max(self.idle_max, idle)


class SessionSweeper:
    """Every ``sweep_period(ttl)``, end the sessions idle for ``ttl`` or more (by the SDK's re-armed deadline)."""

    def __init__(self, ttl: float, on_swept: Callable[[str], None] = lambda _sid: None) -> None:
        self.ttl = ttl
        self.counts = SweepCounts()
        self._on_swept = on_swept

    def sweep(self, transports: Mapping[str, Any], now: float) -> int:
        """One tick over ``{session id: transport}``; returns how many sessions it ended."""
        removed = 0
        for session_id, transport in list(transports.items()):
            scope = getattr(transport, "idle_scope", None)
            if scope is None or scope.cancel_called or not math.isfinite(scope.deadline):
                continue  # not connected yet, already ending, or a request in flight
            idle = now - (scope.deadline - HOLD)
            if idle >= self.ttl:
                scope.cancel()
                self.counts.record(idle)
                self._on_swept(session_id)
                removed += 1
        self.counts.sweeps += 1
        self.counts.largest_sweep = max(self.counts.largest_sweep, removed)
        return removed

    async def run(self, transports: Callable[[], Mapping[str, Any]], now: Callable[[], float]) -> None:
        while True:
            await asyncio.sleep(sweep_period(self.ttl))
            self.sweep(transports(), now())


class FetchDedup:
    """Per-session sets of fetched (path, etag), capped at ``cap`` sessions; one WARN line per eviction."""

    def __init__(self, cap: int = DEDUP_CAP) -> None:
        self.cap = cap
        self._sessions: OrderedDict[str, set[tuple[str, str]]] = OrderedDict()
        self.warn_lines = 0
        self.sessions_after_full = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def seen(self, session_id: str, path: str, etag: str) -> bool:
        """Whether this session fetched this version before; records it."""
        fetched = self._sessions.get(session_id)
        if fetched is None:
            if len(self._sessions) >= self.cap:
                evicted, _ = self._sessions.popitem(last=False)
                self.warn_lines += 1
                log.warning("fetch dedup store at its cap of %d sessions: evicted session %s", self.cap, evicted[:8])
            if self.warn_lines:
                self.sessions_after_full += 1
            fetched = self._sessions[session_id] = set()
        key = (path, etag)
        if key in fetched:
            return True
        fetched.add(key)
        return False

    def drop(self, session_id: str) -> None:
        """The session-unregister hook: its state goes with it."""
        self._sessions.pop(session_id, None)
