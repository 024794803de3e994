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


async def serve_listener(host: str, port: int, miner: MockMiner) -> asyncio.base_events.Server:
    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            data = await asyncio.wait_for(reader.read(cgminer.MAX_REQUEST_BYTES), 5.0)
            try:
                request = cgminer.decode_request(data)
            except cgminer.CGMinerError:
                return
            reply = miner.reply_for(request)
            if reply is None:
                return
            await asyncio.sleep(miner.cost_s(request))
            writer.write(cgminer.encode_reply(reply))
            await writer.drain()
        except (TimeoutError, OSError):
            pass
        finally:
            writer.close()

    return await asyncio.start_server(on_connect, host, port, backlog=1024)


async def run(root: Path) -> None:
    plan = StackPlan.load(root)
    servers = [
        await serve_listener(plan.host, w.mock_port, MockMiner(plan.read_cost_ms, plan.read_cost_scale))
        for w in plan.workers
    ]
    announce_ready(root, "mocks", " ".join(f"{w.id}={plan.host}:{w.mock_port}" for w in plan.workers))
    await asyncio.gather(*(server.serve_forever() for server in servers))
