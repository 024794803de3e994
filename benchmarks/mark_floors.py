"""Two floors under MarkUser's CPU per FETCH that no QUIC engine can remove, each a child case of
``benchmarks.mark_client``: what Locust itself costs per request, and what one UDP round trip through gevent costs.

Together with the engine's in-memory floor (``run_memory``) they make the least a MarkUser FETCH can cost under
Locust on real sockets; what MarkUser costs above their sum is swarmgauge's own share (Mark codec, driver, streams,
recording). Figures only.

- ``run_locust_floor``: a Locust user whose task makes one hub round trip (as an answer's wake-up does) and fires
  one ``request`` event, with Locust's own stats listening: the bookkeeping every MarkUser request needs.
- ``run_fasthttp_anchor``: not a floor but the anchor: Locust's ``FastHttpUser`` GET against nginx, plain Locust.
- ``run_udp_floor``: each user sends the size of a FETCH request on a connected UDP socket (``UdpTransport``, the
  driver's own) and waits, on the same gevent io watcher the driver uses, for an echo of the size of an answer from
  a peer in another process: one send, one wake-up, one receive.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from typing import Any

from benchmarks.mark_client_cases import BenchmarkError, Window, reference_pairs

ECHO_IDLE_S = 3.0  # the echo peer exits after this long without a datagram (so it never outlives its case)
ECHO_PEER = """
import socket, sys, time
answer_size, idle, lifetime = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.bind(("127.0.0.1", 0))
sock.settimeout(idle)
print(sock.getsockname()[1], flush=True)
answer, ends = b"a" * answer_size, time.monotonic() + lifetime
while time.monotonic() < ends:
    try:
        _, peer = sock.recvfrom(65536)
    except socket.timeout:
        break
    sock.sendto(answer, peer)
"""


def _wait_for_users(runner: Any, users: int) -> None:
    import gevent

    for _ in range(1200):  # bounded (120 s)
        if runner.user_count >= users:
            return
        gevent.sleep(0.1)
    raise BenchmarkError(f"only {runner.user_count} of {users} users spawned")


def run_locust_floor(opts: argparse.Namespace, window: Window) -> dict[str, Any]:
    import gevent
    from locust import User, constant, task
    from locust.env import Environment

    class BareRequestUser(User):
        """One hub round trip and one request event per task: Locust's share of a request, no protocol."""

        wait_time = constant(0)

        @task
        def request(self) -> None:
            started = time.perf_counter()
            gevent.sleep(0)
            self.environment.events.request.fire(
                request_type="FETCH",
                name="/corpus/{topic}/{doc}",
                response_time=(time.perf_counter() - started) * 1000.0,
                response_length=0,
                exception=None,
                context={},
            )

    env = Environment(user_classes=[BareRequestUser], host="mark://127.0.0.1:1")
    env.events.request.add_listener(lambda response_time, **_: window.record(response_time, True))
    runner = env.create_local_runner()
    runner.start(opts.users, spawn_rate=min(opts.users, 100))
    try:
        _wait_for_users(runner, opts.users)
        gevent.sleep(opts.warmup)
        window.start()
        gevent.sleep(opts.duration)
        return window.stop()
    finally:
        runner.quit()


def run_fasthttp_anchor(opts: argparse.Namespace, window: Window) -> dict[str, Any]:
    """The anchor of issue 34: Locust's ``FastHttpUser`` GET (no wait) against nginx at ``--url``, plain Locust.

    Its CPU per request is what Locust's fastest HTTP request costs the generator; a pooled MarkUser FETCH is
    measured against it (target: at most 1.0x)."""
    import gevent
    from locust import FastHttpUser, constant, task
    from locust.env import Environment

    class PlainGetUser(FastHttpUser):
        wait_time = constant(0)

        @task
        def get_root(self) -> None:
            self.client.get("/", name="GET /")

    env = Environment(user_classes=[PlainGetUser], host=opts.url)
    env.events.request.add_listener(
        lambda response_time, exception=None, **_: window.record(response_time, exception is None)
    )
    runner = env.create_local_runner()
    runner.start(opts.users, spawn_rate=min(opts.users, 100))
    try:
        _wait_for_users(runner, opts.users)
        gevent.sleep(opts.warmup)
        window.start()
        gevent.sleep(opts.duration)
        return window.stop()
    finally:
        runner.quit()


def run_udp_floor(opts: argparse.Namespace, window: Window) -> dict[str, Any]:
    import gevent
    import gevent.event
    import psutil

    from swarmgauge.quic.transport import UdpTransport

    request, answer = next(iter(reference_pairs(opts.corpus).values()))
    lifetime = opts.warmup + opts.duration + 60.0
    peer = subprocess.Popen(
        [sys.executable, "-c", ECHO_PEER, str(len(answer)), str(ECHO_IDLE_S), str(lifetime)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = peer.stdout.readline() if peer.stdout else ""
        if not line.strip().isdigit():
            raise BenchmarkError(f"the UDP echo peer named no port (exit {peer.poll()})")
        port = int(line)
        window.server = psutil.Process(peer.pid)
        ends = time.monotonic() + opts.warmup + opts.duration + 1.0

        def user() -> None:
            transport = UdpTransport.open("127.0.0.1", port)
            answered = gevent.event.Event()

            def on_readable() -> None:
                if transport.drain():
                    answered.set()

            transport.set_on_readable(on_readable)
            try:
                while time.monotonic() < ends:  # bounded by the case's window
                    answered.clear()
                    started = time.perf_counter()
                    transport.send(request)
                    ok = answered.wait(1.0)
                    window.record((time.perf_counter() - started) * 1000.0, ok, None if ok else "NoEcho")
            finally:
                transport.close()

        users = [gevent.spawn(user) for _ in range(opts.users)]
        gevent.sleep(opts.warmup)
        window.start()
        gevent.sleep(opts.duration)
        result = window.stop()
        gevent.joinall(users, timeout=5.0)
        gevent.killall(users)
        return result
    finally:
        peer.kill()
        peer.wait(timeout=10)
