"""A stand-in MDK Worker: owns its devices, reads them over the CGMiner text API, runs the collection cycle.

Per device a driver serialises reads (one lock), reads the live ``snap`` channel on every call and the other
channels through a 5 s device-data cache, as the Avalon driver does. The collection cycle reads every device at
``query_concurrency`` every ``collect_interval_s``; its duration is the Worker's cycle time (headroom's numerator).
A read the Worker serves takes ``worker_read_us`` of its one lane first (the MDK page's Node.js Worker, one core:
one Worker's CPU caps the fleet's read throughput, and more Workers raise it), booked on the lane's own timeline so
the stand-in's event-loop lag does not add to it.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

from swarmgauge.protocols import cgminer
from swarmgauge.targets.mdk import rpc
from swarmgauge.targets.mdk.common import StackPlan, announce_ready, process_cpu_seconds

LIVE_CHANNELS = ("snap",)
CACHED_CHANNELS = ("hashrate_avg", "power", "temperature", "status", "power_mode", "pools")
MODE_CODES = {"sleep": "0", "normal": "1", "high": "2"}
MODE_NAMES = {v: k for k, v in MODE_CODES.items()}
ALERT_TEMP_C = 85.0


class DeviceError(Exception):
    """A device call failed; ``code`` is what the driver reports (``ECONNREFUSED``, ``ETIMEDOUT``, ``EPROTO``)."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


class DeviceCall(asyncio.Protocol):
    """One CGMiner call on its own connection: send the request, gather the reply until the device closes.

    A protocol and a future, not a stream pair and a read task: the collection opens three connections a device
    every sweep (~1,500 a second at 5,000 / 5), and their per-connection overhead was the stand-in's own CPU."""

    def __init__(self, request: bytes, answered: asyncio.Future[bytes]) -> None:
        self.request, self.answered = request, answered
        self.chunks: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        self.chunks.append(data)

    def eof_received(self) -> bool:
        if not self.answered.done():
            self.answered.set_result(b"".join(self.chunks))
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if self.answered.done():
            return
        if exc is None:
            self.answered.set_result(b"".join(self.chunks))
        else:
            self.answered.set_exception(exc)


class DeviceDriver:
    def __init__(self, device_id: str, host: str, port: int, cache_s: float, timeout_s: float) -> None:
        self.device_id, self.host, self.port = device_id, host, port
        self.cache_s, self.timeout_s = cache_s, timeout_s
        self.lock = asyncio.Lock()
        self.cache: dict | None = None
        self.cache_at = float("-inf")
        self.last: dict | None = None

    async def _call(self, command: str, parameter: str | None = None) -> cgminer.Reply:
        loop = asyncio.get_running_loop()
        answered: asyncio.Future[bytes] = loop.create_future()
        request = cgminer.encode_request(command, parameter)
        try:
            transport, _ = await asyncio.wait_for(
                loop.create_connection(lambda: DeviceCall(request, answered), self.host, self.port), self.timeout_s
            )
        except ConnectionRefusedError as exc:
            raise DeviceError("ECONNREFUSED") from exc
        except TimeoutError as exc:
            raise DeviceError("ETIMEDOUT") from exc
        except OSError as exc:
            raise DeviceError("ECONNRESET") from exc
        try:
            return cgminer.decode_reply(await asyncio.wait_for(answered, self.timeout_s)).raise_for_status()
        except TimeoutError as exc:
            raise DeviceError("ETIMEDOUT") from exc
        except cgminer.CGMinerError as exc:
            raise DeviceError("EPROTO") from exc
        except OSError as exc:
            raise DeviceError("ECONNRESET") from exc
        finally:
            transport.close()

    async def _snap(self) -> dict:
        try:
            summary = (await self._call("summary")).section("SUMMARY")
            return {
                "success": True,
                "hashrate_ths": round(cgminer.number(summary, "MHS av") / 1e6, 3),
                "elapsed": int(cgminer.number(summary, "Elapsed")),
            }
        except (DeviceError, cgminer.CGMinerError) as exc:
            return {"success": False, "error": getattr(exc, "code", "EPROTO")}

    async def _device_data(self) -> dict:
        stats = (await self._call("estats")).section("STATS")
        pools = (await self._call("pools")).sections
        return {
            "hashrate_avg": round(cgminer.number(stats, "MHS av") / 1e6, 3),
            "power": cgminer.number(stats, "Power"),
            "temperature": cgminer.number(stats, "Temp"),
            "status": "mining" if any(v.get("Status") == "Alive" for _, v in pools) else "idle",
            "power_mode": MODE_NAMES.get(stats.get("WORKMODE", ""), "unknown"),
            "pools": len(pools),
        }

    async def metrics(self) -> dict:
        async with self.lock:
            snap = await self._snap()
            now = time.monotonic()
            if now - self.cache_at > self.cache_s:
                try:
                    self.cache = await self._device_data()
                    self.cache_at = time.monotonic()
                except (DeviceError, cgminer.CGMinerError) as exc:
                    code = getattr(exc, "code", "EPROTO")
                    self.cache, self.cache_at = {name: {"error": code} for name in CACHED_CHANNELS}, float("-inf")
            result = {"snap": snap, **(self.cache or {})}
            self.last = result
            return result

    async def execute(self, action: str, params: dict) -> dict:
        async with self.lock:
            try:
                if action == "setPowerMode":
                    await self._call("ascset", f"0,workmode,{MODE_CODES[params['mode']]}")
                elif action == "setLED":
                    await self._call("ascset", f"0,led,{1 if params.get('enabled') else 0}")
                elif action == "reboot":
                    await self._call("ascset", "0,reboot,0")
                elif action == "setupPools":
                    await self._call("ascset", "0,setpool,bench,bench,stratum+tcp://127.0.0.1:3333")
            except DeviceError as exc:
                raise rpc.RpcError(f"ERR_DEVICE_CALL: {exc.code}") from exc
            self.cache_at = float("-inf")
            return {"success": True}

    def alerts(self) -> list[dict]:
        temp = (self.last or {}).get("temperature")
        if isinstance(temp, (int, float)) and temp >= ALERT_TEMP_C:
            return [{"name": "chips_temp_critical", "severity": "high"}]
        return []


