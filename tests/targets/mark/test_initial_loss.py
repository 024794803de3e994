"""The lossy path in front of the reference server (``--initial-loss``): which datagrams it drops, and that over real
QUIC a connection whose first Initial was lost completes on its client's own retransmit."""

from __future__ import annotations

import pytest

from swarmgauge.targets.mark.cli import build_parser
from swarmgauge.targets.mark.initial_loss import FIRST_FLIGHT_S, InitialLoss

#: the first rolls of the seeded generator are 0.276, 0.94, 0.295: at a share of a half, connections 1 and 3 lose
#: their first Initial and connection 2 does not
SHARE = 0.5


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_only_the_first_flight_of_a_connection_can_be_lost():
    clock = Clock()
    loss = InitialLoss(SHARE, clock=clock)
    assert loss.admit(b"client-1") is False  # its first flight: lost, both datagrams of a two-datagram ClientHello
    assert loss.admit(b"client-1") is False
    assert loss.admit(b"client-2") is True
    assert loss.admit(None) is True  # not an Initial: never dropped
    clock.now += FIRST_FLIGHT_S
    assert loss.admit(b"client-1") is True  # its retransmit, a PTO later, passes, and everything after it
    assert loss.admit(b"client-3") is False
    assert (loss.dropped, loss.connections, loss.datagrams_dropped) == (2, 3, 3)


def test_the_drops_are_seeded():
    first, second = InitialLoss(0.3, clock=Clock()), InitialLoss(0.3, clock=Clock())
    clients = [f"client-{n}".encode() for n in range(200)]
    assert [first.admit(c) for c in clients] == [second.admit(c) for c in clients]
    assert 0 < first.dropped < 200


def test_a_connection_forgotten_past_the_memory_is_decided_anew():
    loss = InitialLoss(SHARE, remembered=1, clock=Clock())
    loss.admit(b"client-1")
    loss.admit(b"client-2")  # client-1 forgotten
    assert loss.connections == 2
    loss.admit(b"client-1")
    assert loss.connections == 3


@pytest.mark.parametrize("share", ["1", "-0.1", "nan", "x"])
def test_a_share_outside_zero_to_one_is_refused(share, capsys):
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(["--initial-loss", share])
    assert stopped.value.code == 2
    assert "--initial-loss" in capsys.readouterr().err


@pytest.mark.integration
def test_a_connection_whose_first_initial_is_lost_completes_on_the_clients_retransmit(start_mark, mark_client):
    server = start_mark("--initial-loss", str(SHARE))
    client = mark_client(server.url, connection="fresh")
    statuses = [client.fetch("/health").status for _ in range(3)]
    assert statuses == ["ok", "ok", "ok"]
    assert client.stats.handshakes == 3
    server.process.terminate()
    server.process.wait(10)
    assert "the path lost the first flight of 2 of 3 new connections" in server.stderr_tail()
