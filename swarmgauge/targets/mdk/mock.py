"""Stand-in mock devices: one CGMiner text-API TCP listener per Worker, shared by all its devices.

Like the MDK harness's Avalon mock: one request per connection, the reply then ``close``; unknown or garbled
commands get no reply. ``summary`` (the live ``snap`` read) costs a random 220-390 ms (times ``read_cost_scale``),
which is where the page says a device read's latency comes from; the cached commands answer at once.
"""

from __future__ import annotations

import asyncio
import random
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


class MockConnection(asyncio.Protocol):
    """One CGMiner connection: the first segment read is the request, the reply goes after its cost, then close.

    A protocol with timers, not a stream and a task per connection: the 5,000 / 5 fleet's collection opens ~1,500
    connections a second (a device's snap, then its cached channels), and that per-connection overhead was the stand-in's
    own CPU, not the model's, on the 2 cores the Kernel's burst shares."""

    def __init__(self, miner: MockMiner) -> None:
        self.miner = miner
        self.transport: asyncio.Transport | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.answered = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.timer = asyncio.get_running_loop().call_later(REQUEST_WAIT_S, transport.close)

    def data_received(self, data: bytes) -> None:
        if self.answered or self.transport is None:
            return
        self.answered = True
        if self.timer is not None:
            self.timer.cancel()
        try:
            request = cgminer.decode_request(data[: cgminer.MAX_REQUEST_BYTES])
        except cgminer.CGMinerError:
            request = None
        reply = None if request is None else self.miner.reply_for(request)
        if request is None or reply is None:
            self.transport.close()
            return
        payload = cgminer.encode_reply(reply)
        cost = self.miner.cost_s(request)
        if cost > 0:
            self.timer = asyncio.get_running_loop().call_later(cost, self._answer, payload)
        else:
            self._answer(payload)

    def _answer(self, payload: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(payload)
            self.transport.close()  # after the write is flushed

    def eof_received(self) -> bool:
        return self.answered  # a client that half-closes after its request still gets the reply; before it, none

    def connection_lost(self, exc: Exception | None) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.transport = None


async def serve_listener(host: str, port: int, miner: MockMiner) -> asyncio.base_events.Server:
    loop = asyncio.get_running_loop()
    return await loop.create_server(lambda: MockConnection(miner), host, port, backlog=1024)


async def run(root: Path) -> None:
    plan = StackPlan.load(root)
    servers = [
        await serve_listener(plan.host, w.mock_port, MockMiner(plan.read_cost_ms, plan.read_cost_scale))
        for w in plan.workers
    ]
    announce_ready(root, "mocks", " ".join(f"{w.id}={plan.host}:{w.mock_port}" for w in plan.workers))
    await asyncio.gather(*(server.serve_forever() for server in servers))
