"""The client configuration: shared per settings, and the engine's crypto warmed before any handshake is timed."""

from __future__ import annotations

import pytest

from swarmgauge.quic import settings
from swarmgauge.quic.engine import ENGINES, engine


class FakeConnection:
    """A stand-in for the engine's ``QuicConnection`` that records the ClientHellos built on it."""

    built: list[tuple[str, object]] = []

    def __init__(self, *, configuration: object) -> None:
        self.configuration = configuration

    def connect(self, address: tuple[str, int], now: float) -> None:
        self.built.append(("connect", address))

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, tuple[str, int]]]:
        self.built.append(("datagrams", now))
        return []


@pytest.fixture
def fresh_caches():
    settings.client_configuration.cache_clear()
    settings.warm_crypto.cache_clear()
    yield
    settings.client_configuration.cache_clear()
    settings.warm_crypto.cache_clear()


def test_the_first_configuration_of_an_engine_builds_one_client_hello_and_later_ones_none(fresh_caches, monkeypatch):
    monkeypatch.setattr(engine("qh3"), "QuicConnection", FakeConnection)
    monkeypatch.setattr(FakeConnection, "built", [])
    settings.client_configuration(insecure=True, quic_engine="qh3")
    settings.client_configuration(insecure=True, server_name="localhost", quic_engine="qh3")
    settings.client_configuration(insecure=False, idle_timeout=5.0, quic_engine="qh3")
    assert FakeConnection.built == [("connect", ("127.0.0.1", 9)), ("datagrams", 0.0)]


@pytest.mark.parametrize("quic_engine", ENGINES)
def test_the_warm_up_runs_on_each_real_engine_without_the_network(fresh_caches, quic_engine, monkeypatch):
    import socket

    def no_socket(*args, **kwargs):
        raise AssertionError("the warm-up opened a socket")

    monkeypatch.setattr(socket, "socket", no_socket)
    configuration = settings.client_configuration(insecure=True, quic_engine=quic_engine)
    assert type(configuration).__module__.split(".", 1)[0] == quic_engine
    assert settings.warm_crypto.cache_info().currsize == 1
