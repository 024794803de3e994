"""An HTTP test target whose per-request delay comes from a known, seeded distribution, recorded by the target.

It is the ground truth for the per-step statistics: every request is recorded with its arrival time, path, the
``step`` and ``id`` query parameters the client sent, the delay it drew, the time it waited for a slot (``queued_ms``, see
``--capacity``), the time it was held (``held_ms``) and the time the server spent on it from calling the app to the
last byte written (``served_ms``, the closest the target can get to what a client measures). ``--capacity N``
serves at most N requests at once and queues the rest in arrival order, a bottleneck whose throughput flattens at
N / mean delay, so a step ramp shows a knee. A stall mode holds
every request that arrives during a window (``--stall-at/--stall-for``, counted from the first request, or
``POST /__stall?seconds=S``), as wrk2's
worked example does, so an open-model run can show the stall in p99. ``?status=500`` answers with that status.
Control endpoints: ``GET /__records`` (JSON list), ``POST /__reset``, ``POST /__stall?seconds=S``, ``GET /__health``.

Run: ``swarmgauge target sim-http --port 0 --delay uniform:40:160 [--capacity 4]`` (prints ``ready
http://127.0.0.1:PORT``, the line :func:`targets.launch.launch_target` waits for),
or ``python3 -m targets.sim_http``. It binds loopback only.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

from swarmgauge.errors import UsageError

LOOPBACK = ("127.0.0.1", "::1", "localhost")
MAX_DELAY_S = 60.0
MAX_RECORDS = 5_000_000
RECORD_KEY = "sim_http.record"


def _status_of(query: dict[str, list[str]]) -> int:
    """The ``?status=`` a client asked for; anything but a 100-599 number is a plain 200."""
    raw = query.get("status", ["200"])[0]
    return int(raw) if raw.isdigit() and 100 <= int(raw) <= 599 else 200


def delay_sampler(spec: str, seed: int) -> Callable[[], float]:
    """``const:MS``, ``uniform:LO:HI``, ``exp:MEAN`` or ``lognormal:MEDIAN:SIGMA`` (milliseconds) -> a sampler."""
    rng = random.Random(seed)
    kind, _, rest = spec.partition(":")
    try:
        args = [float(a) for a in rest.split(":")] if rest else []
    except ValueError:
        raise UsageError(f"--delay {spec!r}: parameters must be numbers") from None
    if any(a < 0 for a in args):
        raise UsageError(f"--delay {spec!r}: parameters must not be negative")
    if kind == "const" and len(args) == 1:
        return lambda: args[0]
    if kind == "uniform" and len(args) == 2 and args[0] <= args[1]:
        return lambda: rng.uniform(args[0], args[1])
    if kind == "exp" and len(args) == 1 and args[0] > 0:
        return lambda: rng.expovariate(1.0 / args[0])
    if kind == "lognormal" and len(args) == 2 and args[0] > 0:
        import math

        mu = math.log(args[0])
        return lambda: rng.lognormvariate(mu, args[1])
    raise UsageError(f"--delay {spec!r}: expected const:MS, uniform:LO:HI, exp:MEAN or lognormal:MEDIAN:SIGMA")


class SimHttpApp:
    """The WSGI app: sleeps the drawn delay (plus any stall), records what it did."""

    def __init__(
        self,
        delay: str = "const:0",
        seed: int = 1,
        stall_at: float | None = None,
        stall_for: float = 0.0,
        capacity: int | None = None,
    ) -> None:
        if capacity is not None and capacity < 1:
            raise UsageError(f"--capacity must be at least 1, got {capacity}")
        self.sample = delay_sampler(delay, seed)
        self.capacity = capacity
        self._slots: Any = None
        self.records: list[dict[str, Any]] = []
        self.started = time.time()
        self.stall_until = 0.0
        self.stall_plan = (stall_at, stall_for) if stall_at is not None else None
        self.stall_window: tuple[float, float] | None = None

    def _stall_left(self, now: float) -> float:
        if self.stall_plan is not None and self.stall_window is None:
            begins = now + self.stall_plan[0]  # counted from the first request, so a test need not know start-up time
            self.stall_window = (begins, begins + self.stall_plan[1])
        left = max(0.0, self.stall_until - now)
        if self.stall_window and self.stall_window[0] <= now < self.stall_window[1]:
            left = max(left, self.stall_window[1] - now)
        return left

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        import gevent

        path = environ.get("PATH_INFO", "/")
        query = parse_qs(environ.get("QUERY_STRING", ""))
        if path.startswith("/__"):
            return self._control(path, query, start_response)
        arrived = time.time()
        queued_from = time.perf_counter()
        slots = self._slot_semaphore()
        if slots is not None:
            slots.acquire()
        try:
            held_from = time.perf_counter()
            delay_ms = min(self.sample(), MAX_DELAY_S * 1000.0)
            gevent.sleep(self._stall_left(arrived) + delay_ms / 1000.0)
            held_ms = (time.perf_counter() - held_from) * 1000.0
        finally:
            if slots is not None:
                slots.release()
        status = _status_of(query)
        record = {
            "t": arrived,
            "path": path,
            "step": query.get("step", [None])[0],
            "id": query.get("id", [None])[0],
            "drawn_ms": delay_ms,
            "queued_ms": (held_from - queued_from) * 1000.0,
            "held_ms": held_ms,
            "status": status,
        }
        if len(self.records) < MAX_RECORDS:
            self.records.append(record)
            environ[RECORD_KEY] = record
        body = b"ok\n" if status < 400 else b"simulated failure\n"
        start_response(f"{status} SIM", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
        return [body]

    def _slot_semaphore(self) -> Any:
        """The capacity limit, made on first use (after gevent's patching); None when unlimited."""
        if self.capacity is None:
            return None
        if self._slots is None:
            from gevent.lock import Semaphore

            self._slots = Semaphore(self.capacity)
        return self._slots

    def _control(self, path: str, query: dict[str, list[str]], start_response: Callable[..., Any]) -> list[bytes]:
        if path == "/__records":
            body = json.dumps(self.records).encode()
        elif path == "/__reset":
            self.records = []
            self.stall_window = None
            body = b"{}"
        elif path == "/__stall":
            try:
                seconds = min(max(float(query.get("seconds", ["1"])[0]), 0.0), MAX_DELAY_S)
            except ValueError:
                start_response("400 Bad Request", [("Content-Type", "text/plain")])
                return [b"seconds must be a number\n"]
            self.stall_until = time.time() + seconds
            body = json.dumps({"stall_until": self.stall_until}).encode()
        elif path == "/__health":
            body = b'{"ok": true}'
        else:
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"unknown control path\n"]
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]


