"""A lossy path in front of the reference server: a seeded share of new connections lose their client's first flight.

The kind page's fresh-connection rows are bimodal: at 16 users p50 23 ms (a pooled read plus a handshake) but a mean
of 102 ms by Little's law (16 / 157 req/s) and p99 323 ms. A share of its dials (a quarter to a third) waited a
client retransmit timer before their handshake began, off the bucket; lost Initial packets on kind's UDP path would do that (the page
does not say). Loopback loses nothing, so ``--initial-loss SHARE`` drops the first flight of that share of new
connections (every Initial datagram the client sends in its first ``FIRST_FLIGHT_S``) before the QUIC library sees
it. Nothing here waits: the client's own retransmit timer (its first PTO) decides how long such a dial takes, as on a
real lossy path.

The whole flight, not its first datagram: a ClientHello with a post-quantum key share fills two datagrams, and a
server that gets the second ACKs it, so the client resends the first within a round trip instead of waiting its PTO
(qh3 did: 5-10 ms). Only the first flight: the retransmit, and everything after it, passes (a path that lost every
attempt alike would make double losses as common as the share squared, about 7 % at a quarter, and put them in the
16-user p99, which the page's 323 ms rules out).
"""

from __future__ import annotations

import random
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

#: the drops are seeded, so two runs at one setting lose the same dials in the same order
SEED = 6309
#: connections remembered as already decided (the oldest forgotten first): far more than dial in a retransmit timer
REMEMBERED = 65_536
#: a client's first flight arrives within this of its first datagram (microseconds apart; a loaded loop adds some);
#: its first retransmit comes a PTO later, 200 ms at the least (aioquic, quic-go)
FIRST_FLIGHT_S = 0.05


class InitialLoss:
    """Decides, once per new connection (known by its client's source connection id, the same in every Initial of
    its handshake), whether the path loses its first flight: with probability ``share``, seeded."""

    def __init__(
        self,
        share: float,
        seed: int = SEED,
        remembered: int = REMEMBERED,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 0.0 <= share < 1.0:
            raise ValueError("an Initial loss share must be at least 0 and below 1")
        self.share = share
        self._random = random.Random(seed)
        self._clock = clock
        #: client id -> until when its Initials are lost (0.0: the connection passes)
        self._decided: OrderedDict[bytes, float] = OrderedDict()
        self._remembered = remembered
        self.connections = 0
        self.dropped = 0
        self.datagrams_dropped = 0

    def admit(self, client_cid: bytes | None) -> bool:
        """Whether a datagram passes: anything but an Initial (``client_cid`` None) does; a new connection's first
        flight is lost with probability ``share``, and everything a connection sends after its first flight passes."""
        if client_cid is None:
            return True
        now = self._clock()
        lost_until = self._decided.get(client_cid)
        if lost_until is None:
            self.connections += 1
            lost_until = now + FIRST_FLIGHT_S if self._random.random() < self.share else 0.0
            self.dropped += lost_until > 0.0
            self._decided[client_cid] = lost_until
            if len(self._decided) > self._remembered:
                self._decided.popitem(last=False)
        if now < lost_until:
            self.datagrams_dropped += 1
            return False
        return True


def lose_initials(server: Any, loss: InitialLoss, client_cid: Callable[[bytes], bytes | None]) -> None:
    """Put ``loss`` in front of an asyncio QUIC server's ``datagram_received`` (``client_cid`` reads an Initial
    datagram's source connection id, None for any other packet: ``QuicEngine.initial_source_cid``)."""
    receive = server.datagram_received

    def datagram_received(data: bytes, address: Any) -> None:
        if loss.admit(client_cid(data)):
            receive(data, address)

    server.datagram_received = datagram_received
