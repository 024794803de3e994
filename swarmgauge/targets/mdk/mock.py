"""Stand-in mock devices: one CGMiner text-API TCP listener per Worker, shared by all its devices.

Like the MDK harness's Avalon mock: one request per connection, the reply then ``close``; unknown or garbled
commands get no reply. ``summary`` (the live ``snap`` read) costs a random 220-390 ms (times ``read_cost_scale``),
which is where the page says a device read's latency comes from; the cached commands answer at once.
"""

from __future__ import annotations

import asyncio
import random
import socket
import time
from pathlib import Path

from swarmgauge.protocols import cgminer
from swarmgauge.targets.mdk.common import StackPlan, announce_ready

POWER_MODES = {"0": "sleep", "1": "normal", "2": "high"}


class MockMiner:
    """The state one mock listener answers from (devices behind one listener are indistinguishable)."""

    def __init__(self, cost_ms: tuple[float, float], scale: float) -> None:
        self.cost_ms, self.scale = cost_ms, scale
        self.started = time.time()
        self.workmode = "1"
        self.led = "0"

    def _status(self, msg: str, code: int = 11, status: str = "S") -> dict:
        return {"status": status, "code": code, "msg": msg, "description": "swarmgauge stand-in mock"}

    def reply_for(self, request: cgminer.Request) -> cgminer.Reply | None:
        now = int(time.time())
        elapsed = now - int(self.started)
        if request.command == "summary":
            mhs = 110_000_000 + random.randint(-2_000_000, 2_000_000)
            return cgminer.Reply(
                **self._status("Summary"),
                when=now,
                sections=[
                    (
                        "SUMMARY",
                        {
                            "Elapsed": str(elapsed),
                            "MHS av": f"{mhs:.2f}",
                            "MHS 5s": f"{mhs * 1.01:.2f}",
                            "Accepted": str(elapsed * 3),
                            "Rejected": "0",
                            "Hardware Errors": "0",
                        },
                    )
                ],
            )
        if request.command == "estats":
            return cgminer.Reply(
                **self._status("Stats", 70),
                when=now,
                sections=[
                    (
                        "STATS",
                        {
                            "ID": "AVA100",
                            "Elapsed": str(elapsed),
                            "MHS av": "110000000.00",
                            "Temp": "62",
                            "TMax": "78",
                            "Fan1": "4200",
                            "Power": "3300",
                            "WORKMODE": self.workmode,
                        },
                    )
                ],
            )
        if request.command == "pools":
            return cgminer.Reply(
                **self._status("1 Pool(s)", 7),
                when=now,
                sections=[
                    ("POOL", {"POOL": "0", "URL": "stratum+tcp://127.0.0.1:3333", "Status": "Alive", "User": "bench"})
                ],
            )
        if request.command == "version":
            return cgminer.Reply(
                **self._status("CGMiner versions", 22),
                when=now,
                sections=[
                    ("VERSION", {"CGMiner": "4.11.1", "API": "3.7", "PROD": "AvalonMiner 1346", "MODEL": "1346"})
                ],
            )
        if request.command == "ascset" and request.args[:1] == ["0"]:
            sub, args = (request.args[1:2] or [""])[0], request.args[2:]
            if sub == "workmode" and args[:1] and args[0] in POWER_MODES:
                self.workmode = args[0]
            elif sub == "led" and args[:1]:
                self.led = args[0]
            elif sub not in ("reboot", "setpool", "softoff"):
                return cgminer.Reply(**self._status(f"ASC 0 set info: unknown {sub}", 14, "E"), when=now)
            return cgminer.Reply(**self._status("ASC 0 set OK", 119, "I"), when=now)
        return None

    def cost_s(self, request: cgminer.Request) -> float:
        if request.command != "summary":
            return 0.0
        return random.uniform(*self.cost_ms) * self.scale / 1000.0


#: How long a connection may stay silent before the mock closes it (a client that sends nothing).
REQUEST_WAIT_S = 5.0


#: Connections taken from the listener's queue per wake-up of the event loop (as asyncio's own servers).
ACCEPT_BATCH = 100


