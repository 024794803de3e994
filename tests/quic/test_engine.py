"""The QUIC engine seam: each private field the adapter relies on still exists and still does what it did.

These fail loudly when an aioquic or qh3 upgrade moves an internal; nothing else in the project touches them.
Two in-memory connections per engine on a virtual clock, no sockets.
"""

from __future__ import annotations

import gc
import socket
import subprocess
import sys
import weakref

import pytest

from swarmgauge.errors import UsageError
from swarmgauge.quic.acks import MAX_ACK_DELAY
from swarmgauge.quic.engine import DEFAULT_ENGINE, ENGINES, QuicEngine, engine, engine_of
from swarmgauge.quic.transport import self_signed_certificate
from swarmgauge.targets.mark.tls import dev_certificate
from tests import REPO_ROOT

CLIENT, SERVER = ("127.0.0.1", 40000), ("127.0.0.1", 4433)


def connected_pair(
    quic_engine: QuicEngine, *, server_streams: int | None = None, certificate=None, ca_file: str | None = None
):
    """A client and a server connection of ``quic_engine`` after a handshake moved by hand, and the clock; the
    client verifies against ``ca_file`` when one is given."""
    cert, key = certificate or self_signed_certificate()
    client = quic_engine.QuicConnection(
        configuration=quic_engine.client_configuration(
            alpn="mark", insecure=ca_file is None, ca_file=ca_file, server_name="localhost", idle_timeout=30.0
        )
    )
    clock = 100.0
    client.connect(SERVER, now=clock)
    outgoing = client.datagrams_to_send(clock)
    original_cid = quic_engine.initial_destination_cid(outgoing[0][0])
    assert original_cid is not None
    server = quic_engine.QuicConnection(
        configuration=quic_engine.server_configuration(cert, key, alpn="mark", idle_timeout=30.0),
        original_destination_connection_id=original_cid,
    )
    if server_streams is not None:
        quic_engine.limit_streams(server, server_streams)
    quic_engine.delay_acks(server)
    for _ in range(20):
        for data, _ in outgoing:
            server.receive_datagram(data, CLIENT, clock)
        back = server.datagrams_to_send(clock)
        for data, _ in back:
            client.receive_datagram(data, SERVER, clock)
        outgoing = client.datagrams_to_send(clock)
        if not outgoing and not back:
            break
    return client, server, clock


def stream_data(quic_engine, peer) -> dict[int, bytes]:
    """Every stream's data among ``peer``'s queued events, joined per stream id."""
    received: dict[int, bytes] = {}
    while (event := peer.next_event()) is not None:
        if isinstance(event, quic_engine.StreamDataReceived):
            received[event.stream_id] = received.get(event.stream_id, b"") + event.data
    return received


@pytest.mark.parametrize("name", ENGINES)
def test_each_engine_makes_its_own_classes_and_finds_itself_from_a_configuration(name):
    quic_engine = engine(name)
    assert quic_engine.name == name
    configuration = quic_engine.client_configuration(
        alpn="mark", insecure=True, ca_file=None, server_name=None, idle_timeout=5.0
    )
    assert engine_of(configuration) is quic_engine
    assert type(configuration).__module__.startswith(name)


def test_the_default_is_one_of_the_engines_and_a_wrong_name_is_a_usage_error():
    assert DEFAULT_ENGINE in ENGINES
    with pytest.raises(UsageError, match="quiche"):
        engine("quiche")


@pytest.mark.parametrize("name", ENGINES)
def test_the_handshake_completes_and_the_server_sees_the_client_address(name):
    quic_engine = engine(name)
    client, server, _ = connected_pair(quic_engine)
    assert quic_engine.peer_address(server)[:2] == CLIENT
    assert quic_engine.close_event(client) is None


@pytest.mark.parametrize("name", ENGINES)
def test_every_initial_of_a_client_carries_its_own_source_id_and_the_initial_rtt_sets_its_first_pto(name):
    """``initial_source_cid`` names the connection in its first flight and in what follows (the server's id replaces
    the destination); ``initial_rtt`` moves the first Initial's resend to twice it, as quic-go's 100 ms makes 200 ms."""
    quic_engine = engine(name)
    settings = dict(alpn="mark", insecure=True, ca_file=None, server_name="localhost", idle_timeout=30.0)
    client = quic_engine.QuicConnection(configuration=quic_engine.client_configuration(**settings, initial_rtt=0.1))
    client.connect(SERVER, now=100.0)
    first = [data for data, _ in client.datagrams_to_send(100.0)]
    assert {quic_engine.initial_source_cid(data) for data in first} == {bytes(client.host_cid)}
    assert quic_engine.initial_source_cid(b"\x40" + bytes(30)) is None  # a short-header packet
    assert client.get_timer() == pytest.approx(100.2, abs=0.01)


