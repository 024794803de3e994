"""Fakes below the client seam for the in-flight tests: servers that take every request and never answer it.

- ``quic``: :class:`~tests.quic.misbehaving_quic.MisbehavingQuicServer` with ``silent=True``: real QUIC and TLS over
  UDP on loopback (the project's engine, qh3 or aioquic), every handshake completed, no stream ever answered.
- ``http``: :class:`FakeSilentHTTPServer`: accepts TCP connections on loopback, reads what comes and never writes.

No real service fails this way on purpose, hence fakes. :func:`silent_server` runs one as its own process (the Locust
run under test is another) and yields its URL; ``python -m tests.users.silent_servers quic|http`` prints
``ready URL`` and serves for at most :data:`MAX_SECONDS`.
"""

from __future__ import annotations

import select
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from tests import REPO_ROOT

MAX_SECONDS = 180.0
READY_SECONDS = 30.0
READ_CHUNK = 65536


class FakeSilentHTTPServer:
    """Accepts every connection and reads every byte sent, answering nothing (until it stops)."""

    def __init__(self) -> None:
        from gevent.server import StreamServer

        self.server = StreamServer(("127.0.0.1", 0), self._hold)
        self.connections = 0

    def start(self) -> FakeSilentHTTPServer:
        self.server.start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        return self

    def _hold(self, sock, _address) -> None:
        self.connections += 1
        deadline = time.monotonic() + MAX_SECONDS
        while time.monotonic() < deadline and sock.recv(READ_CHUNK):
            pass  # read and keep the connection open; a closed one ends the loop

    def stop(self) -> None:
        self.server.stop(timeout=1)


def _serve(kind: str) -> None:
    import gevent

    if kind == "quic":
        from tests.quic.misbehaving_quic import MisbehavingQuicServer

        server = MisbehavingQuicServer(silent=True).start()
    elif kind == "http":
        server = FakeSilentHTTPServer().start()
    else:
        raise SystemExit(f"usage: {sys.argv[0]} quic|http")
    print(f"ready {server.url}", flush=True)
    gevent.sleep(MAX_SECONDS)
    server.stop()


@contextmanager
def silent_server(kind: str) -> Iterator[str]:
    """One fake (``quic`` or ``http``) in its own process; yields its URL and stops it on exit."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.users.silent_servers", kind],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = ""
        deadline = time.monotonic() + READY_SECONDS
        while not line.startswith("ready ") and time.monotonic() < deadline and process.poll() is None:
            if select.select([process.stdout], [], [], max(0.0, deadline - time.monotonic()))[0]:
                line = process.stdout.readline()
        if not line.startswith("ready "):
            raise RuntimeError(f"the silent {kind} fake did not start: {line!r}")
        yield line.split(" ", 1)[1].strip()
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


if __name__ == "__main__":
    _serve(sys.argv[1] if len(sys.argv) > 1 else "")