class MockConnection:
    """One CGMiner connection: the first segment read is the request, the reply goes after its cost, then close.

    A plain non-blocking socket and timers, not a transport and a protocol: the 5,000 / 5 fleet's collection opens
    ~1,500 connections a second (a device's snap, then its cached channels) and every read under 1,000 readers one
    more, and a transport's set-up and teardown was most of the mocks' CPU. The request is usually in by the time
    the connection is accepted; otherwise the loop watches the socket until it comes or ``REQUEST_WAIT_S`` passes.
    After the request the socket is not watched: the reply is written whole (a few hundred bytes into an empty
    buffer), then the socket is closed, which sends it and the end of stream."""

    __slots__ = ("loop", "miner", "sock", "timer", "watching")

    def __init__(self, miner: MockMiner, sock: socket.socket, loop: asyncio.AbstractEventLoop) -> None:
        self.miner, self.sock, self.loop = miner, sock, loop
        self.timer: asyncio.TimerHandle | None = None
        self.watching = False

    def start(self) -> None:
        self._readable()
        if self.sock.fileno() >= 0 and self.timer is None:
            self.watching = True
            self.loop.add_reader(self.sock.fileno(), self._readable)
            self.timer = self.loop.call_later(REQUEST_WAIT_S, self.close)

    def _readable(self) -> None:
        try:
            data = self.sock.recv(cgminer.MAX_REQUEST_BYTES)
        except BlockingIOError:
            return
        except OSError:
            self.close()
            return
        self._stop_watching()
        if not data:
            self.close()  # the end of stream before a request: no reply
            return
        try:
            request: cgminer.Request | None = cgminer.decode_request(data)
        except cgminer.CGMinerError:
            request = None
        reply = None if request is None else self.miner.reply_for(request)
        if request is None or reply is None:
            self.close()
            return
        payload = cgminer.encode_reply(reply)
        cost = self.miner.cost_s(request)
        if cost > 0:
            self.timer = self.loop.call_later(cost, self._answer, payload)
        else:
            self._answer(payload)

    def _stop_watching(self) -> None:
        if self.watching:
            self.watching = False
            self.loop.remove_reader(self.sock.fileno())
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _answer(self, payload: bytes) -> None:
        self.timer = None
        try:
            self.sock.send(payload)
        except OSError:
            pass  # the client is gone: nobody to answer
        self.close()

    def close(self) -> None:
        self._stop_watching()
        self.sock.close()


class MockListener:
    """One listening socket accepting CGMiner connections for one Worker's devices."""

    def __init__(self, sock: socket.socket, miner: MockMiner) -> None:
        self.sock, self.miner = sock, miner
        self.loop = asyncio.get_running_loop()
        self.closed: asyncio.Future[None] = self.loop.create_future()
        self.loop.add_reader(sock.fileno(), self._accept)

    def _accept(self) -> None:
        for _ in range(ACCEPT_BATCH):
            try:
                conn, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return
            except OSError as exc:  # out of file descriptors, say: the loop logs it, the listener goes on
                self.loop.call_exception_handler({"message": "the mock could not accept", "exception": exc})
                return
            conn.setblocking(False)
            MockConnection(self.miner, conn, self.loop).start()

    def close(self) -> None:
        if not self.closed.done():
            self.loop.remove_reader(self.sock.fileno())
            self.sock.close()
            self.closed.set_result(None)

    async def serve_forever(self) -> None:
        await self.closed


async def serve_listener(host: str, port: int, miner: MockMiner) -> MockListener:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(1024)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return MockListener(sock, miner)


async def run(root: Path) -> None:
    plan = StackPlan.load(root)
    servers = [
        await serve_listener(plan.host, w.mock_port, MockMiner(plan.read_cost_ms, plan.read_cost_scale))
        for w in plan.workers
    ]
    announce_ready(root, "mocks", " ".join(f"{w.id}={plan.host}:{w.mock_port}" for w in plan.workers))
    await asyncio.gather(*(server.serve_forever() for server in servers))
