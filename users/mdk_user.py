"""``MDKClient`` and ``MDKUser``: fleet reads and action submits against an MDK Gateway base URL.

The client checks what the Gateway's HTTP status hides: a 200 action whose ``result.status`` is not ``QUEUED``
is ``Rejected(code)``, a 200 read with null ``metrics`` or a metric carrying ``error`` is a failure. Non-2xx
bodies ``{statusCode, error, message: "ERR_..."}`` are classified by code, 429 as ``MDKRateLimited``. Every request
event goes through ``users.recording.measure``; failures are named exceptions, and the user greenlet goes on.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from typing import Any
from urllib.parse import quote, urlsplit

import gevent
import gevent.lock
from geventhttpclient import HTTPClient
from locust import User, between, events, task

from swarmgauge.errors import SwarmgaugeError, UsageError
from swarmgauge.users.recording import measure

REQUEST_TYPE = "MDK"
ERR_CODE = re.compile(r"ERR_[A-Z0-9_]+")
DEFAULT_ACTION = "setPowerMode"
DEFAULT_PARAMS = '{"mode":"normal"}'
TASK_NAMES = ("telemetry", "summary", "alerts", "action")


class MDKError(SwarmgaugeError):
    """Base of every failure an MDK Gateway request records; ``repr`` is what Locust's failures table groups by."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.detail})"

    __str__ = __repr__


class Rejected(MDKError):
    """The Kernel answered an action with ``REJECTED`` (HTTP 200); ``code`` is its ``ERR_...`` prefix."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


class MDKRateLimited(MDKError):
    """HTTP 429 from the Gateway's per-IP limiter; counted apart from errors."""


class GatewayError(MDKError):
    """A non-2xx answer, classified by the ``ERR_...`` code of its ``message`` (or the status when there is none)."""

    def __init__(self, status: int, code: str) -> None:
        super().__init__(code)
        self.status, self.code = status, code


class DeviceNotFound(GatewayError):
    """The Gateway no longer knows this device id (``ERR_DEVICE_NOT_FOUND``)."""


class BadResponse(MDKError):
    """A 2xx body that is not JSON or lacks the fields the route promises."""


class NullMetrics(MDKError):
    """A telemetry read whose ``metrics`` is null: the pull failed behind the Gateway."""


class MetricError(MDKError):
    """A telemetry read with a metric carrying ``error`` (or ``snap.success`` false); ``channel`` names it."""

    def __init__(self, channel: str, error: str) -> None:
        super().__init__(f"{channel}: {error}")
        self.channel, self.error = channel, error


class FleetShort(MDKError):
    """The summary's ``deviceCount`` is below the expected fleet size."""


class GatewayTimeout(MDKError):
    """No complete answer within the client's timeout (a hung Gateway)."""


class GatewayUnreachable(MDKError):
    """Connection refused or reset before an answer."""


TIMED_OUT = (GatewayTimeout,)


def check_metrics(metrics: Any) -> dict:
    """The harness's rule, made stricter: null metrics, any metric with ``error``, or a failed snap fail."""
    if metrics is None:
        raise NullMetrics("metrics is null")
    if not isinstance(metrics, dict):
        raise BadResponse("metrics is not an object")
    for channel, value in metrics.items():
        if isinstance(value, dict):
            if "error" in value:
                raise MetricError(channel, str(value["error"]))
            if value.get("success") is False:
                raise MetricError(channel, "success false")
    return metrics


def forwarded_for(index: int) -> str:
    """A distinct loopback address per user index (127.1.0.1, 127.1.0.2, ...), for a per-IP limiter."""
    return f"127.{1 + (index >> 16) % 254}.{(index >> 8) & 255}.{1 + index % 254}"


