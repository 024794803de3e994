"""The reference server's batched sends: runs the kernel can segment back exactly, delivered intact on real UDP
sockets, a refused GSO falling back, and a two-datagram answer leaving the server in one system call."""

from __future__ import annotations

import asyncio
import socket
import sys

import pytest

from swarmgauge.protocols.mark import parse_response
from swarmgauge.quic.engine import engine
from swarmgauge.targets.mark.batch_send import MAX_GSO_BYTES, MAX_SEGMENTS, BatchSender, gso_groups
from swarmgauge.targets.mark.cli import build_parser, build_service
from swarmgauge.targets.mark.seed import corpus_paths
from swarmgauge.targets.mark.server import ALPN, start_server
from swarmgauge.targets.mark.tls import dev_certificate

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="UDP GSO is Linux's")
SO_NO_CHECK = 11  # Linux: no UDP checksum, with which the kernel refuses GSO (EINVAL)


def fetch_request(path: str) -> bytes:
    return f"FETCH {path}\n".encode()


def sizes(groups: list[list[bytes]]) -> list[list[int]]:
    return [[len(data) for data in group] for group in groups]


def datagrams(*lengths: int) -> list[bytes]:
    """Datagrams whose bytes say which one they are, so a wrong cut shows in the contents, not only the sizes."""
    return [bytes([n % 251]) * length for n, length in enumerate(lengths)]


def test_equal_sizes_with_a_shorter_last_are_one_run():
    assert sizes(gso_groups(datagrams(1200, 1200, 500))) == [[1200, 1200, 500]]


def test_a_shorter_datagram_in_the_middle_ends_its_run():
    assert sizes(gso_groups(datagrams(1200, 500, 1200, 1200))) == [[1200, 500], [1200, 1200]]


def test_a_longer_datagram_starts_a_new_run():
    assert sizes(gso_groups(datagrams(500, 1200, 1200))) == [[500], [1200, 1200]]


def test_runs_stop_at_the_segment_limit_and_at_64_kib():
    assert sizes(gso_groups(datagrams(*[100] * (MAX_SEGMENTS + 1)))) == [[100] * MAX_SEGMENTS, [100]]
    per_run = MAX_GSO_BYTES // 1200  # 54
    groups = gso_groups(datagrams(*[1200] * 60))
    assert sizes(groups) == [[1200] * per_run, [1200] * (60 - per_run)]
    assert all(sum(map(len, group)) <= MAX_GSO_BYTES for group in groups)


def test_order_and_contents_are_kept():
    sent = datagrams(1200, 1200, 300, 1200, 700, 800, 800)
    assert [data for group in gso_groups(sent) for data in group] == sent


class CountingSocket:
    """The real socket, with each ``sendmsg`` call recorded (its datagram sizes)."""

    def __init__(self, sock: socket.socket, log: list | None = None) -> None:
        self.sock = sock
        self.calls: list[list[int]] = []
        self.log = [] if log is None else log

    def sendmsg(self, buffers, ancillary, flags, address):
        self.calls.append([len(data) for data in buffers])
        self.log.append(("sendmsg", self.calls[-1]))
        return self.sock.sendmsg(buffers, ancillary, flags, address)

    def close(self) -> None:
        self.sock.close()


class CountingTransport:
    """The real asyncio transport, with each ``sendto`` call recorded (its datagram size)."""

    def __init__(self, transport: asyncio.DatagramTransport, log: list | None = None) -> None:
        self.transport = transport
        self.calls: list[int] = []
        self.log = [] if log is None else log

    def sendto(self, data: bytes, address=None) -> None:
        self.calls.append(len(data))
        self.log.append(("sendto", [len(data)]))
        self.transport.sendto(data, address)

    def __getattr__(self, name: str):
        return getattr(self.transport, name)


def receive_all(receiver: socket.socket, count: int) -> list[bytes]:
    got = []
    for _ in range(count):
        got.append(receiver.recv(70_000))
    return got


async def with_sender(run, *, refuse_gso: bool = False) -> None:
    """``run(sender, receiver_socket)`` with a real sender transport and receiver socket on loopback."""
    loop = asyncio.get_running_loop()
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.settimeout(5)
    transport, _ = await loop.create_datagram_endpoint(asyncio.DatagramProtocol, local_addr=("127.0.0.1", 0))
    sender = BatchSender.over(transport)
    if refuse_gso:
        sender.sock.setsockopt(socket.SOL_SOCKET, SO_NO_CHECK, 1)  # the real kernel then refuses GSO
    sender.sock = CountingSocket(sender.sock)
    sender.transport = CountingTransport(transport)
    try:
        await run(sender, receiver)
    finally:
        sender.close()
        transport.close()
        receiver.close()


