"""One flush's datagrams for one peer in one system call, as quic-go sends a batch: ``sendmsg`` with UDP GSO.

Without it the reference server wrote each datagram of a two-datagram answer with its own ``sendto``, and the
second often arrived after the client's receive pass had read the first, costing the client a second wake-up
(issue 34). With Linux UDP GSO (a ``UDP_SEGMENT`` control message) the kernel cuts one buffer into datagrams of
``segment`` bytes each, so every datagram but the last must be exactly that size; the last may be shorter. A shorter
one in the middle does not fail: the kernel cuts at the wrong places, every later datagram is a mix of two QUIC
packets the client cannot decrypt, and a retransmission of the same shape is lost again (an earlier attempt's
request that timed out after 10 s). :func:`gso_groups` therefore cuts a flush where sizes change, after at most
``MAX_SEGMENTS`` datagrams and ``MAX_GSO_BYTES`` bytes (past its segment limit the kernel answers EINVAL, past a
64 KiB datagram EMSGSIZE). A kernel or route that refuses GSO (EIO, EINVAL,
ENOPROTOOPT, EOPNOTSUPP) switches it off for the socket and the batch goes out one ``sendto`` a datagram, as before.
"""

from __future__ import annotations

import errno
import logging
import socket
import struct
import sys
from collections.abc import Sequence
from typing import Any

log = logging.getLogger(__name__)

SOL_UDP = 17
UDP_SEGMENT = 103  # Linux <linux/udp.h>; Python's socket module has no name for it
MAX_SEGMENTS = 64  # UDP_MAX_SEGMENTS of older Linux kernels (newer ones allow 128)
MAX_GSO_BYTES = 65_507  # one IPv4 datagram's payload at most (65535 - 20 IP - 8 UDP); IPv6 allows 20 more
REFUSED = frozenset({errno.EIO, errno.EINVAL, errno.ENOPROTOOPT, errno.EOPNOTSUPP})
_SEGMENT = struct.Struct("=H")


def gso_groups(datagrams: Sequence[bytes]) -> list[list[bytes]]:
    """``datagrams`` in order, cut into runs the kernel can segment back exactly: equal sizes, at most one shorter
    one at the end, at most ``MAX_SEGMENTS`` datagrams and ``MAX_GSO_BYTES`` bytes a run."""
    groups: list[list[bytes]] = []
    current: list[bytes] = []
    segment = total = 0
    for data in datagrams:
        size = len(data)
        if current and 0 < size <= segment and len(current) < MAX_SEGMENTS and total + size <= MAX_GSO_BYTES:
            current.append(data)
            total += size
            if size < segment:  # a shorter datagram can only be the last of a run
                groups.append(current)
                current = []
            continue
        if current:
            groups.append(current)
        current, segment, total = [data], size, size
    if current:
        groups.append(current)
    return groups


class BatchSender:
    """Sends batches on the socket of one asyncio datagram transport, or through the transport one datagram at a
    time where GSO cannot help (one datagram, sizes that differ) or is refused.

    ``sock`` is a duplicate of the transport's socket (asyncio's own wrapper withholds ``sendmsg``), closed by
    :meth:`close`; both are public so a test can count the calls on them.
    """

    def __init__(self, transport: Any, sock: Any) -> None:
        self.transport = transport
        self.sock = sock
        self.gso = sys.platform == "linux"

    @classmethod
    def over(cls, transport: Any) -> BatchSender:
        """A sender over ``transport``'s socket (a duplicate of its descriptor: same socket, closed separately)."""
        original = transport.get_extra_info("socket")
        return cls(transport, socket.fromfd(original.fileno(), original.family, original.type))

    def send(self, datagrams: Sequence[bytes], address: Any) -> None:
        """Send ``datagrams`` to ``address`` in order: a run of two or more in one ``sendmsg``."""
        transport = self.transport
        if not self.gso or transport.is_closing() or transport.get_write_buffer_size():
            self._one_by_one(datagrams, address)  # the transport queues behind what it already holds, in order
            return
        for group in gso_groups(datagrams):
            if len(group) == 1 or not self.gso:
                self._one_by_one(group, address)
                continue
            try:
                self.sock.sendmsg(group, [(SOL_UDP, UDP_SEGMENT, _SEGMENT.pack(len(group[0])))], 0, address)
            except OSError as exc:  # nothing of the run was sent: UDP takes a whole GSO buffer or none of it
                if exc.errno in REFUSED:
                    self.gso = False
                    log.info("UDP GSO refused (%s): one sendto a datagram from now on", errno.errorcode[exc.errno])
                self._one_by_one(group, address)  # a full buffer is queued, any other error reported, as before

    def _one_by_one(self, datagrams: Sequence[bytes], address: Any) -> None:
        for data in datagrams:
            self.transport.sendto(data, address)

    def close(self) -> None:
        self.sock.close()


class BatchingTransport:
    """What one connection's QUIC protocol sees as its transport: the server's transport, except that the datagrams
    of one flush (``begin`` .. ``flush``) are held and then sent a peer at a time by the shared :class:`BatchSender`.

    ``sendto_many`` is None so qh3's protocol takes its ``sendto`` loop (aioquic has only that one).
    """

    sendto_many = None

    def __init__(self, sender: BatchSender) -> None:
        self.sender = sender
        self._held: list[tuple[bytes, Any]] | None = None

    def begin(self) -> bool:
        """Hold what is sent until :meth:`flush`; False (nothing changes) when already holding."""
        if self._held is not None:
            return False
        self._held = []
        return True

    def flush(self) -> None:
        held, self._held = self._held, None
        if not held:
            return
        if len(held) == 1:  # an ACK or a short answer alone: straight to the transport, as before
            self.sender.transport.sendto(*held[0])
            return
        start = 0
        for index in range(1, len(held) + 1):
            if index == len(held) or held[index][1] != held[start][1]:
                self.sender.send([data for data, _ in held[start:index]], held[start][1])
                start = index

    def sendto(self, data: bytes, address: Any = None) -> None:
        if self._held is not None:
            self._held.append((data, address))
        else:
            self.sender.send([data], address)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sender.transport, name)
