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
import errno
import json
import os
import socket
import time
from pathlib import Path

from swarmgauge.protocols import cgminer
from swarmgauge.targets.mdk import rpc
from swarmgauge.targets.mdk.common import Lane, StackPlan, announce_ready, process_cpu_seconds

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


#: what a non-blocking ``send`` right after ``connect`` raises while the handshake is still under way
_NOT_YET = (errno.EAGAIN, errno.EWOULDBLOCK, errno.ENOTCONN, errno.EINPROGRESS)


class DeviceCall:
    """One CGMiner call on its own connection: send the request, gather the reply until the device closes.

    A plain non-blocking socket watched by the event loop, not a transport and a protocol: the collection and every
    read open a connection each (~1,500 a second at 5,000 / 5, one a read under 1,000 readers), and a transport's
    set-up (the connect coroutine, its waiters, three passes of the loop) was most of the Worker's own CPU. On
    loopback the handshake is done when ``connect`` returns, so the request goes out at once; otherwise the call
    waits for the socket to be writable first. The reply, or the failure as an ``OSError``, settles ``answered``."""

    __slots__ = ("answered", "chunks", "loop", "request", "sock", "watching")

    def __init__(self, request: bytes, answered: asyncio.Future[bytes]) -> None:
        self.loop = answered.get_loop()
        self.request, self.answered = request, answered
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setblocking(False)
        self.chunks: list[bytes] = []
        self.watching = ""  # "w" while the connect completes, "r" while the reply comes

    def start(self, host: str, port: int) -> None:
        code = self.sock.connect_ex((host, port))
        if code in (0, errno.EINPROGRESS):
            self._send()
        else:
            self._fail(OSError(code, os.strerror(code)))

    def _send(self) -> None:
        try:
            sent = self.sock.send(self.request)
        except OSError as exc:
            if exc.errno in _NOT_YET and not self.watching:
                self.watching = "w"
                self.loop.add_writer(self.sock.fileno(), self._connected)
                return
            self._fail(exc)
            return
        if sent != len(self.request):
            self._fail(OSError(errno.EPIPE, "request not sent whole"))
            return
        self.watching = "r"
        self.loop.add_reader(self.sock.fileno(), self._readable)

    def _connected(self) -> None:
        self.loop.remove_writer(self.sock.fileno())
        code = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            self.watching = ""
            self._fail(OSError(code, os.strerror(code)))
            return
        self._send()

    def _readable(self) -> None:
        while True:
            try:
                data = self.sock.recv(65536)
            except BlockingIOError:
                return
            except OSError as exc:
                self._fail(exc)
                return
            if not data:
                if not self.answered.done():
                    self.answered.set_result(b"".join(self.chunks))
                self.close()
                return
            self.chunks.append(data)

    def _fail(self, exc: OSError) -> None:
        if not self.answered.done():
            self.answered.set_exception(exc)
        self.close()

    def expire(self) -> None:
        self._fail(TimeoutError("the device did not answer in time"))

    def close(self) -> None:
        if self.watching == "r":
            self.loop.remove_reader(self.sock.fileno())
        elif self.watching == "w":
            self.loop.remove_writer(self.sock.fileno())
        self.watching = ""
        self.sock.close()


class DeviceDriver:
    def __init__(self, device_id: str, host: str, port: int, cache_s: float, timeout_s: float) -> None:
        self.device_id, self.host, self.port = device_id, host, port
        self.cache_s, self.timeout_s = cache_s, timeout_s
        self.lock = asyncio.Lock()
        self.cache: dict | None = None
        self.cache_at = float("-inf")
        self.last: dict | None = None

    async def _call(self, command: str, parameter: str | None = None) -> cgminer.Reply:
        """One command on a new connection; ``device_timeout_s`` bounds the connect and the answer together (on
        loopback the connect is done at once, so the answer has the whole of it, as before)."""
        loop = asyncio.get_running_loop()
        answered: asyncio.Future[bytes] = loop.create_future()
        call = DeviceCall(cgminer.encode_request(command, parameter), answered)
        timer = loop.call_later(self.timeout_s, call.expire)
        try:
            call.start(self.host, self.port)
            data = await answered
        except ConnectionRefusedError as exc:
            raise DeviceError("ECONNREFUSED") from exc
        except TimeoutError as exc:
            raise DeviceError("ETIMEDOUT") from exc
        except OSError as exc:
            raise DeviceError("ECONNRESET") from exc
        finally:
            timer.cancel()
            call.close()
        try:
            return cgminer.decode_reply(data).raise_for_status()
        except cgminer.CGMinerError as exc:
            raise DeviceError("EPROTO") from exc

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
        self.lane = Lane()
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

    async def telemetry(self, params: dict) -> dict:
        driver = self._driver(params)
        await self.lane.turn(self.plan.worker_read_us / 1e6)
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