def serve(app: SimHttpApp, host: str = "127.0.0.1", port: int = 0) -> Any:
    """Start a gevent WSGI server for ``app`` on loopback; returns it started (``server.server_port`` is the port)."""
    if host not in LOOPBACK:
        raise UsageError(f"sim-http binds loopback only, not {host!r}")
    return start_server(app, host, port)


def start_server(app: SimHttpApp, host: str, port: int) -> Any:
    """``serve`` without the loopback rule, for a caller that built the network it binds to itself: the multi-host
    tests run the target on an address of a network namespace they made, which nothing else can reach."""
    from gevent.pywsgi import WSGIHandler, WSGIServer

    class _ServedTimeHandler(WSGIHandler):
        """Adds ``served_ms`` to the request's record: from calling the app to the response's last byte written."""

        def handle_one_response(self) -> None:
            began = time.perf_counter()
            try:
                super().handle_one_response()
            finally:
                record = (self.environ or {}).get(RECORD_KEY)
                if record is not None:
                    record["served_ms"] = (time.perf_counter() - began) * 1000.0

    class _NoDelayServer(WSGIServer):
        """Disables Nagle per connection: headers and body go out as separate writes, and delayed ACKs
        would otherwise add 40 ms to every response."""

        handler_class = _ServedTimeHandler

        def handle(self, sock: Any, address: Any) -> None:
            import socket

            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            super().handle(sock, address)

    server = _NoDelayServer((host, port), app, log=None, error_log=None)
    server.start()
    return server


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="swarmgauge target sim-http", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", default="const:0", help="const:MS | uniform:LO:HI | exp:MEAN | lognormal:MED:SIGMA")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--stall-at", type=float, default=None, help="seconds after the first request when a stall begins"
    )
    parser.add_argument("--stall-for", type=float, default=0.0, help="how long the stall holds every request")
    parser.add_argument("--capacity", type=int, default=None, help="serve at most N requests at once, queue the rest")
    parser.add_argument("--max-seconds", type=float, default=3600.0, help="stop by itself after this long")
    return parser


def main(argv: list[str]) -> int:
    from gevent import monkey

    monkey.patch_all()
    import gevent

    args = build_parser().parse_args(argv)
    try:
        app = SimHttpApp(args.delay, args.seed, args.stall_at, args.stall_for, args.capacity)
        server = serve(app, args.host, args.port)
    except UsageError as exc:
        print(f"sim-http: {exc}", file=sys.stderr)
        return 2
    print(f"ready http://{args.host}:{server.server_port}", flush=True)
    try:
        gevent.sleep(args.max_seconds)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop(timeout=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
