"""The three clients of ``benchmarks.mark_client``, each run in its own child process, and their profiler.

(a) ``run_locust``: MarkUser (``FetchUser`` / ``FreshFetchUser``) under an in-process Locust Environment, on the QUIC
engine ``--engine``, closed-loop or paced to ``--pace`` requests/s in total (the scaling table: most connections
idle); (b) ``run_asyncio``: aioquic's asyncio client; (c) ``run_memory``: the engine's client ``QuicConnection``
against a server one in memory on a virtual clock, the client's CPU alone. Each returns figures for the steady
window only.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from swarmgauge.errors import SwarmgaugeError

ROOT = Path(__file__).resolve().parents[1]
CLOCK = "2026-01-01T00:00:00Z"
PACED_GAP = 0.005  # idle seconds between requests in the memory case's paced run (caches go cold meanwhile)


class BenchmarkError(SwarmgaugeError):
    """A case's child process failed, hung or reported no figures."""


def reference_pairs(count: int) -> dict[str, tuple[bytes, bytes]]:
    """Per corpus path: the FETCH bytes MarkClient sends and the exact bytes the reference server answers."""
    from datetime import datetime

    from swarmgauge.protocols.mark import encode_request
    from swarmgauge.targets.mark.handler import Handler
    from swarmgauge.targets.mark.seed import corpus, corpus_paths, seed_store
    from swarmgauge.targets.mark.store import Store

    moment = datetime.fromisoformat(CLOCK.replace("Z", "+00:00"))
    store = Store()
    seed_store(store, corpus(count), moment)
    handler = Handler(store, None, lambda: moment)
    requests = {path: encode_request("FETCH", path, {}, b"") for path in corpus_paths(count)}
    return {path: (request, handler.handle(request)) for path, request in requests.items()}


def percentile(ordered: list[float], share: float) -> float | None:
    """Nearest-rank percentile of an already sorted list."""
    if not ordered:
        return None
    rank = max(1, math.ceil(share * len(ordered) - 1e-9))
    return ordered[min(len(ordered), rank) - 1]


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


NO_ANSWER_GRACE_S = 10.0  # how long a window that has caught no answer yet stays open past its duration


class Window:
    """Completed FETCHes, failures, latencies and CPU over the steady window only."""

    def __init__(self, server_pid: int | None, cpu_clock: Callable[[], float] = time.process_time):
        import psutil

        self.server = psutil.Process(server_pid) if server_pid else None
        self.cpu_clock = cpu_clock
        self.open = False
        self.done = self.failed = 0
        self.latencies: list[float] = []
        self.errors: dict[str, int] = {}

    def record(self, milliseconds: float, ok: bool, error: str | None = None) -> None:
        if not self.open:
            return
        if ok:
            self.done += 1
            self.latencies.append(milliseconds)
        else:
            self.failed += 1
            if error is not None:
                self.errors[error] = self.errors.get(error, 0) + 1

    def _server_cpu(self) -> float:
        if self.server is None:
            return 0.0
        times = self.server.cpu_times()
        return times.user + times.system

    def start(self) -> None:
        self._cpu, self._wall, self._srv, self._times = (
            self.cpu_clock(),
            time.perf_counter(),
            self._server_cpu(),
            os.times(),
        )
        self.open = True

    def stop(self) -> dict[str, Any]:
        self.open = False
        cpu, wall = self.cpu_clock() - self._cpu, time.perf_counter() - self._wall
        server, times = self._server_cpu() - self._srv, os.times()
        kernel = (times.system - self._times.system) / max(
            1e-9, times.user + times.system - self._times.user - self._times.system
        )
        ordered, done = sorted(self.latencies), max(self.done, 1)
        return {
            "requests": self.done,
            "failures": self.failed,
            "errors": dict(self.errors),
            "seconds": round(wall, 3),
            "req_per_s": round(self.done / wall, 1),
            "cpu_us_per_fetch": round(cpu / done * 1e6, 1),
            "cpu_use": round(cpu / wall, 3),
            "sys_share": round(kernel, 3),
            "p50_ms": _ms(percentile(ordered, 0.50)),
            "p99_ms": _ms(percentile(ordered, 0.99)),
            "server_cpu_us_per_fetch": round(server / done * 1e6, 1) if self.server else None,
        }


