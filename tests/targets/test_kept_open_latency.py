"""Every embedded HTTP target answers a kept-open connection in its configured time, and no slower than a new one.

A target that adds latency of its own on a kept-open connection (headers and body as two segments: Nagle plus
delayed ACK, about 40 ms) distorts every figure a load test takes through it. Per probe (the ones
``benchmarks/targets_kept_open.py`` prints figures for: the brain stand-in, the simulated HTTP backend, the MDK
Gateway stand-in, the MCP gateway in both answer modes, the real kneo-serv):

* a kept-open request costs no more than a new connection's (a new one pays its connect, so it is the upper bound);
* a target with a cost knob answers a kept-open connection in its configured cost over its own floor, within 2 ms:
  the same target started at cost 0 gives the floor (parsing, the Kernel and Worker hops of the MDK), so what is left
  is what the knob adds, and nothing of the target's own beside it.

Medians over ``REQUESTS`` round trips each; only behaviour is asserted, the figures are the benchmark's. A write
pattern's stall is on every attempt, a neighbour's load on some: each check is measured up to ``ATTEMPTS`` times
and holds when one attempt is within its bound (an attempt whose request timed out counts as one not within it); a
failure lists every attempt.
"""

from __future__ import annotations

import socket
import statistics
import threading
from pathlib import Path

import pytest

from benchmarks.targets_kept_open import PROBES, exchange, kept_and_fresh, row_key

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]  # starts each target; kneo may build its venv
REQUESTS = 40
OVER_FRESH_MS = 2.0  # a kept-open request skips the connect: it may not cost more than a new connection's ...
OVER_FRESH_SHARE = 0.1  # ... give or take a tenth of it, for a target whose own cost varies
OVER_COST_MS = 2.0  # the configured cost over the floor, kept open: what the issue asks, far below Nagle's 40 ms
ATTEMPTS = 3  # a loaded CI machine moved a median by 2-10 ms once; Nagle's 40 ms is there on every attempt
#: Probes whose time over cost and floor follows the machine's load, not a write pattern: the MDK telemetry read
#: passes four asyncio processes (mock miner, Worker, Kernel, Gateway) and measured 2.3, 2.8 and 9.5 ms over its
#: 5 ms at load averages of 8, 10 and 8.6 on 2 cores, while its kept-open median stayed within a new connection's.
#: Its bound is the one that still catches Nagle's 40 ms; the cause of the rest is not found yet.
LOAD_BOUND_OVER_COST_MS = {("mdk", "GET /api/fleet/device/ID/telemetry"): 20.0}
#: Probes whose answer is the service's own work, not its connection: a kneo run takes 25-130 ms of SQLite and
#: dispatch, so medians a side differ by more than Nagle's 40 ms on a loaded machine (a clean-clone CI run saw
#: 37.8 against 25.1 ms). kneo's connection is checked on GET /readyz; the run's figures stay in the benchmark.
SERVICE_BOUND = {("kneo", "POST /v1/runs (run sync, echo)")}
CONNECTION_PROBES = [p for p in PROBES if (p.name, p.request) not in SERVICE_BOUND]
COST_PROBES = [p for p in CONNECTION_PROBES if p.configured_ms is not None]


def _ids(probes) -> list[str]:
    return [row_key({"target": p.name, "request": p.request}) for p in probes]


def _medians(probe, cost_ms: float) -> tuple[float, float]:
    with probe.start(cost_ms) as (host, port, send):
        kept_ms, fresh_ms = kept_and_fresh(host, port, send, REQUESTS)
    return statistics.median(kept_ms), statistics.median(fresh_ms)


def _attempt(probe, cost_ms: float, seen: list[str]) -> tuple[float, float] | None:
    """One attempt's medians, or None when one of its requests waited out the client's timeout: on a loaded CI
    machine that is a stall of some attempts (one in a clean-clone run at -n 3), a hang is on every attempt."""
    try:
        return _medians(probe, cost_ms)
    except TimeoutError as exc:
        seen.append(f"an attempt at {cost_ms:g} ms timed out ({exc})")
        return None