@pytest.mark.parametrize("name", ENGINES)
def test_a_closed_connection_shows_its_close_event_at_once(name):
    quic_engine = engine(name)
    client, server, clock = connected_pair(quic_engine)
    client.close(error_code=0, reason_phrase="bye")
    for data, _ in client.datagrams_to_send(clock):
        server.receive_datagram(data, CLIENT, clock)
    event = quic_engine.close_event(server)
    assert isinstance(event, quic_engine.ConnectionTerminated) and event.reason_phrase == "bye"


@pytest.mark.parametrize("name", ENGINES)
def test_the_server_stream_limit_is_the_one_set(name):
    quic_engine = engine(name)
    client, server, _ = connected_pair(quic_engine, server_streams=3)
    assert quic_engine.local_max_streams_bidi(server) == 3
    assert quic_engine.peer_max_streams_bidi(client) == 3  # what the peer was told, not only what is enforced


@pytest.mark.parametrize("name", ENGINES)
def test_a_self_issued_server_certificate_in_the_ca_file_is_trusted(name, tmp_path):
    """qh3 leaves a self-issued certificate with a serverAuth usage out of its anchors; the adapter puts it back."""
    quic_engine = engine(name)
    dev = dev_certificate()
    client, _, _ = connected_pair(
        quic_engine, certificate=(dev.certificate, dev.private_key), ca_file=str(dev.write_pem(tmp_path / "dev.pem"))
    )
    assert quic_engine.close_event(client) is None
    assert client._handshake_complete


def test_qh3_stream_limit_must_come_before_the_first_datagram():
    quic_engine = engine("qh3")
    _, server, _ = connected_pair(quic_engine)
    with pytest.raises(RuntimeError, match="before"):
        quic_engine.limit_streams(server, 3)


def test_aioquic_waits_the_quic_go_delay_then_lets_the_ack_ride_on_the_next_packet():
    quic_engine = engine("aioquic")
    client, server, clock = connected_pair(quic_engine)
    stream_id = client.get_next_available_stream_id()
    client.send_stream_data(stream_id, b"FETCH /a.md\n", end_stream=True)
    for data, _ in client.datagrams_to_send(clock):
        server.receive_datagram(data, CLIENT, clock)
    space = server._spaces[quic_engine.tls.Epoch.ONE_RTT]
    assert space.ack_at == clock + MAX_ACK_DELAY  # not aioquic's own 1 ms
    later = clock + 0.002
    quic_engine.ack_with_next_packet(server, later)
    assert space.ack_at < later
    server.datagrams_to_send(later)
    assert space.ack_at is None  # the ACK went out in that packet


@pytest.mark.parametrize("name", ENGINES)
def test_the_ipv4_server_port_of_serve_is_found(name):
    import asyncio

    quic_engine = engine(name)
    cert, key = self_signed_certificate()

    async def bound() -> int:
        server = await quic_engine.serve(
            "127.0.0.1", 0, configuration=quic_engine.server_configuration(cert, key, alpn="mark", idle_timeout=5.0)
        )
        try:
            return quic_engine.bound_port(server)
        finally:
            server.close()

    assert asyncio.run(bound()) > 0


@pytest.mark.parametrize("name", ENGINES)
def test_the_server_receive_buffer_grows(name):
    """One UDP socket takes every client's datagrams: the server asks for more than the default buffer."""
    import asyncio

    quic_engine = engine(name)
    cert, key = self_signed_certificate()

    async def sizes() -> tuple[int, int]:
        server = await quic_engine.serve(
            "127.0.0.1", 0, configuration=quic_engine.server_configuration(cert, key, alpn="mark", idle_timeout=5.0)
        )
        try:
            before = server._transport.get_extra_info("socket").getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
            return before, quic_engine.grow_receive_buffer(server, 8 * before)
        finally:
            server.close()

    before, after = asyncio.run(sizes())
    assert after > before