class MDKClient:
    """One keep-alive connection to a Gateway; each method is one measured request.

    Methods return the checked value, or None when the request failed (the failure is recorded and kept in
    ``last_error``).
    """

    def __init__(
        self, base_url: str, request_event_source: Any = None, timeout: float = 10.0, forwarded_for: str | None = None
    ) -> None:
        url = urlsplit(base_url)
        if url.scheme not in ("http", "") or not url.hostname:
            raise UsageError(f"MDK Gateway base URL must be http://HOST:PORT, got {base_url!r}")
        self.events = request_event_source
        self.prefix = url.path.rstrip("/")
        self.timeout = timeout
        self.headers = {"Content-Type": "application/json"}
        if forwarded_for:
            self.headers["X-Forwarded-For"] = forwarded_for
        self.address = (url.hostname, url.port or 80)
        self.http = self._connect()
        self.last_error: BaseException | None = None

    def _connect(self) -> HTTPClient:
        return HTTPClient(*self.address, connection_timeout=self.timeout, network_timeout=self.timeout, concurrency=1)

    def _reset(self) -> None:
        """Drop a connection left mid-answer (a closed pool cannot be reused), so the next request starts clean."""
        self.http.close()
        self.http = self._connect()

    def close(self) -> None:
        self.http.close()

    def _request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        try:
            with gevent.Timeout(self.timeout, GatewayTimeout(f"no answer within {self.timeout:g} s")):
                response = self.http.request(method, self.prefix + path, body=body, headers=self.headers)
                return response.status_code, response.read()
        except TimeoutError as exc:
            self._reset()
            raise GatewayTimeout(f"no answer within {self.timeout:g} s") from exc
        except GatewayTimeout:
            self._reset()
            raise
        except (ConnectionError, OSError) as exc:
            self._reset()
            raise GatewayUnreachable(type(exc).__name__) from exc

    def _json(self, method: str, path: str, outcome, body: bytes = b"") -> Any:
        status, raw = self._request(method, path, body)
        outcome.response_length = len(raw)
        outcome.context["status"] = status
        if status == 429:
            raise MDKRateLimited("HTTP 429")
        try:
            value = json.loads(raw) if raw else None
        except ValueError:
            value = None
            if 200 <= status < 300:
                raise BadResponse(f"HTTP {status} body is not JSON") from None
        if not 200 <= status < 300:
            message = str(value.get("message", "")) if isinstance(value, dict) else ""
            match = ERR_CODE.match(message)
            code = match.group(0) if match else f"HTTP {status}"
            raise (DeviceNotFound if code == "ERR_DEVICE_NOT_FOUND" else GatewayError)(status, code)
        if not isinstance(value, dict):
            raise BadResponse(f"HTTP {status} body is not a JSON object")
        return value

    def _measured(self, name: str, fn, context: dict | None = None) -> Any:
        result = None
        self.last_error = None
        with measure(self.events, REQUEST_TYPE, name, context=context) as outcome:
            result = fn(outcome)
        self.last_error = outcome.exception
        return None if outcome.exception is not None else result

    def summary(self, expect_devices: int = 0, name: str = "summary") -> dict | None:
        def run(outcome) -> dict:
            body = self._json("GET", "/api/fleet/summary", outcome)
            devices = body.get("devices")
            if not isinstance(devices, list) or not isinstance(body.get("deviceCount"), int):
                raise BadResponse("summary without devices/deviceCount")
            if any(not isinstance(d, dict) or not isinstance(d.get("deviceId"), str) for d in devices):
                raise BadResponse("summary device without deviceId")
            outcome.context["device_count"] = body["deviceCount"]
            if expect_devices and body["deviceCount"] < expect_devices:
                raise FleetShort(f"deviceCount below {expect_devices}")
            return body

        return self._measured(name, run)

    def telemetry(self, device_id: str) -> dict | None:
        def run(outcome) -> dict:
            body = self._json("GET", f"/api/fleet/device/{quote(device_id, safe='')}/telemetry", outcome)
            if "metrics" not in body:
                raise BadResponse("telemetry without metrics")
            return check_metrics(body["metrics"])

        return self._measured("telemetry", run, {"device_id": device_id})

    def alerts(self, device_id: str) -> list | None:
        def run(outcome) -> list:
            body = self._json("GET", f"/api/fleet/device/{quote(device_id, safe='')}/alerts", outcome)
            if not isinstance(body.get("alerts"), list):
                raise BadResponse("alerts without a list")
            return body["alerts"]

        return self._measured("alerts", run, {"device_id": device_id})

    def action(self, device_id: str, action: str = DEFAULT_ACTION, params: dict | None = None) -> str | None:
        """Submit one action; success only when the Kernel accepted it (``QUEUED``); returns the commandId."""
        payload = json.dumps({"action": action, "params": params if params is not None else {"mode": "normal"}})

        def run(outcome) -> str:
            body = self._json(
                "POST", f"/api/fleet/device/{quote(device_id, safe='')}/action", outcome, payload.encode()
            )
            result = body.get("result")
            if not isinstance(result, dict) or "status" not in result:
                raise BadResponse("action without result.status")
            if result["status"] != "QUEUED":
                match = ERR_CODE.match(str(result.get("error", "")))
                raise Rejected(match.group(0) if match else str(result["status"]))
            outcome.context["command_id"] = result.get("commandId")
            return str(result.get("commandId"))

        return self._measured("action", run, {"device_id": device_id, "action": action})

    def echo(self, value: str = "x") -> bool:
        def run(outcome) -> bool:
            body = self._json("GET", f"/echo?value={quote(value)}", outcome)
            if body.get("value") != value:
                raise BadResponse("echo did not echo")
            return True

        return bool(self._measured("echo", run))