@pytest.mark.parametrize("probe", CONNECTION_PROBES, ids=_ids(CONNECTION_PROBES))
def test_a_kept_open_connection_costs_no_more_than_a_new_one(probe, request):
    if probe.needs:
        request.getfixturevalue(probe.needs)
    seen: list[str] = []
    for _ in range(ATTEMPTS):
        medians = _attempt(probe, probe.configured_ms or 0.0, seen)
        if medians is None:
            continue
        kept, fresh = medians
        seen.append(f"kept p50 {kept:.1f}, fresh {fresh:.1f} ms")
        if kept <= fresh + max(OVER_FRESH_MS, OVER_FRESH_SHARE * fresh):
            return
    pytest.fail("; ".join(seen))


@pytest.mark.parametrize("probe", COST_PROBES, ids=_ids(COST_PROBES))
def test_a_kept_open_connection_takes_the_configured_cost_over_the_targets_floor(probe):
    allowed = LOAD_BOUND_OVER_COST_MS.get((probe.name, probe.request), OVER_COST_MS)
    seen: list[str] = []
    for _ in range(ATTEMPTS):
        floor_medians = _attempt(probe, 0.0, seen)
        kept_medians = _attempt(probe, probe.configured_ms, seen) if floor_medians is not None else None
        if floor_medians is None or kept_medians is None:
            continue
        floor, kept = floor_medians[0], kept_medians[0]
        added = kept - floor
        seen.append(f"kept-open p50 {kept:.2f} ms over a floor of {floor:.2f} ms: {added:.2f} ms")
        if abs(added - probe.configured_ms) <= allowed:
            return
    pytest.fail(f"for a configured {probe.configured_ms:g} ms: " + "; ".join(seen))


class FakeTwoSegmentServer:
    """A fake target with the fault these checks exist for: headers and body written as two segments with Nagle on,
    so on a kept-open connection the body waits for the client's delayed ACK. A thread per connection, bounded."""

    BODY = b"ok"

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(10)
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> FakeTwoSegmentServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.listener.close()
        self.thread.join(timeout=10)

    def _serve(self) -> None:
        for _ in range(4 * REQUESTS):  # the kept-open connection, its warm-up and one fresh connection per request
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer_each, args=(conn,), daemon=True).start()

    def _answer_each(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(10)
            self._answer(conn)

    def _answer(self, conn: socket.socket) -> None:
        for _ in range(2 * REQUESTS):
            try:
                if not conn.recv(65536):
                    return
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(self.BODY))
                conn.sendall(self.BODY)
            except OSError:
                return


def test_the_check_catches_a_target_that_writes_headers_and_body_as_two_segments():
    def send(conn) -> None:
        exchange(conn, "GET", "/")

    with FakeTwoSegmentServer() as fake:
        kept_ms, fresh_ms = kept_and_fresh("127.0.0.1", fake.port, send, REQUESTS)
    kept, fresh = statistics.median(kept_ms), statistics.median(fresh_ms)
    assert kept > fresh + max(OVER_FRESH_MS, OVER_FRESH_SHARE * fresh), f"kept p50 {kept:.1f}, fresh {fresh:.1f} ms"


#: modules and packages of ``targets/`` that serve no HTTP (or only start the ones that do)
NOT_HTTP = {
    "mark": "Mark over QUIC",
    "postgres": "PostgreSQL's own protocol",
    "launch": "starts a target as a child",
    "embedded": "starts a target from Locust's init",
    "brain-zombies": "a fault of the brain stand-in",
    "brain-http": "the brain stand-in's routes and server (probed as brain)",
    "brain-service": "the brain stand-in's state and route logic (probed as brain)",
    "pg-watchdog": "ends a throwaway PostgreSQL whose owner died; serves nothing",
}


def test_every_embedded_http_target_in_targets_is_probed():
    targets = Path(__file__).resolve().parents[2] / "swarmgauge" / "targets"
    found = {
        path.stem.replace("_", "-")
        for path in targets.iterdir()
        if (path.suffix == ".py" or (path.is_dir() and (path / "__init__.py").is_file())) and path.stem != "__init__"
    }
    assert found - set(NOT_HTTP) == {p.name.split()[0] for p in CONNECTION_PROBES}