# -- (a) MarkUser under Locust ---------------------------------------------------------------------------------
def run_locust(opts: argparse.Namespace, window: Window) -> dict[str, Any]:
    import gevent
    import locust
    import psutil
    from locust import constant_throughput
    from locust.env import Environment

    from swarmgauge.locustfiles.demarkus_reads import FetchUser, FreshFetchUser

    parsed = argparse.Namespace(
        host=opts.url,
        mark_insecure=True,
        mark_connection="",
        mark_timeout=10.0,
        mark_corpus=opts.corpus,
        mark_quic_engine=opts.engine,
    )
    user_class = FreshFetchUser if opts.policy == "fresh" else FetchUser
    if opts.pace:
        user_class = type(
            "PacedFetchUser",
            (user_class,),
            {"wait_time": constant_throughput(opts.pace / opts.users), "abstract": False},
        )
    env = Environment(user_classes=[user_class], host=opts.url, parsed_options=parsed)
    process = psutil.Process()
    rss_before = process.memory_info().rss

    handshakes = [0]

    def on_request(request_type: str, response_time: float, exception: BaseException | None, **_: Any) -> None:
        if request_type == "FETCH":
            window.record(response_time, exception is None, type(exception).__name__ if exception else None)
        elif exception is None:
            handshakes[0] += 1

    env.events.request.add_listener(on_request)
    runner = env.create_local_runner()
    if opts.pace:
        # the paced scaling table is memory per user as a run keeps it: after swarmgauge's run set-up at Locust's
        # init (its wait seam among it); the closed-loop rows time the client alone, as the FastHttpUser anchor runs
        locust.events.init.fire(environment=env, runner=runner, web_ui=None)
    runner.start(opts.users, spawn_rate=min(opts.users, 100))  # a faster burst of Initials overflows UDP buffers
    for _ in range(1200):  # bounded (120 s): every user spawned, and connected if pooled
        gevent.sleep(0.1)
        if runner.user_count >= opts.users and (opts.policy == "fresh" or handshakes[0] >= opts.users):
            break
    gevent.sleep(opts.warmup)
    rss_per_user = (process.memory_info().rss - rss_before) / opts.users
    profiler = Profiler(opts.profile_case, opts.duration) if opts.profile_case else None
    window.start()
    gevent.sleep(opts.duration)
    result = window.stop()
    result["generator_kib_per_connection"] = round(rss_per_user / 1024, 1)
    if profiler is not None:
        result["profile"] = profiler.summary()
    runner.quit()
    return result


PARTS = (
    ("aioquic", ("aioquic",)),
    ("qh3", ("qh3",)),
    ("crypto/TLS (C)", ("cryptography", "_rust", "libcrypto", "libssl")),
    ("syscalls", ("libc.so", "_socket", "UdpTransport.send", "UdpTransport.drain", "'recv'", "'send'", "epoll")),
    (
        "swarmgauge",
        (
            *(str(ROOT / name) for name in ("locustfiles", "swarmgauge")),
            *("locustfiles/", "swarmgauge/"),
        ),
    ),
    ("locust", ("/locust/", "locust/")),
    ("gevent/greenlet", ("gevent", "greenlet", "libev")),
)


def part_of(where: str) -> str:
    """Which layer a leaf frame belongs to, by its file or library name."""
    for part, needles in PARTS:
        if any(needle in where for needle in needles):
            return part
    return "python/stdlib"