@pytest.mark.parametrize("name", ENGINES)
def test_the_datagram_path_moves_a_request_and_its_answer_in_batches(name):
    """``datagrams_to_send`` and ``receive_datagrams`` (qh3: the core polled directly, a batch in one call) carry a
    whole stream each way, the answer's datagrams handed over together."""
    quic_engine = engine(name)
    client, server, clock = connected_pair(quic_engine)
    clock += 0.01  # past the pacer's next slot
    stream_id = client.get_next_available_stream_id()
    client.send_stream_data(stream_id, b"FETCH /a.md\n", end_stream=True)
    sent = quic_engine.datagrams_to_send(client, clock)
    assert sent and all(isinstance(data, bytes) for data in sent)
    quic_engine.receive_datagrams(server, sent, CLIENT, clock)
    received = b""
    while (event := server.next_event()) is not None:
        if isinstance(event, quic_engine.StreamDataReceived):
            received += event.data
    assert received == b"FETCH /a.md\n"
    server.send_stream_data(stream_id, b"x" * 5000, end_stream=True)
    chunks, ended, batches = [], False, []
    for _ in range(50):  # the pacer lets the answer out a few datagrams at a time
        answer = quic_engine.datagrams_to_send(server, clock)
        batches.append(len(answer))
        quic_engine.receive_datagrams(client, answer, SERVER, clock)
        while (event := client.next_event()) is not None:
            if isinstance(event, quic_engine.StreamDataReceived):
                chunks.append(event.data)
                ended = ended or event.end_stream
        if ended:
            break
        clock += 0.005
    assert b"".join(chunks) == b"x" * 5000 and ended
    assert max(batches) > 1


@pytest.mark.parametrize("name", ENGINES)
def test_open_stream_sends_on_each_new_stream_until_the_peers_credit_runs_out(name):
    """``open_stream`` sends a request on the next bidirectional stream; past the streams the server allows, qh3's
    engine opens none and sends nothing (the driver waits for credit), aioquic's queues it itself."""
    quic_engine = engine(name)
    client, server, clock = connected_pair(quic_engine, server_streams=2)
    assert [quic_engine.open_stream(client, b"ask %d" % i, True) for i in range(2)] == [0, 4]
    third = quic_engine.open_stream(client, b"ask 2", True)
    assert third == (None if name == "qh3" else 8)
    assert client.get_next_available_stream_id() == (8 if name == "qh3" else 12)
    clock += 0.01
    quic_engine.receive_datagrams(server, quic_engine.datagrams_to_send(client, clock), CLIENT, clock)
    assert stream_data(quic_engine, server) == {0: b"ask 0", 4: b"ask 1"}


def test_the_aioquic_client_offers_two_key_shares_and_the_qh3_server_builds_its_first_flight():
    """aioquic's own four key shares made qh3 2.1's server fail to build its first flight (over UDP the handshake
    then waited ~0.7 s for the server's PTO); with X25519 and P-256 the flight is built and goes out at once."""
    aioquic, qh3 = engine("aioquic"), engine("qh3")
    cert, key = self_signed_certificate()
    client = aioquic.QuicConnection(
        configuration=aioquic.client_configuration(
            alpn="mark", insecure=True, ca_file=None, server_name="localhost", idle_timeout=30.0
        )
    )
    client.connect(SERVER, now=100.0)
    assert client.tls._supported_groups == [aioquic.tls.Group.X25519, aioquic.tls.Group.SECP256R1]
    hello = [data for data, _ in client.datagrams_to_send(100.0)]
    server = qh3.QuicConnection(
        configuration=qh3.server_configuration(cert, key, alpn="mark", idle_timeout=30.0),
        original_destination_connection_id=qh3.initial_destination_cid(hello[0]),
    )
    qh3.receive_datagrams(server, hello, CLIENT, 100.0)
    assert qh3.datagrams_to_send(server, 100.0)  # raised "packet builder capacity exhausted" with four shares


QH3_CLIENT = """
import sys
import swarmgauge.api
from swarmgauge.quic.engine import engine
quic = engine("qh3")
settings = quic.client_configuration(alpn="mark", insecure=True, ca_file=None, server_name="localhost", idle_timeout=5.0)
client = quic.QuicConnection(configuration=settings)
client.connect(("127.0.0.1", 4433), now=1.0)
assert quic.datagrams_to_send(client, 1.0)
print("cryptography" in sys.modules)
"""


