"""A FAKE HTTP/1.1 server below the clients' HTTP seam, for the tests of what a client does with a bad answer.

:class:`FakeHTTPServer` reads each request whole (its head, then a ``Content-Length`` body), counts it, and lets the
test decide what follows: :func:`varying_answers` answers the n-th request with ``answer(n)``; :func:`dropping`
answers nothing and resets (RST) or closes (FIN) the connection. Loopback only; every loop is bounded.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable

from gevent.server import StreamServer

MAX_REQUESTS_PER_CONNECTION = 10_000
MAX_HEAD_BYTES = 65536

#: What the n-th request (from 0) gets: (status, body).
Answer = Callable[[int], tuple[int, bytes]]
#: After a request is read: ``respond(sock, n)`` answers it (True: read the next one) or not (False: close).
Respond = Callable[[socket.socket, int], bool]


class FakeHTTPServer:
    """A FAKE HTTP/1.1 server on 127.0.0.1: ``requests_seen`` counts the requests it read, ``respond`` decides."""

    def __init__(self, respond: Respond) -> None:
        self.respond = respond
        self.requests_seen = 0
        self.server = StreamServer(("127.0.0.1", 0), self._handle)
        self.server.start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def _handle(self, sock: socket.socket, _address: object) -> None:
        buffered = b""
        try:
            for _ in range(MAX_REQUESTS_PER_CONNECTION):
                read = _read_request(sock, buffered)
                if read is None:
                    return
                buffered = read
                index, self.requests_seen = self.requests_seen, self.requests_seen + 1
                if not self.respond(sock, index):
                    return
        except OSError:
            pass
        finally:
            sock.close()

    def stop(self) -> None:
        self.server.stop(timeout=1)


def _read_request(sock: socket.socket, buffered: bytes) -> bytes | None:
    """Read one request past ``buffered``; what follows it, or None when the peer closed or the head is too long."""
    while b"\r\n\r\n" not in buffered:
        if len(buffered) >= MAX_HEAD_BYTES:
            return None
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buffered += chunk
    head, _, buffered = buffered.partition(b"\r\n\r\n")
    length = next(
        (int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")),
        0,
    )
    while len(buffered) < length:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buffered += chunk
    return buffered[length:]


def varying_answers(answer: Answer) -> FakeHTTPServer:
    """The n-th request gets ``answer(n)`` as a JSON-typed response; the connection stays open for the next."""

    def respond(sock: socket.socket, index: int) -> bool:
        status, body = answer(index)
        sock.sendall(
            b"HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
            % (status, len(body), body)
        )
        return True

    return FakeHTTPServer(respond)


def dropping(how: str) -> FakeHTTPServer:
    """Every request read and then left unanswered: ``how`` is ``reset`` (RST) or ``close`` (FIN)."""

    def respond(sock: socket.socket, _index: int) -> bool:
        if how == "reset":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        return False

    return FakeHTTPServer(respond)
