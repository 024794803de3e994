"""The stand-in's plumbing as protocols: the JSON-lines RPC matches replies to calls by id with many in flight, and
names a late or lost peer; the Gateway's HTTP server answers pipelined requests in order, a half-closed client
still, and closes on a garbled request line."""

from __future__ import annotations

import asyncio
import socket

import pytest

from swarmgauge.targets.mdk import httpserver, rpc
from swarmgauge.targets.mdk.httpserver import HttpRequest, HttpResponse
from swarmgauge.targets.mdk.stack import free_port

pytestmark = pytest.mark.timeout(30)
HOST = "127.0.0.1"


async def _echo_later(params: dict) -> dict:
    await asyncio.sleep(params["wait"])
    return {"n": params["n"]}


async def _fails(params: dict) -> dict:
    raise rpc.RpcError("ERR_SOMETHING")


async def _buggy(params: dict) -> dict:
    return params["missing"]


def test_rpc_calls_in_flight_get_their_own_replies_and_errors_by_code():
    async def main():
        port = free_port()
        server = await rpc.serve(HOST, port, {"echo": _echo_later, "fails": _fails, "buggy": _buggy})
        client = rpc.RpcClient(HOST, port)
        try:
            # later calls answer first: each reply still reaches its own caller
            answers = await asyncio.gather(*(client.call("echo", {"n": n, "wait": (20 - n) / 1000}) for n in range(20)))
            codes = []
            for method in ("fails", "buggy", "nope"):
                with pytest.raises(rpc.RpcError) as failed:
                    await client.call(method)
                codes.append(failed.value.code)
            return answers, codes
        finally:
            client.close()
            server.close()

    answers, codes = asyncio.run(main())
    assert [a["n"] for a in answers] == list(range(20))
    assert codes == ["ERR_SOMETHING", "ERR_INTERNAL: KeyError", "ERR_METHOD_NOT_FOUND"]


def test_rpc_a_late_peer_is_a_timeout_and_a_lost_one_unavailable_then_the_client_reconnects():
    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readline()
        writer.close()  # a peer that dies with the call in flight

    async def main():
        port = free_port()
        client = rpc.RpcClient(HOST, port)
        with pytest.raises(rpc.RpcUnavailable):
            await client.call("echo", {"n": 0, "wait": 0})  # nobody listens yet
        dropper = await asyncio.start_server(hang_up, HOST, port)
        try:
            with pytest.raises(rpc.RpcUnavailable):
                await client.call("echo", {"n": 1, "wait": 0})
        finally:
            dropper.close()
            await dropper.wait_closed()
        server = await rpc.serve(HOST, port, {"echo": _echo_later})
        try:
            with pytest.raises(rpc.RpcTimeout):
                await client.call("echo", {"n": 2, "wait": 5.0}, timeout=0.1)
            return await client.call("echo", {"n": 3, "wait": 0})
        finally:
            client.close()
            server.close()

    assert asyncio.run(main()) == {"n": 3}


async def _app(request: HttpRequest) -> HttpResponse:
    await asyncio.sleep(0.05 if request.path == "/slow" else 0)
    return HttpResponse.json(200, {"path": request.path, "query": request.query, "body": request.body.decode()})


def _http(port: int, payload: bytes, half_close: bool = False) -> bytes:
    with socket.create_connection((HOST, port), timeout=5) as sock:
        sock.sendall(payload)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def _with_server(exchange):
    async def main():
        port = free_port()
        server = await httpserver.serve(HOST, port, _app)
        try:
            return await asyncio.to_thread(exchange, port)
        finally:
            server.close()

    return asyncio.run(main())


def test_pipelined_requests_are_answered_in_order_and_a_half_closed_client_gets_its_answers():
    pipelined = (
        b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"
        b"POST /b?x=1&x=2 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
        b"GET /c%20d HTTP/1.1\r\nConnection: close\r\n\r\n"
    )
    answer = _with_server(lambda port: _http(port, pipelined))
    assert answer.count(b"HTTP/1.1 200 OK") == 3
    assert answer.index(b'"/slow"') < answer.index(b'"/b"') < answer.index(b'"/c d"')
    assert b'"query":{"x":["1","2"]},"body":"hello"' in answer
    half_closed = _with_server(lambda port: _http(port, b"GET /slow HTTP/1.1\r\n\r\n", half_close=True))
    assert half_closed.startswith(b"HTTP/1.1 200 OK") and half_closed.endswith(b'"body":""}')


def test_a_garbled_request_line_is_a_400_and_a_closed_connection():
    answer = _with_server(lambda port: _http(port, b"NONSENSE\r\n\r\nGET / HTTP/1.1\r\n\r\n"))
    assert answer.startswith(b"HTTP/1.1 400 Bad Request") and answer.count(b"HTTP/1.1") == 1