def test_a_qh3_client_loads_no_cryptography():
    """cryptography (8 MiB resident) is for a server's certificate: a Locust worker's MarkUser on qh3 is a client."""
    result = subprocess.run(
        [sys.executable, "-c", QH3_CLIENT], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.stdout.split() == ["False"], result.stderr[-2000:]


def test_qh3s_direct_batch_receive_after_the_handshake_delivers_what_its_wrapper_would():
    """The engine hands a connected qh3 client's datagrams to the native core itself (no per-call address check):
    the answer's stream data arrives as the wrapper delivers it, and a datagram that is no QUIC packet is dropped."""
    qh3 = engine("qh3")
    client, server, clock = connected_pair(qh3)
    while client.next_event() is not None:
        pass
    stream_id = client.get_next_available_stream_id()
    client.send_stream_data(stream_id, b"ask", end_stream=True)
    received: list[bytes] = []
    for _ in range(10):
        clock += 0.01
        for data, _ in client.datagrams_to_send(clock):
            server.receive_datagram(data, CLIENT, clock)
        while (event := server.next_event()) is not None:
            if isinstance(event, qh3.StreamDataReceived) and event.end_stream:
                server.send_stream_data(event.stream_id, b"answer", end_stream=True)
        back = [data for data, _ in server.datagrams_to_send(clock)]
        if back:
            qh3.receive_datagrams(client, [*back, b"\x00not quic"], SERVER, clock)
        while (event := client.next_event()) is not None:
            if isinstance(event, qh3.StreamDataReceived):
                received.append(event.data)
    assert b"".join(received) == b"answer" and client._close_event is None


class FailingNativeCoreFake:
    """A fake of qh3's native core (below the engine seam): the real one, except that sending and receiving fail as
    the Rust core reports an internal failure (``RuntimeError``)."""

    def __init__(self, real):
        self._real = real

    def __getattr__(self, name):
        return getattr(self._real, name)

    def poll_transmit(self, now):
        raise RuntimeError("native send failed")

    def receive_many_datagrams(self, datagrams, peer, now):
        raise RuntimeError("native receive failed")

    def send_stream(self, stream_id, data, end_stream):
        raise RuntimeError("native stream send failed")


@pytest.mark.parametrize("failing", ["datagrams_to_send", "receive_datagrams", "open_stream"])
def test_a_qh3_native_failure_on_the_direct_datagram_path_is_qh3s_connection_error(failing):
    """The engine calls the native core itself on the datagram path (no ``_call_core`` frame per call): a core
    failure still surfaces as qh3's internal-error ``QuicConnectionError``, as qh3's own wrapper raises it."""
    qh3 = engine("qh3")
    client, server, clock = connected_pair(qh3)
    client._core = FailingNativeCoreFake(client._core)
    connection_error = qh3._module("quic.connection").QuicConnectionError
    with pytest.raises(connection_error) as caught:
        if failing == "datagrams_to_send":
            qh3.datagrams_to_send(client, clock)
        elif failing == "open_stream":
            qh3.open_stream(client, b"ask", True)
        else:
            qh3.receive_datagrams(client, [b"\x40" + b"\x00" * 40], SERVER, clock)
    assert caught.value.error_code == qh3.QuicErrorCode.INTERNAL_ERROR
    assert "native" in caught.value.reason_phrase


def test_a_released_tls_bridge_and_context_are_freed_without_the_cyclic_collector():
    """The context held the bridge's bound methods as its callbacks: the pair then waited as cyclic garbage (~9 KiB
    a connection) for the collector, in a generator that had just made its connections."""
    qh3 = engine("qh3")
    client, _server, _clock = connected_pair(qh3)
    bridge = client._tls
    freed = [weakref.ref(bridge), weakref.ref(bridge.tls)]
    del bridge
    gc.disable()
    try:
        qh3.release_handshake_state(client)
        assert [ref() for ref in freed] == [None, None]
    finally:
        gc.enable()
    assert client.tls is None and client.get_cipher() is not None


def test_a_released_qh3_client_drops_its_pre_handshake_lists_and_still_sends_on_new_streams():
    """Both lists were emptied by the handshake and are read or appended to only before it: the empty tuple (no
    storage) takes their place, and qh3's own send path and the engine's still open streams after it."""
    qh3 = engine("qh3")
    client, server, clock = connected_pair(qh3)
    qh3.release_handshake_state(client)
    assert client._pre_handshake_streams == () and client._pre_handshake_writes == ()
    client.send_stream_data(client.get_next_available_stream_id(), b"by qh3", end_stream=True)
    assert qh3.open_stream(client, b"by the engine", True) == 4
    clock += 0.01
    qh3.receive_datagrams(server, qh3.datagrams_to_send(client, clock), CLIENT, clock)
    assert stream_data(qh3, server) == {0: b"by qh3", 4: b"by the engine"}