@events.init_command_line_parser.add_listener
def _add_options(parser) -> None:
    parser.add_argument(
        "--mdk-expect-devices",
        type=int,
        default=0,
        env_var="SWARMGAUGE_MDK_EXPECT_DEVICES",
        include_in_web_ui=True,
        help="summary fails when deviceCount is below this (0: no check)",
    )
    parser.add_argument(
        "--mdk-action",
        default=DEFAULT_ACTION,
        env_var="SWARMGAUGE_MDK_ACTION",
        include_in_web_ui=True,
        help="action the action task submits",
    )
    parser.add_argument(
        "--mdk-params",
        default=DEFAULT_PARAMS,
        env_var="SWARMGAUGE_MDK_PARAMS",
        include_in_web_ui=True,
        help="JSON object of the action's params",
    )
    parser.add_argument(
        "--mdk-weights",
        default="telemetry=10,summary=1,alerts=1,action=2",
        env_var="SWARMGAUGE_MDK_WEIGHTS",
        include_in_web_ui=True,
        help="task weights, e.g. telemetry=10,summary=1,alerts=1,action=2 (0 disables a task)",
    )
    parser.add_argument(
        "--mdk-forwarded-for",
        action="store_true",
        default=False,
        env_var="SWARMGAUGE_MDK_FORWARDED_FOR",
        include_in_web_ui=True,
        help="send a distinct loopback X-Forwarded-For per user (for a per-IP rate limit)",
    )
    parser.add_argument(
        "--mdk-timeout",
        type=float,
        default=10.0,
        env_var="SWARMGAUGE_MDK_TIMEOUT",
        include_in_web_ui=True,
        help="seconds a Gateway request may take before GatewayTimeout",
    )


def parse_weights(text: str) -> dict[str, int]:
    weights = {name: 0 for name in TASK_NAMES}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep or name.strip() not in weights:
            raise UsageError(f"--mdk-weights: want NAME=N with NAME in {', '.join(TASK_NAMES)}, got {item!r}")
        try:
            weights[name.strip()] = int(value)
        except ValueError as exc:
            raise UsageError(f"--mdk-weights: {item!r} is not NAME=integer") from exc
        if weights[name.strip()] < 0:
            raise UsageError(f"--mdk-weights: {item!r} is negative")
    if not any(weights.values()):
        raise UsageError("--mdk-weights: every task has weight 0")
    return weights