@linux_only
@pytest.mark.parametrize(
    "lengths, sendmsg_calls",
    [
        ((1200, 1200, 500), [[1200, 1200, 500]]),
        ((1200, 500, 1200, 1200), [[1200, 500], [1200, 1200]]),  # one big cut after a short middle one is wrong
        ((1100,) * 70, [[1100] * (MAX_GSO_BYTES // 1100)] + [[1100] * (70 - MAX_GSO_BYTES // 1100)]),
        ((100,) * 130, [[100] * 64, [100] * 64, [100, 100]]),
    ],
)
def test_batches_arrive_as_sent_in_few_calls(lengths, sendmsg_calls):
    sent = datagrams(*lengths)

    async def run(sender, receiver):
        sender.send(sent, receiver.getsockname())
        assert receive_all(receiver, len(sent)) == sent
        assert sender.sock.calls == sendmsg_calls
        assert sender.gso

    asyncio.run(with_sender(run))


@linux_only
def test_a_refused_gso_falls_back_to_one_sendto_a_datagram_and_delivers():
    sent = datagrams(1200, 1200, 500)

    async def run(sender, receiver):
        sender.send(sent, receiver.getsockname())
        assert receive_all(receiver, 3) == sent
        assert sender.sock.calls == [[1200, 1200, 500]]  # tried once, refused by the kernel
        assert not sender.gso
        assert sender.transport.calls == [1200, 1200, 500]
        sender.send(sent, receiver.getsockname())
        assert receive_all(receiver, 3) == sent
        assert len(sender.sock.calls) == 1  # not tried again
        assert sender.transport.calls == [1200, 1200, 500] * 2

    asyncio.run(with_sender(run, refuse_gso=True))


def test_one_datagram_goes_by_the_transport():
    async def run(sender, receiver):
        sender.send(datagrams(300), receiver.getsockname())
        assert receive_all(receiver, 1) == datagrams(300)
        assert sender.sock.calls == [] and sender.transport.calls == [300]

    asyncio.run(with_sender(run))


async def fetch(quic_engine, port: int, path: str) -> bytes:
    configuration = quic_engine.client_configuration(
        alpn=ALPN, insecure=True, ca_file=None, server_name="localhost", idle_timeout=10.0
    )
    async with quic_engine.connect("127.0.0.1", port, configuration=configuration) as client:
        reader, writer = await client.create_stream()
        writer.write(fetch_request(path))
        writer.write_eof()
        return await asyncio.wait_for(reader.read(), 10)


@linux_only
@pytest.mark.integration
@pytest.mark.parametrize("engine_name", ["qh3", "aioquic"])
def test_a_two_datagram_answer_leaves_the_server_in_one_call(engine_name):
    """A FETCH whose answer needs two datagrams, over real QUIC: the server sends both with one ``sendmsg``."""
    args = build_parser().parse_args(["--port", "0", "--seed-corpus", "300", "--quic-engine", engine_name])
    service = build_service(args)
    quic_engine = engine(engine_name)

    async def run() -> None:
        server, port = await start_server(service, dev_certificate(), "127.0.0.1", 0)
        try:
            await fetch(quic_engine, port, "/health")  # the first connection makes the server's sender
            sender = service.batch_sender
            assert sender is not None and sender.gso
            calls: list[tuple[str, list[int]]] = []
            sender.sock = CountingSocket(sender.sock, calls)
            sender.transport = CountingTransport(sender.transport, calls)
            path = next(p for p in corpus_paths(300) if 1500 <= len(service.handler.handle(fetch_request(p))) <= 2000)
            async with quic_engine.connect(
                "127.0.0.1",
                port,
                configuration=quic_engine.client_configuration(
                    alpn=ALPN, insecure=True, ca_file=None, server_name="localhost", idle_timeout=10.0
                ),
            ) as client:
                await client.ping()
                await asyncio.sleep(0.1)  # the handshake's last datagrams and ACKs have gone
                calls.clear()
                reader, writer = await client.create_stream()
                writer.write(fetch_request(path))
                writer.write_eof()
                answer = await asyncio.wait_for(reader.read(), 10)
                assert parse_response(answer).status == "ok"
                await asyncio.sleep(0.1)  # the server's later datagrams (ACKs, stream credit) are sent too
                answer_calls = [call for call in calls if max(call[1]) >= 1000]  # the rest: ACKs or credits alone
                assert len(answer_calls) == 1, calls
                kind, segments = answer_calls[0]
                assert kind == "sendmsg" and len(segments) == 2 and segments[1] <= segments[0], calls
        finally:
            server.close()
            service.close()

    asyncio.run(run())