class Profiler:
    """The steady window of this process profiled: py-spy from outside (sampling without pausing, so greenlet
    switches do not blur it; time in C is its Python caller's), else cProfile on the CPU clock (greenlets blur it)."""

    def __init__(self, kind: str, duration: float):
        self.kind, self.path = kind, Path(tempfile.mkstemp(suffix=".txt")[1])
        if kind == "py-spy":
            command = [
                kind_path("py-spy"),
                "record",
                "--pid",
                str(os.getpid()),
                "--duration",
                str(max(1, int(duration))),
                "--rate",
                "250",
                "--nonblocking",
                "--gil",
                "--function",
                "--format",
                "raw",
                "--output",
                str(self.path),
            ]
            self._process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        else:
            import cProfile

            self._profile = cProfile.Profile(time.process_time)
            self._profile.enable()

    def _leaves(self) -> dict[str, float]:
        if self.kind != "py-spy":
            import pstats

            self._profile.disable()
            return {
                (function if filename == "~" else f"{function} ({filename}:{line})"): row[2]
                for (filename, line, function), row in pstats.Stats(self._profile).stats.items()
            }
        try:
            self._process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._process.kill()
            raise BenchmarkError("py-spy did not finish") from None
        leaves: dict[str, float] = {}
        for line in self.path.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            leaf = stack.rsplit(";", 1)[-1]
            leaves[leaf] = leaves.get(leaf, 0.0) + int(count)
        return leaves

    def summary(self, top: int = 15) -> dict[str, Any]:
        """The top functions by own time (samples or CPU seconds) and each part's share of the whole."""
        leaves = self._leaves()
        self.path.unlink(missing_ok=True)
        total = sum(leaves.values()) or 1e-9
        parts: dict[str, float] = {}
        for leaf, amount in leaves.items():
            parts[part_of(leaf)] = parts.get(part_of(leaf), 0.0) + amount
        ranked = sorted(leaves.items(), key=lambda item: item[1], reverse=True)[:top]
        return {
            "profiler": self.kind,
            "unit": "samples" if self.kind == "py-spy" else "cpu_s",
            "total": round(total, 4),
            "top": [
                {
                    "function": leaf.replace(str(ROOT) + "/", ""),
                    "part": part_of(leaf),
                    "self": round(amount, 4),
                    "share": round(amount / total, 4),
                }
                for leaf, amount in ranked
            ],
            "by_part": {p: round(v / total, 4) for p, v in sorted(parts.items(), key=lambda item: -item[1])},
        }


def kind_path(name: str) -> str:
    """A tool from this venv's bin, else from PATH."""
    beside = Path(sys.executable).with_name(name)
    return str(beside) if beside.exists() else (shutil.which(name) or name)


