"""Idle sessions swept as mcp-go sweeps them (every TTL/2: a session lives 1.0 to 1.5 TTL after its last request),
and the fetch-dedup store's WARN per eviction past its cap; unit tests on fake SDK transports, then the real gateway.
"""

from __future__ import annotations

import math
import time
import urllib.request

import pytest
from gevent import monkey

monkey.patch_all()

from swarmgauge.targets.mcp_gateway import launch  # noqa: E402
from swarmgauge.targets.mcp_gateway.sessions import HOLD, FetchDedup, SessionSweeper, sweep_period  # noqa: E402
from swarmgauge.users.mcp_client import MCPClient  # noqa: E402

FIRST = "/corpus/quic/doc-0000.md"


class FakeIdleScope:
    """The SDK transport's idle scope: a deadline the SDK re-arms after each request (inf while one is in flight)."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.cancel_called = False

    def cancel(self) -> None:
        self.cancel_called = True


class FakeTransport:
    def __init__(self, last_active: float | None) -> None:
        self.idle_scope = FakeIdleScope(math.inf if last_active is None else last_active + HOLD)


def test_the_sweep_period_is_half_the_ttl_and_at_least_a_second():
    assert sweep_period(1800) == 900 and sweep_period(1.2) == 1.0


def test_a_sweep_ends_only_the_sessions_idle_for_the_ttl_and_never_one_in_flight():
    swept: list[str] = []
    sweeper = SessionSweeper(10.0, swept.append)
    table = {"old": FakeTransport(0.0), "fresh": FakeTransport(5.0), "busy": FakeTransport(None)}
    assert sweeper.sweep(table, now=10.0) == 1
    assert swept == ["old"] and table["old"].idle_scope.cancel_called
    assert not table["fresh"].idle_scope.cancel_called and not table["busy"].idle_scope.cancel_called
    assert sweeper.counts.swept == 1 and sweeper.counts.idle_min == 10.0


def test_ticking_every_half_ttl_a_session_lives_between_one_and_one_and_a_half_ttl():
    ttl = 10.0
    for last_active in [0.0, 0.1, 2.5, 4.9, 5.0, 7.3, 9.99]:
        sweeper = SessionSweeper(ttl)
        table = {"s": FakeTransport(last_active)}
        tick = 0.0
        while not table["s"].idle_scope.cancel_called:
            tick += sweep_period(ttl)
            sweeper.sweep(table, now=tick)
        assert ttl <= tick - last_active <= 1.5 * ttl


def test_the_dedup_store_warns_once_per_eviction_past_its_cap_and_forgets_dropped_sessions():
    dedup = FetchDedup(cap=2)
    assert not dedup.seen("a", FIRST, "e1") and dedup.seen("a", FIRST, "e1")
    dedup.seen("b", FIRST, "e1")
    assert dedup.warn_lines == 0
    dedup.seen("c", FIRST, "e1")
    dedup.seen("d", FIRST, "e1")
    assert dedup.warn_lines == 2 and dedup.sessions_after_full == 2 and len(dedup) == 2
    dedup.drop("d")
    dedup.seen("e", FIRST, "e1")  # room again after an unregister: no WARN
    assert dedup.warn_lines == 2 and dedup.sessions_after_full == 3


def _metrics(base_url: str) -> dict[str, float]:
    with urllib.request.urlopen(base_url + "/metrics", timeout=5) as response:
        lines = response.read().decode().splitlines()
    return {line.split()[0]: float(line.split()[1]) for line in lines if line and not line.startswith("#")}


@pytest.mark.integration
@pytest.mark.timeout(60)
def test_the_gateway_sweeps_idle_sessions_no_sooner_than_the_ttl_and_warns_past_the_dedup_cap():
    ttl = 2.0
    process = launch(["--session-idle-timeout", str(ttl), "--dedup-cap", "2"])
    try:
        clients = [MCPClient(process.base_url, timeout=10.0, require_session_id=True) for _ in range(3)]
        for client in clients:
            client.open_session()
            client.call_tool("mark_fetch", {"url": FIRST})
        seen = _metrics(process.base_url)
        assert seen["mcp_gateway_dedup_warn_lines"] == 1 and seen["mcp_gateway_dedup_sessions"] == 2
        deadline = time.monotonic() + 20
        while seen["mcp_gateway_sessions_live"] and time.monotonic() < deadline:
            time.sleep(0.5)
            seen = _metrics(process.base_url)
        assert seen["mcp_gateway_sessions_live"] == 0 and seen["mcp_gateway_sessions_swept"] == 3
        assert seen["mcp_gateway_swept_idle_min_seconds"] >= ttl
        assert seen["mcp_gateway_dedup_sessions"] == 0  # the unregister hook dropped their state
    finally:
        process.stop()


@pytest.mark.integration
@pytest.mark.timeout(60)
def test_with_the_sdk_reaping_each_session_there_is_no_sweep():
    process = launch(["--session-idle-timeout", "2", "--session-reaper", "per-session"])
    try:
        client = MCPClient(process.base_url, timeout=10.0, require_session_id=True)
        client.open_session()
        client.call_tool("mark_fetch", {"url": FIRST})
        seen = _metrics(process.base_url)
        assert "mcp_gateway_sweeps" not in seen and seen["mcp_gateway_sessions_live"] == 1
    finally:
        process.stop()
