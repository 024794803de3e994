"""A stand-in MDK Gateway: the benchmark plugin's ``/api/fleet/...`` routes, ``/echo``, and a ``/metrics`` page.

Successes are 200 with the controller's JSON; a Kernel-rejected action is still 200 with ``result.status ==
"REJECTED"``, as the real route does. Errors are ``{statusCode, error, message: "ERR_..."}``. The optional per-IP
limit (``rate_limit_per_min`` requests per ``rate_window_s``, default window 60 s; off by default as in the
harness) keys on the first ``X-Forwarded-For`` entry, as
Fastify's ``trustProxy`` would, and answers 429. ``/metrics`` (Prometheus text, a stand-in extra that the limiter
skips) carries each Worker's collection cycle time, the interval, states, CPU seconds and command counters, and
the Gateway's own request count (``mdk_gateway_requests_total``, every request; ``/metrics``'s own apart), which a
run's count of its requests is checked against. A device read takes ``gateway_read_us`` of the Gateway's one lane
first (one process serves every Worker's reads: more Workers raise the reads' ceiling only up to the Gateway's).
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import re
import time
from http import HTTPStatus
from pathlib import Path

from swarmgauge.targets.mdk import httpserver, rpc
from swarmgauge.targets.mdk.common import Lane, StackPlan, announce_ready, process_cpu_seconds
from swarmgauge.targets.mdk.httpserver import HttpRequest, HttpResponse

DEVICE_ROUTE = re.compile(r"^/api/fleet/device/([^/]+)/(telemetry|action|alerts)$")
KERNEL_TIMEOUT_S = 15.0


def error(status: int, message: str) -> HttpResponse:
    return HttpResponse.json(status, {"statusCode": status, "error": HTTPStatus(status).phrase, "message": message})


class Gateway:
    def __init__(self, root: Path, plan: StackPlan) -> None:
        self.root, self.plan = root, plan
        self.kernel = rpc.RpcClient(plan.host, plan.kernel_port, connect_timeout=0.5)
        self.hits: dict[str, collections.deque] = collections.defaultdict(collections.deque)
        self.counters: collections.Counter = collections.Counter()
        self.lane = Lane()

    async def _kernel(self, method: str, params: dict | None = None):
        return await self.kernel.call(method, params, timeout=KERNEL_TIMEOUT_S)

    def _limited(self, request: HttpRequest) -> bool:
        limit = self.plan.rate_limit_per_min
        if limit <= 0 or request.path == "/metrics":
            return False
        forwarded = request.headers.get("x-forwarded-for", "")
        key = forwarded.split(",")[0].strip() or request.peer
        now, hits = time.monotonic(), self.hits[key]
        while hits and now - hits[0] >= self.plan.rate_window_s:
            hits.popleft()
        if len(hits) >= limit:
            return True
        hits.append(now)
        return False

    async def app(self, request: HttpRequest) -> HttpResponse:
        self.counters["requests"] += 1
        if request.path == "/metrics":
            self.counters["metrics_requests"] += 1  # the sampler's, not the load's: a run's count is the rest
        if self._limited(request):
            self.counters["rate_limited"] += 1
            return error(429, "Rate limit exceeded, retry in 1 minute")
        try:
            return await self._route(request)
        except rpc.RpcUnavailable:
            return error(503, "ERR_MDK_CLIENT_UNAVAILABLE")
        except rpc.RpcTimeout:
            return error(504, "ERR_MDK_REQUEST_TIMEOUT")
        except rpc.RpcError as exc:
            if exc.code == "ERR_MDK_REQUEST_TIMEOUT":  # the Kernel's own request to the Worker timed out
                return error(504, exc.code)
            code = exc.code if exc.code.startswith("ERR_") else HTTPStatus(400).phrase
            return error(404 if code.startswith("ERR_DEVICE_NOT_FOUND") else 400, code)

    async def _route(self, request: HttpRequest) -> HttpResponse:
        path, method = request.path, request.method
        if path == "/echo" and method == "GET":
            return HttpResponse.json(200, {"value": (request.query.get("value") or [""])[0]})
        if path == "/metrics" and method == "GET":
            return HttpResponse(200, (await self.metrics_text()).encode(), "text/plain; version=0.0.4")
        if path == "/api/fleet/summary" and method == "GET":
            return HttpResponse.json(200, await self.summary())
        match = DEVICE_ROUTE.match(path)
        if match:
            device_id, leaf = match.groups()
            if leaf == "telemetry" and method == "GET":
                await self.lane.turn(self.plan.gateway_read_us / 1e6)
                metrics = await self._kernel("pullTelemetry", {"deviceId": device_id, "query": "metrics"})
                return HttpResponse.json(200, {"deviceId": device_id, "metrics": metrics})
            if leaf == "alerts" and method == "GET":
                thing = await self._kernel(
                    "pullTelemetry", {"deviceId": device_id, "query": {"type": "list", "status": True}}
                )
                return HttpResponse.json(200, {"deviceId": device_id, "alerts": (thing or {}).get("alerts", [])})
            if leaf == "action" and method == "POST":
                return await self.action(device_id, request.body)
        return error(404, f"Route {method}:{path} not found")

    async def action(self, device_id: str, body: bytes) -> HttpResponse:
        try:
            payload = json.loads(body or b"{}")
        except ValueError:
            return error(400, "ERR_BODY_NOT_JSON")
        if not isinstance(payload, dict) or not payload.get("action"):
            return error(400, "ERR_ACTION_REQUIRED")
        result = await self._kernel(
            "sendCommand", {"deviceId": device_id, "action": payload["action"], "params": payload.get("params") or {}}
        )
        return HttpResponse.json(200, {"deviceId": device_id, "action": payload["action"], "result": result})

    async def summary(self) -> dict:
        workers = await self._kernel("listWorkers")
        device_ids = [d for w in workers for d in w["deviceIds"]]

        async def pull(device_id: str):
            return device_id, await self._kernel("pullTelemetry", {"deviceId": device_id, "query": "metrics"})

        devices = []
        for outcome in await asyncio.gather(*(pull(d) for d in device_ids), return_exceptions=True):
            if isinstance(outcome, BaseException) or outcome[1] is None:
                continue
            device_id, metrics = outcome
            hashrate, power = metrics.get("hashrate_avg"), metrics.get("power")
            if not isinstance(hashrate, (int, float)) or not isinstance(power, (int, float)):
                continue
            devices.append({"deviceId": device_id, "hashrateThs": hashrate, "powerW": power})
        return {
            "deviceCount": len(devices),
            "totalHashrateThs": round(sum(d["hashrateThs"] for d in devices), 3),
            "totalPowerW": sum(d["powerW"] for d in devices),
            "devices": devices,
        }

    async def metrics_text(self) -> str:
        lines = [
            f'mdk_process_cpu_seconds_total{{component="gateway"}} {process_cpu_seconds():.3f}',
            f'mdk_process_pid{{component="gateway"}} {os.getpid()}',
            f"mdk_gateway_requests_total {self.counters['requests']}",
            f"mdk_gateway_rate_limited_total {self.counters['rate_limited']}",
            f"mdk_gateway_metrics_requests_total {self.counters['metrics_requests']}",
        ]
        try:
            status = await self.kernel.call("getStatus", timeout=2.0)
        except rpc.RpcError:
            return "\n".join(lines + ["mdk_kernel_up 0"]) + "\n"
        kernel = status["kernel"]
        lines += [
            "mdk_kernel_up 1",
            f"mdk_collection_interval_seconds {status['collect_interval_s']}",
            f'mdk_process_cpu_seconds_total{{component="kernel"}} {kernel["cpu_seconds"]:.3f}',
            f'mdk_process_pid{{component="kernel"}} {kernel["pid"]}',
        ]
        for w in status["workers"]:
            label = f'worker="{w["workerId"]}"'
            lines.append(f"mdk_worker_routable{{{label}}} {1 if w['routable'] else 0}")
            lines.append(f'mdk_worker_info{{{label},state="{w["state"]}",health="{w["health"]}"}} 1')
            lines.append(f"mdk_worker_devices{{{label}}} {w['devices']}")
            if w.get("cycle_s") is not None:
                lines.append(f"mdk_worker_collection_cycle_seconds{{{label}}} {w['cycle_s']:.4f}")
                lines.append(f"mdk_worker_collection_cycles_total{{{label}}} {w['cycles']}")
                lines.append(f"mdk_worker_headroom{{{label}}} {w['cycle_s'] / status['collect_interval_s']:.4f}")
            if w.get("cpu_seconds") is not None:
                lines.append(f'mdk_process_cpu_seconds_total{{component="{w["workerId"]}"}} {w["cpu_seconds"]:.3f}')
                lines.append(f'mdk_process_pid{{component="{w["workerId"]}"}} {w["pid"]}')
        for state, n in sorted(status["commands"].items()):
            lines.append(f'mdk_commands_total{{status="{state}"}} {n}')
        for code, n in sorted(status["rejected"].items()):
            lines.append(f'mdk_commands_rejected_total{{code="{code}"}} {n}')
        lines.append(f"mdk_kernel_missed_pings_total {status.get('missed_pings', 0)}")
        lines.append(f"mdk_kernel_commands_in_flight {status.get('in_flight', 0)}")
        for quantile, ms in sorted((status.get("accept_ms") or {}).items()):
            lines.append(f'mdk_kernel_accept_ms{{quantile="{quantile}"}} {ms:.3f}')
        return "\n".join(lines) + "\n"

    async def run(self) -> None:
        server = await httpserver.serve(self.plan.host, self.plan.gateway_port, self.app)
        announce_ready(self.root, "gateway", f"url=http://{self.plan.host}:{self.plan.gateway_port}")
        await server.serve_forever()


async def run(root: Path) -> None:
    await Gateway(root, StackPlan.load(root)).run()