def parse_params(text: str) -> dict:
    try:
        params = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--mdk-params is not JSON: {text!r}") from exc
    if not isinstance(params, dict):
        raise UsageError("--mdk-params must be a JSON object")
    return params


_user_index = itertools.count()


class FleetCache:
    """The device ids this process discovered, shared by its users: one summary for a whole spawn, not one each
    (a summary reads every device, so 200 users discovering at once would queue on the devices for a minute)."""

    def __init__(self) -> None:
        self.lock = gevent.lock.BoundedSemaphore()
        self.device_ids: list[str] = []

    def forget(self, device_id: str) -> None:
        if device_id in self.device_ids:
            self.device_ids.remove(device_id)


def fleet_cache(environment) -> FleetCache:
    found = getattr(environment, "_swarmgauge_mdk_fleet", None)
    if found is None:
        found = environment._swarmgauge_mdk_fleet = FleetCache()
    return found


class MDKUser(User):
    """Discovers device ids from the fleet summary, then reads and submits by the ``--mdk-weights`` mix."""

    abstract = True
    wait_time = between(0.05, 0.2)
    weights: dict[str, int] | None = None

    def __init__(self, environment) -> None:
        super().__init__(environment)
        options = environment.parsed_options
        self.index = next(_user_index)
        self.expect_devices = getattr(options, "mdk_expect_devices", 0) or 0
        self.action_name = getattr(options, "mdk_action", DEFAULT_ACTION) or DEFAULT_ACTION
        self.action_params = parse_params(getattr(options, "mdk_params", DEFAULT_PARAMS) or DEFAULT_PARAMS)
        self.mix = (
            dict(self.weights)
            if self.weights
            else parse_weights(getattr(options, "mdk_weights", None) or "telemetry=10,summary=1,alerts=1,action=2")
        )
        xff = forwarded_for(self.index) if getattr(options, "mdk_forwarded_for", False) else None
        if not self.host:
            raise UsageError("MDKUser needs --host, the Gateway's base URL")
        self.client = MDKClient(
            self.host, environment.events, timeout=getattr(options, "mdk_timeout", 10.0) or 10.0, forwarded_for=xff
        )
        self.device_ids: list[str] = []

    def discover(self) -> None:
        """Device ids from ``GET /api/fleet/summary`` (shared in the process; asked again once all are gone)."""
        fleet = fleet_cache(self.environment)
        with fleet.lock:
            if not fleet.device_ids:
                body = self.client.summary(self.expect_devices, name="discover")
                if body is not None:
                    fleet.device_ids = [d["deviceId"] for d in body["devices"]]
            self.device_ids = list(fleet.device_ids)

    def on_start(self) -> None:
        self.discover()

    def on_stop(self) -> None:
        self.client.close()

    def pick_device(self) -> str | None:
        if not self.device_ids:
            self.discover()
        return random.choice(self.device_ids) if self.device_ids else None

    def _forget_if_gone(self, device_id: str) -> None:
        if isinstance(self.client.last_error, DeviceNotFound) and device_id in self.device_ids:
            self.device_ids.remove(device_id)
            fleet_cache(self.environment).forget(device_id)

    def do_telemetry(self) -> None:
        device_id = self.pick_device()
        if device_id is not None:
            self.client.telemetry(device_id)
            self._forget_if_gone(device_id)

    def do_summary(self) -> None:
        self.client.summary(self.expect_devices)

    def do_alerts(self) -> None:
        device_id = self.pick_device()
        if device_id is not None:
            self.client.alerts(device_id)
            self._forget_if_gone(device_id)

    def do_action(self) -> None:
        device_id = self.pick_device()
        if device_id is not None:
            self.client.action(device_id, self.action_name, self.action_params)
            self._forget_if_gone(device_id)

    @task
    def step(self) -> None:
        names = [n for n in TASK_NAMES if self.mix.get(n)]
        choice = random.choices(names, weights=[self.mix[n] for n in names])[0]
        getattr(self, f"do_{choice}")()
