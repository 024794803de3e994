"""A stand-in MDK Kernel: Worker registry with local discovery, health monitor, command dispatcher with a WAL.

Workers are found through ``<root>/workers/*.json`` (the harness's local discovery mode). A Worker is routable when
it is READY and its health is not SICK/DEAD; pings go every ``health_ping_s`` with a ``health_timeout_s`` timeout
and one missed ping marks it SICK. Commands and health pings share one dispatch lane, one turn at a time: commands
in arrival order, a ping only once no command waits (a timer on a busy event loop runs last). A turn costs
``accept_base_us`` + ``accept_us_per_device`` x fleet size + ``accept_us_per_inflight`` x commands in the Kernel
(waiting for the lane, or accepted and not settled). So a single command is accepted in a few ms at any fleet size;
under the 1,000/s burst, evenly paced, the lane keeps up at 1,000 devices (0.93 ms a turn); past 1 ms a turn the
median submit of a 3 s burst waits 1,500 x the excess: ~30 ms at 2,000 devices (1.02 ms, the page's "tens of ms")
and ~420 ms at 5,000 (1.28 ms, the page's green run: 423 ms at p50), where the queue lasts about a second after the
burst, and a ping that waits out the saturation misses its timeout: the Worker goes SICK and the commands still
waiting for it are rejected with ``ERR_WORKER_NOT_ROUTABLE`` (the MDK page's red 5,000 / 5 run; whether a ping falls
into the burst is chance, as the page's green and red runs). Reads do not take the lane. Commands are checked in
the real dispatcher's order, answered ``QUEUED`` before the Worker runs them, and executed asynchronously; after a
restart, commands the WAL shows in flight settle as ``TIMEOUT`` / ``ERR_COMMAND_UNCONFIRMED`` and are never re-sent.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import random
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from swarmgauge.targets.mdk import rpc
from swarmgauge.targets.mdk.common import Lane, StackPlan, announce_ready, process_cpu_seconds

CAPABILITIES: dict[str, dict[str, tuple[type | tuple[type, ...], tuple[str, ...] | None]]] = {
    "reboot": {},
    "setPowerMode": {"mode": (str, ("sleep", "normal", "high"))},
    "setLED": {"enabled": (bool, None)},
    "setupPools": {"pools": ((dict, list), None)},
    "forgetThings": {},
}
EXECUTION_CONCURRENCY = 64
COMMAND_TIMEOUT_S = 30.0
STATS_PULL_S = 1.0
ACCEPT_SAMPLES = 100_000
REQUEST_TIMEOUT = "ERR_MDK_REQUEST_TIMEOUT"


@dataclass
class WorkerEntry:
    worker_id: str
    port: int
    client: rpc.RpcClient
    state: str = "DISCOVERED"
    health: str = "UNKNOWN"
    device_ids: list[str] = field(default_factory=list)
    info: dict = field(default_factory=dict)
    ready_at: float | None = None

    @property
    def routable(self) -> bool:
        return self.state == "READY" and self.health in ("UNKNOWN", "HEALTHY")


async def _sent() -> None:
    """A lane turn that only sends."""


class Kernel:
    def __init__(self, root: Path, plan: StackPlan) -> None:
        self.root, self.plan = root, plan
        self.workers: dict[str, WorkerEntry] = {}
        self.device_owner: dict[str, str] = {}
        self.counters: collections.Counter = collections.Counter()
        self.rejected: collections.Counter = collections.Counter()
        self.started_at = time.time()
        self._exec_gate: asyncio.Semaphore | None = None
        self._executing: set[asyncio.Future] = set()
        self._lane = Lane()
        self.lane_waiting = 0
        self._lane_idle: asyncio.Event | None = None
        self.unsettled = 0
        self.missed_pings = 0
        self.accept_ms: collections.deque[float] = collections.deque(maxlen=ACCEPT_SAMPLES)
        wal_dir = root / "kernel"
        wal_dir.mkdir(parents=True, exist_ok=True)
        self.wal_path = wal_dir / "wal.jsonl"
        self.unconfirmed = self._recover()
        self.wal = open(self.wal_path, "a", buffering=1)

    def _recover(self) -> int:
        """Settle commands left in flight by a previous Kernel as TIMEOUT, and never re-send them."""
        open_commands: dict[str, dict] = {}
        if self.wal_path.exists():
            for line in self.wal_path.read_text().splitlines():
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if entry.get("state") in ("QUEUED", "EXECUTING"):
                    open_commands[entry["commandId"]] = entry
                else:
                    open_commands.pop(entry.get("commandId"), None)
        with open(self.wal_path, "a") as wal:
            for command_id in open_commands:
                wal.write(
                    json.dumps({"commandId": command_id, "state": "TIMEOUT", "error": "ERR_COMMAND_UNCONFIRMED"}) + "\n"
                )
        return len(open_commands)

    def _log(self, **entry) -> None:
        self.wal.write(json.dumps(entry, separators=(",", ":")) + "\n")

    # registry and health -------------------------------------------------------------------------------------
    def _reindex(self, entry: WorkerEntry, device_ids: list[str]) -> None:
        for device_id in entry.device_ids:
            if self.device_owner.get(device_id) == entry.worker_id:
                del self.device_owner[device_id]
        entry.device_ids = list(device_ids)
        for device_id in entry.device_ids:
            self.device_owner[device_id] = entry.worker_id

    async def _register(self, entry: WorkerEntry) -> None:
        try:
            info = await entry.client.call("identity", timeout=self.plan.health_timeout_s)
        except rpc.RpcError:
            return
        self._reindex(entry, info.get("deviceIds", []))
        entry.info, entry.state, entry.health, entry.ready_at = info, "READY", "HEALTHY", time.time()

    async def discover_forever(self) -> None:
        keys = self.root / "workers"
        while True:
            for path in sorted(keys.glob("*.json")) if keys.exists() else []:
                try:
                    record = json.loads(path.read_text())
                except (OSError, ValueError):
                    continue
                entry = self.workers.get(record["workerId"])
                port = int(record["port"])
                if entry is None or entry.port != port:  # new, or come back at another address: forget the old one
                    if entry is not None:
                        entry.client.close()
                    entry = WorkerEntry(
                        record["workerId"], port, rpc.RpcClient(self.plan.host, port, connect_timeout=0.5)
                    )
                    self.workers[entry.worker_id] = entry
                if entry.state == "READY" and not entry.client.connected:
                    entry.state, entry.health = "TERMINATED", "DEAD"
                if entry.state != "READY":
                    await self._register(entry)
            await asyncio.sleep(self.plan.scan_s)

    @property
    def in_flight(self) -> int:
        """Commands in the Kernel: waiting for the dispatch lane, or accepted and not yet settled."""
        return self.lane_waiting + self.unsettled

    def lane_cost_s(self) -> float:
        """One turn on the dispatch lane: grows with the fleet and with the commands in the Kernel."""
        us = (
            self.plan.accept_base_us
            + self.plan.accept_us_per_device * len(self.device_owner)
            + self.plan.accept_us_per_inflight * self.in_flight
        )
        return us / 1e6

    async def _on_lane(self, fn):
        """Run ``fn`` at the end of this caller's FIFO turn on the dispatch lane (``Lane``: booked on its own
        timeline, so the event loop's lag under load does not add to the modelled cost)."""
        await self._lane.turn(self.lane_cost_s())
        return await fn()

    def _idle_event(self) -> asyncio.Event:
        if self._lane_idle is None:
            self._lane_idle = asyncio.Event()
            self._lane_idle.set()
        return self._lane_idle

    async def _commands_drained(self) -> None:
        """Wait until no command waits for the lane (the caller bounds the wait)."""
        await self._idle_event().wait()

    async def _ping(self, entry: WorkerEntry) -> None:
        async def ping() -> dict:
            await self._commands_drained()
            await self._on_lane(_sent)  # the lane sends it; the Worker's answer comes back off the lane
            return await entry.client.call("ping", timeout=self.plan.health_timeout_s)

        try:
            info = await asyncio.wait_for(ping(), self.plan.health_timeout_s)
        except (TimeoutError, rpc.RpcTimeout):
            self.missed_pings += 1
            entry.health = "SICK"
            return
        except rpc.RpcError:
            entry.state, entry.health = "TERMINATED", "DEAD"
            return
        entry.health, entry.info = "HEALTHY", info
        if info.get("deviceIds") != entry.device_ids:
            self._reindex(entry, info.get("deviceIds", []))

    async def stats_forever(self) -> None:
        """Refresh each Worker's cycle time and CPU every second (the state pull); health is the pings' job."""

        async def pull(entry: WorkerEntry) -> None:
            try:
                entry.info = await entry.client.call("ping", timeout=1.0)
            except rpc.RpcError:
                pass

        while True:
            await asyncio.sleep(STATS_PULL_S)
            await asyncio.gather(*(pull(e) for e in list(self.workers.values()) if e.state == "READY"))

    async def health_forever(self) -> None:
        """Ping every ``health_ping_s``, the first time after ``health_phase_s`` (default: a random part of a period).

        A real Kernel was started at no particular moment before the harness, so where its pings fall against a
        burst is chance; with one fixed phase, the stand-in's pings met the plan's burst at the same point run after
        run (0 red runs of 6 at 5,000 / 5). A test that needs a ping at a known moment sets the phase.
        """
        phase = self.plan.health_phase_s
        await asyncio.sleep(random.uniform(0.0, self.plan.health_ping_s) if phase is None else phase)
        while True:
            await asyncio.gather(*(self._ping(e) for e in list(self.workers.values()) if e.state == "READY"))
            await asyncio.sleep(self.plan.health_ping_s)

    # RPC surface ---------------------------------------------------------------------------------------------
    def _owner(self, device_id: str) -> WorkerEntry:
        owner = self.device_owner.get(device_id or "")
        if owner is None:
            raise rpc.RpcError("ERR_DEVICE_NOT_FOUND")
        return self.workers[owner]

    async def list_workers(self, params: dict) -> list[dict]:
        return [
            {"workerId": e.worker_id, "state": e.state, "health": e.health, "deviceIds": e.device_ids}
            for e in self.workers.values()
        ]

    async def get_status(self, params: dict) -> dict:
        workers = [
            {
                "workerId": e.worker_id,
                "state": e.state,
                "health": e.health,
                "routable": e.routable,
                "devices": len(e.device_ids),
                "pid": e.info.get("pid"),
                "cpu_seconds": e.info.get("cpu_seconds"),
                "cycle_s": e.info.get("cycle_s"),
                "cycles": e.info.get("cycles"),
                "ready_at": e.ready_at,
            }
            for e in self.workers.values()
        ]
        return {
            "kernel": {
                "pid": os.getpid(),
                "cpu_seconds": process_cpu_seconds(),
                "started_at": self.started_at,
                "unconfirmed_recovered": self.unconfirmed,
            },
            "workers": workers,
            "collect_interval_s": self.plan.collect_interval_s,
            "commands": dict(self.counters),
            "rejected": dict(self.rejected),
            "missed_pings": self.missed_pings,
            "in_flight": self.in_flight,
            "accept_ms": self.accept_percentiles(),
        }

    async def pull_telemetry(self, params: dict) -> dict | None:
        entry = self._owner(params.get("deviceId", ""))
        if not entry.client.connected:
            return None
        try:
            return await entry.client.call(
                "telemetry",
                {"deviceId": params["deviceId"], "query": params.get("query")},
                timeout=self.plan.device_timeout_s,
            )
        except rpc.RpcTimeout as exc:
            # a read that waited out the request timeout (queued behind others on its device) is the page's
            # ERR_MDK_REQUEST_TIMEOUT, a timed-out read its verdict counts, not an answer without metrics
            raise rpc.RpcError(REQUEST_TIMEOUT) from exc
        except rpc.RpcUnavailable:
            return None

    def _check(self, params: dict) -> tuple[WorkerEntry, str] | str:
        action, device_id = params.get("action"), params.get("deviceId")
        if not action:
            return "ERR_COMMAND_REQUIRED"
        if not device_id:
            return "ERR_DEVICE_ID_REQUIRED"
        owner = self.device_owner.get(device_id)
        if owner is None:
            return "ERR_DEVICE_NOT_FOUND"
        entry = self.workers[owner]
        if not entry.routable:
            return "ERR_WORKER_NOT_ROUTABLE"
        if action not in CAPABILITIES:
            return f"ERR_COMMAND_NOT_IN_CAPABILITIES: {action}"
        given = params.get("params") or {}
        if not isinstance(given, dict):
            return "ERR_PARAM_TYPE: params"
        for name, (kind, allowed) in CAPABILITIES[action].items():
            if not isinstance(given.get(name), kind):
                return f"ERR_PARAM_TYPE: {name}"
            if allowed is not None and given[name] not in allowed:
                return f"ERR_PARAM_RANGE: {name}"
        return entry, action

    async def send_command(self, params: dict) -> dict:
        """Checked and queued on the dispatch lane, so acceptance waits for the commands and pings before it."""
        started = asyncio.get_running_loop().time()
        self.lane_waiting += 1
        self._idle_event().clear()
        try:
            return await self._on_lane(lambda: self._accept(params))
        finally:
            self.lane_waiting -= 1
            if not self.lane_waiting:
                self._idle_event().set()
            self.accept_ms.append((asyncio.get_running_loop().time() - started) * 1000)

    def accept_percentiles(self) -> dict[str, float]:
        """The Kernel's own acceptance time (arrival to answer), so a loaded generator host's lag is told apart."""
        ordered = sorted(self.accept_ms)
        if not ordered:
            return {}
        return {q: ordered[min(len(ordered) - 1, int(float(q) * len(ordered)))] for q in ("0.5", "0.99")}

    async def _accept(self, params: dict) -> dict:
        checked = self._check(params)
        if isinstance(checked, str):
            self.counters["REJECTED"] += 1
            self.rejected[checked.split(":")[0]] += 1
            return {"status": "REJECTED", "error": checked}
        entry, action = checked
        command_id = str(uuid.uuid4())
        self._log(commandId=command_id, state="QUEUED", deviceId=params["deviceId"], action=action)
        self.counters["QUEUED"] += 1
        self.unsettled += 1
        task = asyncio.ensure_future(self._execute(entry, command_id, params))
        self._executing.add(task)  # the loop holds tasks weakly: keep each until it is done
        task.add_done_callback(self._executing.discard)
        return {"commandId": command_id, "status": "QUEUED"}

    async def _execute(self, entry: WorkerEntry, command_id: str, params: dict) -> None:
        if self._exec_gate is None:
            self._exec_gate = asyncio.Semaphore(EXECUTION_CONCURRENCY)
        try:
            async with self._exec_gate:
                await self._run_command(entry, command_id, params)
        finally:
            self.unsettled -= 1

    async def _run_command(self, entry: WorkerEntry, command_id: str, params: dict) -> None:
        self._log(commandId=command_id, state="EXECUTING")
        try:
            await entry.client.call(
                "execute",
                {"deviceId": params["deviceId"], "action": params["action"], "params": params.get("params") or {}},
                timeout=COMMAND_TIMEOUT_S,
            )
        except rpc.RpcError as exc:
            self.counters["FAILED"] += 1
            self._log(commandId=command_id, state="FAILED", error=exc.code)
            return
        self.counters["SUCCESS"] += 1
        self._log(commandId=command_id, state="SUCCESS")

    async def run(self) -> None:
        handlers: dict[str, rpc.Handler] = {
            "listWorkers": self.list_workers,
            "getStatus": self.get_status,
            "pullTelemetry": self.pull_telemetry,
            "sendCommand": self.send_command,
        }
        server = await rpc.serve(self.plan.host, self.plan.kernel_port, handlers)
        announce_ready(self.root, "kernel", f"port={self.plan.kernel_port} unconfirmed={self.unconfirmed}")
        await asyncio.gather(
            server.serve_forever(), self.discover_forever(), self.health_forever(), self.stats_forever()
        )


async def run(root: Path) -> None:
    await Kernel(root, StackPlan.load(root)).run()