class Worker:
    def __init__(self, root: Path, plan: StackPlan, worker_id: str) -> None:
        self.root, self.plan = root, plan
        self.me = plan.worker(worker_id)
        self.drivers = {
            d: DeviceDriver(d, plan.host, self.me.mock_port, plan.cache_s, plan.device_timeout_s)
            for d in self.me.devices
        }
        self.lane_free_at = 0.0
        self.last_cycle_s: float | None = None
        self.cycle_started: float | None = None
        self.cycles = 0

    def _driver(self, params: dict) -> DeviceDriver:
        driver = self.drivers.get(params.get("deviceId", ""))
        if driver is None:
            raise rpc.RpcError("ERR_DEVICE_NOT_FOUND")
        return driver

    def _health(self) -> dict:
        return {
            "workerId": self.me.id,
            "pid": os.getpid(),
            "deviceIds": list(self.drivers),
            "cpu_seconds": process_cpu_seconds(),
            "cycle_s": self.cycle_s(),
            "cycles": self.cycles,
        }

    def cycle_s(self) -> float | None:
        """The last full sweep's time, or the sweep still running once it has taken longer than that (or than the
        interval, before the first ends): its time so far is then a lower bound, so an overloaded Worker whose first
        sweep outlasts a short run still shows its headroom past 1 instead of none."""
        if self.cycle_started is not None:
            running = time.monotonic() - self.cycle_started
            if running > (self.last_cycle_s if self.last_cycle_s is not None else self.plan.collect_interval_s):
                return running
        return self.last_cycle_s

    async def identity(self, params: dict) -> dict:
        return self._health()

    async def ping(self, params: dict) -> dict:
        return self._health()

    async def _read_turn(self) -> None:
        """Wait for this read's turn on the Worker's lane (none when ``worker_read_us`` is 0)."""
        cost = self.plan.worker_read_us / 1e6
        if cost <= 0:
            return
        now = asyncio.get_running_loop().time()
        self.lane_free_at = max(now, self.lane_free_at) + cost
        await asyncio.sleep(self.lane_free_at - now)

    async def telemetry(self, params: dict) -> dict:
        driver = self._driver(params)
        await self._read_turn()
        query = params.get("query") or "metrics"
        if isinstance(query, dict) and query.get("type") == "list":
            return {"alerts": driver.alerts(), "last": driver.last}
        return await driver.metrics()

    async def execute(self, params: dict) -> dict:
        if params.get("action") == "forgetThings":
            self.drivers.pop(params.get("deviceId", ""), None)
            return {"success": True}
        return await self._driver(params).execute(params.get("action", ""), params.get("params") or {})

    async def collect_forever(self) -> None:
        gate = asyncio.Semaphore(max(1, self.plan.query_concurrency))

        async def read(driver: DeviceDriver) -> None:
            async with gate:
                await driver.metrics()

        while True:
            self.cycle_started = started = time.monotonic()
            await asyncio.gather(*(read(d) for d in list(self.drivers.values())))
            self.last_cycle_s, self.cycle_started = time.monotonic() - started, None
            self.cycles += 1
            await asyncio.sleep(max(0.0, self.plan.collect_interval_s - self.last_cycle_s))

    async def run(self) -> None:
        handlers: dict[str, rpc.Handler] = {
            "identity": self.identity,
            "ping": self.ping,
            "telemetry": self.telemetry,
            "execute": self.execute,
        }
        server = await rpc.serve(self.plan.host, self.me.port, handlers)
        keys = self.root / "workers"
        keys.mkdir(parents=True, exist_ok=True)
        tmp = keys / f".{self.me.id}.tmp"
        tmp.write_text(json.dumps({"workerId": self.me.id, "port": self.me.port, "pid": os.getpid()}))
        os.replace(tmp, keys / f"{self.me.id}.json")
        announce_ready(self.root, self.me.id, f"port={self.me.port} devices={len(self.drivers)}")
        await asyncio.gather(server.serve_forever(), self.collect_forever())


async def run(root: Path, worker_id: str) -> None:
    await Worker(root, StackPlan.load(root), worker_id).run()
