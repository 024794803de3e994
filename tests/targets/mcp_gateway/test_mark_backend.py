"""The gateway's Mark client against the real reference server: qh3 by default (the cheaper hop), aioquic alike."""

from __future__ import annotations

import asyncio

import pytest

from swarmgauge.targets.launch import launch_target
from swarmgauge.targets.mark.seed import corpus_paths
from swarmgauge.targets.mcp_gateway.mark_backend import MarkBackend, parse_mark_url


@pytest.fixture(scope="module")
def mark_server():
    handle = launch_target("mark", ["--port", "0", "--seed-corpus", "5"])
    yield handle
    handle.stop()


def _fetch_twice(backend: MarkBackend, path: str) -> list[str]:
    async def run() -> list[str]:
        try:
            return [(await backend.request("FETCH", path)).status for _ in range(2)]
        finally:
            await backend.close()

    return asyncio.run(run())


def test_the_gateway_reaches_mark_over_qh3_by_default(mark_server):
    backend = MarkBackend(parse_mark_url(mark_server.url))
    assert backend.engine.name == "qh3"
    assert _fetch_twice(backend, corpus_paths(5)[0]) == ["ok", "ok"]


def test_the_gateway_can_still_reach_mark_over_aioquic(mark_server):
    backend = MarkBackend(parse_mark_url(mark_server.url), quic_engine="aioquic")
    assert _fetch_twice(backend, corpus_paths(5)[0]) == ["ok", "ok"]