# -- (b) aioquic's asyncio client ------------------------------------------------------------------------------
def run_asyncio(opts: argparse.Namespace, window: Window) -> dict[str, Any]:
    import asyncio
    import ssl

    from aioquic.asyncio import QuicConnectionProtocol, connect
    from aioquic.quic.configuration import QuicConfiguration
    from aioquic.quic.events import ConnectionTerminated, StreamDataReceived

    class OneRequestPerStream(QuicConnectionProtocol):
        """Each request on a new stream with FIN; the answer is everything up to the server's FIN."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._waiting: dict[int, tuple[asyncio.Future, list[bytes]]] = {}

        async def exchange(self, data: bytes) -> bytes:
            stream_id = self._quic.get_next_available_stream_id()
            future = self._loop.create_future()
            self._waiting[stream_id] = (future, [])
            self._quic.send_stream_data(stream_id, data, end_stream=True)
            self.transmit()
            return await future

        def quic_event_received(self, event: Any) -> None:
            if isinstance(event, StreamDataReceived) and event.stream_id in self._waiting:
                future, chunks = self._waiting[event.stream_id]
                chunks.append(event.data)
                if event.end_stream:
                    del self._waiting[event.stream_id]
                    future.set_result(b"".join(chunks))
            elif isinstance(event, ConnectionTerminated):
                for future, _ in self._waiting.values():
                    future.done() or future.set_exception(ConnectionError(event.reason_phrase))
                self._waiting.clear()

    parts = urlsplit(opts.url)
    host, port = parts.hostname, parts.port
    configuration = QuicConfiguration(
        is_client=True, alpn_protocols=["mark"], verify_mode=ssl.CERT_NONE, server_name=host, idle_timeout=30.0
    )
    pairs = reference_pairs(opts.corpus)
    paths = sorted(pairs)
    checked = {"answers": 0, "mismatches": 0}
    closing: set[asyncio.Future] = set()
    window_closed = False

    async def fresh_exchange(data: bytes) -> bytes:
        manager = connect(host, port, configuration=configuration, create_protocol=OneRequestPerStream)
        protocol = await manager.__aenter__()
        try:
            return await protocol.exchange(data)
        finally:  # the close waits out 3 PTOs: off the user's path, as MarkUser's fresh close
            closer = asyncio.ensure_future(manager.__aexit__(None, None, None))
            closing.add(closer)
            closer.add_done_callback(closing.discard)

    async def user(seed: int, deadline: float) -> None:
        rng = random.Random(seed)
        manager = (
            None
            if opts.policy == "fresh"
            else connect(host, port, configuration=configuration, create_protocol=OneRequestPerStream)
        )
        protocol = await manager.__aenter__() if manager is not None else None
        try:
            while time.monotonic() < deadline and not window_closed:
                request, expected = pairs[rng.choice(paths)]
                started = time.perf_counter()
                try:
                    body = await asyncio.wait_for(
                        protocol.exchange(request) if protocol else fresh_exchange(request), 10.0
                    )
                except (TimeoutError, ConnectionError):
                    window.record(0.0, False)
                    continue
                window.record((time.perf_counter() - started) * 1000.0, True)
                checked["answers"] += 1
                checked["mismatches"] += body != expected
        finally:
            if manager is not None:
                await manager.__aexit__(None, None, None)

    async def run() -> dict[str, Any]:
        nonlocal window_closed
        deadline = time.monotonic() + opts.warmup + opts.duration + NO_ANSWER_GRACE_S + 0.5
        users = [asyncio.ensure_future(user(seed, deadline)) for seed in range(opts.users)]
        await asyncio.sleep(opts.warmup)
        window.start()
        await asyncio.sleep(opts.duration)
        # aioquic's client takes ~0.8 s a handshake against the qh3 server: a short window on a busy machine can close
        # before any fresh FETCH is answered, a row of nothing. It stays open (bounded) until one is.
        for _ in range(int(NO_ANSWER_GRACE_S / 0.1)):
            if window.done or window.failed:
                break
            await asyncio.sleep(0.1)
        result = window.stop()
        window_closed = True
        await asyncio.gather(*users)
        if closing:
            await asyncio.wait(set(closing), timeout=5.0)
        return result

    result = asyncio.run(run())
    result["reference_bytes"] = checked
    return result


# -- (c) aioquic alone, in memory ------------------------------------------------------------------------------
def run_memory(opts: argparse.Namespace, window: Window) -> dict[str, Any]:
    from benchmarks.mark_memory import MemoryExchange
    from swarmgauge.protocols.mark import encode_request, parse_response

    pairs = reference_pairs(opts.corpus)
    exchange = MemoryExchange(dict(pairs.values()), quic_engine=opts.engine)
    window.cpu_clock = lambda: exchange.cpu
    rng, paths = random.Random(0), sorted(pairs)
    handshakes, handshake_cpu = 0, 0.0
    if opts.policy == "pooled":
        exchange.open()
    started = time.monotonic()
    while time.monotonic() < started + opts.warmup + opts.duration:
        if not window.open and time.monotonic() >= started + opts.warmup:
            window.start()
        request = pairs[rng.choice(paths)][0]
        began = time.perf_counter()
        if opts.policy == "fresh":
            before = exchange.cpu
            exchange.open()
            handshakes, handshake_cpu = handshakes + 1, handshake_cpu + exchange.cpu - before
        exchange.fetch(request)
        if opts.policy == "fresh":
            exchange.close()
        window.record((time.perf_counter() - began) * 1000.0, True)
        exchange.now += 0.0001  # the user's turn-around before its next request
    result = {**window.stop(), "p50_ms": None, "p99_ms": None}  # wall time here includes the server's share
    result["handshake_cpu_us"] = round(handshake_cpu / handshakes * 1e6, 1) if handshakes else None
    if opts.policy == "pooled":  # the same work with the process idle between requests, as a socket client is
        before, count = exchange.cpu, max(10, min(200, int(opts.duration * 20)))
        for path in paths[:count]:
            exchange.fetch(pairs[path][0])
            exchange.now += PACED_GAP
            time.sleep(PACED_GAP)
        result["cpu_us_per_fetch_paced"] = round((exchange.cpu - before) / count * 1e6, 1)
    answers = [answer for _, answer in pairs.values()]
    began = time.thread_time()
    for path, answer in zip(paths, answers):
        parse_response(answer), encode_request("FETCH", path, {}, b"")
    result["codec_us_per_fetch"] = round((time.thread_time() - began) / len(paths) * 1e6, 1)
    return result
