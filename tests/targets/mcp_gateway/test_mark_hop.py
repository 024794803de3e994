"""The gateway's QUIC hop to the real Mark server over UDP, on each engine: more calls at once than the 10 streams
it keeps in flight, answered with the corpus bytes; a Mark server gone is a tool error that says so; restarted on
the same port, the next calls reopen the connection."""

from __future__ import annotations

import socket
import time
import urllib.request

import pytest
from gevent import monkey

monkey.patch_all()

import gevent.pool  # noqa: E402

from swarmgauge.protocols import mcp as proto  # noqa: E402
from swarmgauge.quic.engine import ENGINES  # noqa: E402
from swarmgauge.targets.launch import launch_target  # noqa: E402
from swarmgauge.targets.mark.seed import corpus  # noqa: E402
from swarmgauge.targets.mcp_gateway import launch  # noqa: E402
from swarmgauge.users.mcp_client import MCPClient  # noqa: E402

pytestmark = pytest.mark.integration  # starts servers and processes
DOCS = {doc.path: doc for doc in corpus(40)}


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _metrics(base_url: str) -> dict[str, float]:
    with urllib.request.urlopen(base_url + "/metrics", timeout=5) as response:
        lines = response.read().decode().splitlines()
    return {line.split()[0]: float(line.split()[1]) for line in lines if line and not line.startswith("#")}


def _fetch(base_url: str, paths: list[str]) -> list[str]:
    client = MCPClient(base_url, timeout=15.0)
    try:
        client.open_session()
        return [proto.parse_tool_text(client.call_tool("mark_fetch", {"url": path})).body for path in paths]
    finally:
        client.close()


def _mark(port: int):
    return launch_target("mark", ["--port", str(port), "--seed-corpus", "40"])


@pytest.mark.timeout(120)
@pytest.mark.parametrize("quic_engine", ENGINES)
def test_the_hop_serves_more_calls_than_its_streams_and_reopens_after_the_mark_server_restarts(quic_engine):
    port = _free_udp_port()
    mark = _mark(port)
    gateway = launch(["--mark", mark.url, "--mark-quic-engine", quic_engine, "--mark-timeout", "1"])
    try:
        paths = sorted(DOCS)
        batches = [paths[i::16] for i in range(16)]  # 16 sessions at once: past the hop's 10 streams in flight
        answers = gevent.pool.Pool(16).map(lambda batch: _fetch(gateway.base_url, batch), batches)
        for batch, bodies in zip(batches, answers, strict=True):
            assert bodies == [DOCS[path].body.decode() for path in batch]
        seen = _metrics(gateway.base_url)
        assert seen[f'mcp_gateway_mark_quic_engine{{engine="{quic_engine}"}}'] == 1
        assert seen["mcp_gateway_mark_connections"] == 1

        mark.stop()
        client = MCPClient(gateway.base_url, timeout=15.0)
        client.open_session()
        with pytest.raises(proto.ToolError) as gone:
            client.call_tool("mark_fetch", {"url": paths[0]})
        assert "TimeoutError" in gone.value.text or "cannot reach" in gone.value.text

        mark = _mark(port)
        deadline, fetched = time.monotonic() + 20, None
        while fetched is None and time.monotonic() < deadline:
            try:
                fetched = proto.parse_tool_text(client.call_tool("mark_fetch", {"url": paths[1]}))
            except proto.ToolError:  # the first call may still find the lost connection: it times out and drops it
                time.sleep(0.2)
        assert fetched is not None and fetched.body == DOCS[paths[1]].body.decode()
        assert _metrics(gateway.base_url)["mcp_gateway_mark_connections"] == 2
        client.close()
    finally:
        gateway.stop()
        mark.stop()
