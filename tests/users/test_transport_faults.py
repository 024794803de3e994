"""Issue 21.5 for MDK, kneo and brain: an answer cut short, one that is not HTTP, and a reset are each a named failure
from a bounded set, recorded once per call; the user goes on and backs off. The misbehaving server is a FAKE below
the HTTP seam (real services never answer this way on purpose)."""

from __future__ import annotations

import socket
import struct

import pytest
from gevent.server import StreamServer
from locust.env import Environment

from swarmgauge.protocols.kneo import KneoUnreachable
from swarmgauge.users.brain_client import BrainUnreachable
from swarmgauge.users.brain_user import BrainUser
from swarmgauge.users.kneo_user import KneoUser
from swarmgauge.users.mdk_client import BadResponse, GatewayUnreachable, MDKClient
from tests.users.fake_mcp_server import INIT_FAULTS

FAULTS = ["/cut", "/nonhttp", "/reset", "/badstatus"]
CALLS = 3


class FakeFaultyHTTP:
    """A FAKE HTTP server that reads one request and answers every one with the same transport fault."""

    def __init__(self, fault: str) -> None:
        self.answer = INIT_FAULTS[fault]
        self.server = StreamServer(("127.0.0.1", 0), self._handle)
        self.server.start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def _handle(self, sock: socket.socket, _address: object) -> None:
        try:
            sock.recv(65536)
            if self.answer:
                sock.sendall(self.answer)
            else:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close = RST
        except OSError:
            pass
        finally:
            sock.close()

    def stop(self) -> None:
        self.server.stop(timeout=1)


@pytest.fixture(params=FAULTS)
def faulty(request):
    server = FakeFaultyHTTP(request.param)
    yield server
    server.stop()


def recording(user_class: type | None = None) -> tuple[Environment, list[dict]]:
    environment = Environment(user_classes=[user_class] if user_class else [])
    recorded: list[dict] = []
    environment.events.request.add_listener(lambda **kw: recorded.append(kw))
    return environment, recorded


def names(recorded: list[dict]) -> set[str]:
    return {repr(e["exception"]) for e in recorded}


@pytest.mark.timeout(60)
def test_mdk_names_each_transport_fault_and_backs_off(faulty):
    environment, recorded = recording()
    client = MDKClient(faulty.url, environment.events, timeout=2.0)
    for _ in range(CALLS):
        assert client.summary() is None
    client.close()
    assert len(recorded) == CALLS  # one row per call
    assert all(isinstance(e["exception"], (GatewayUnreachable, BadResponse)) for e in recorded), names(recorded)
    assert len(names(recorded)) == 1, names(recorded)  # one name per kind of fault, whatever the call
    assert client.backoff.faults == CALLS


@pytest.mark.timeout(60)
def test_kneo_names_each_transport_fault_and_backs_off(faulty):
    class Probe(KneoUser):
        host = faulty.url

    environment, recorded = recording(Probe)
    user = Probe(environment)
    for _ in range(CALLS):
        user.run_once()
    assert len(recorded) == CALLS
    assert all(isinstance(e["exception"], KneoUnreachable) for e in recorded), names(recorded)
    assert len(names(recorded)) == 1, names(recorded)  # one name per kind of fault, whatever the call
    assert user.client.backoff.faults == CALLS


@pytest.mark.timeout(60)
def test_brain_names_each_transport_fault_and_backs_off(faulty):
    class Probe(BrainUser):
        host = faulty.url

    environment, recorded = recording(Probe)
    user = Probe(environment)
    user.on_start()
    for _ in range(CALLS):
        user.stats()
    assert len(recorded) == CALLS
    assert all(isinstance(e["exception"], BrainUnreachable) for e in recorded), names(recorded)
    assert len(names(recorded)) == 1, names(recorded)  # one name per kind of fault, whatever the call
    assert user.backoff.faults == CALLS
