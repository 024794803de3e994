"""The stand-in's CGMiner mock and the Worker's device calls, as protocols: one request a connection, the reply after
its modelled cost and then close, no reply to a garbled or unknown command; a call names the device's failure
(refused, timed out, garbled) as the Avalon driver's error codes."""

from __future__ import annotations

import asyncio

import pytest

from swarmgauge.protocols import cgminer
from swarmgauge.targets.mdk import mock
from swarmgauge.targets.mdk.mock import MockMiner, serve_listener
from swarmgauge.targets.mdk.stack import free_port
from swarmgauge.targets.mdk.worker import DeviceDriver, DeviceError

pytestmark = pytest.mark.timeout(30)
HOST = "127.0.0.1"


async def exchange(port: int, payload: bytes) -> bytes:
    reader, writer = await asyncio.open_connection(HOST, port)
    writer.write(payload)
    try:
        return await asyncio.wait_for(reader.read(), 5.0)
    finally:
        writer.close()


def run_with_mock(body, cost_ms: tuple[float, float] = (0.0, 0.0)):
    async def main():
        port = free_port()
        server = await serve_listener(HOST, port, MockMiner(cost_ms, 1.0))
        try:
            return await body(port)
        finally:
            server.close()

    return asyncio.run(main())


def test_a_snap_answers_after_its_cost_and_the_mock_closes_the_connection():
    async def body(port: int):
        loop = asyncio.get_running_loop()
        started = loop.time()
        data = await exchange(port, b"summary")
        return data, loop.time() - started

    data, took = run_with_mock(body, cost_ms=(200.0, 200.0))
    reply = cgminer.decode_reply(data)
    assert reply.ok and "MHS av" in reply.section("SUMMARY")
    assert took >= 0.19  # the modelled live read, then EOF (reader.read() returned: the mock closed)


def test_cached_channels_and_commands_answer_and_set_the_miners_state():
    async def body(port: int):
        await exchange(port, b"ascset|0,workmode,0")
        return cgminer.decode_reply(await exchange(port, b"estats"))

    assert run_with_mock(body).section("STATS")["WORKMODE"] == "0"


@pytest.mark.parametrize("payload", [b"no such words!", b"frobnicate", b""])
def test_garbled_unknown_or_empty_requests_get_no_reply_and_a_closed_connection(payload):
    async def body(port: int):
        reader, writer = await asyncio.open_connection(HOST, port)
        writer.write(payload)
        if not payload:
            writer.write_eof()
        try:
            return await asyncio.wait_for(reader.read(), 5.0)
        finally:
            writer.close()

    assert run_with_mock(body) == b""


def test_a_silent_client_is_closed_after_the_request_wait(monkeypatch):
    monkeypatch.setattr(mock, "REQUEST_WAIT_S", 0.2)

    async def body(port: int):
        reader, writer = await asyncio.open_connection(HOST, port)
        try:
            return await asyncio.wait_for(reader.read(), 5.0)
        finally:
            writer.close()

    assert run_with_mock(body) == b""


def test_a_device_call_returns_the_reply_and_names_each_failure():
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(5.0)
        writer.close()

    async def garbled(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(100)
        writer.write(b"this is no cgminer reply")
        writer.close()

    async def body(port: int):
        answered = await DeviceDriver("d", HOST, port, 5.0, 2.0)._call("summary")
        codes = []
        refused = free_port()  # nothing listens there
        hung_port, garbled_port = free_port(), free_port()
        hung = await asyncio.start_server(silent, HOST, hung_port)
        bad = await asyncio.start_server(garbled, HOST, garbled_port)
        try:
            for target, timeout in ((refused, 2.0), (hung_port, 0.3), (garbled_port, 2.0)):
                with pytest.raises(DeviceError) as failed:
                    await DeviceDriver("d", HOST, target, 5.0, timeout)._call("summary")
                codes.append(failed.value.code)
        finally:
            hung.close()
            bad.close()
        return answered, codes

    answered, codes = run_with_mock(body)
    assert answered.ok and answered.section("SUMMARY")
    assert codes == ["ECONNREFUSED", "ETIMEDOUT", "EPROTO"]
