"""``MDKClient``: fleet reads and action submits against an MDK Gateway base URL, each one measured request.

The client checks what the Gateway's HTTP status hides: a 200 action whose ``result.status`` is not ``QUEUED``
is ``Rejected(code)``, a 200 read with null ``metrics`` or a metric carrying ``error`` is a failure. Non-2xx
bodies ``{statusCode, error, message: "ERR_..."}`` are classified by code, 429 as ``MDKRateLimited``. Every request
event goes through ``users.recording.measure``; failures are named exceptions, and the caller goes on.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote, urlsplit

import gevent
import gevent.lock
from geventhttpclient.response import HTTPConnectionClosed, HTTPParseError

from swarmgauge.core.failure_names import bounded_reason
from swarmgauge.core.request_names import MDK_CONNECT_NAME, MDK_REQUEST_TYPE
from swarmgauge.errors import SwarmgaugeError, UsageError
from swarmgauge.users.backoff import Backoff
from swarmgauge.users.recording import measure
from swarmgauge.users.single_attempt import SingleAttemptHTTPClient

REQUEST_TYPE = MDK_REQUEST_TYPE
CONNECT_NAME = MDK_CONNECT_NAME
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
        super().__init__(f"{bounded_reason(channel)}: {bounded_reason(error)}")
        self.channel, self.error = channel, error


class FleetShort(MDKError):
    """The summary's ``deviceCount`` is below the expected fleet size."""


class GatewayTimeout(MDKError):
    """No complete answer within the client's timeout (a hung Gateway)."""


class GatewayUnreachable(MDKError):
    """Connection refused, reset or closed before an answer; the detail is the error's class name (a bounded set)."""


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


def parsed_or_none(raw: bytes) -> Any:
    """The body as JSON, or None when it is empty or not JSON."""
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


def gateway_error(status: int, value: Any) -> GatewayError:
    """A non-2xx answer (its parsed body ``value``) as its named failure, by the ``ERR_...`` code of its
    ``message``, else the status."""
    message = str(value.get("message", "")) if isinstance(value, dict) else ""
    match = ERR_CODE.match(message)
    code = bounded_reason(match.group(0)) if match else f"HTTP {status}"
    return (DeviceNotFound if code == "ERR_DEVICE_NOT_FOUND" else GatewayError)(status, code)


def forwarded_for(index: int) -> str:
    """A distinct loopback address per user index (127.1.0.1, 127.1.0.2, ...), for a per-IP limiter."""
    return f"127.{1 + (index >> 16) % 254}.{(index >> 8) & 255}.{1 + index % 254}"


class MDKClient:
    """One keep-alive connection to a Gateway; each method is one measured request.

    Methods return the checked value, or None when the request failed (the failure is recorded and kept in
    ``last_error``). After a transport fault (``GatewayUnreachable``, ``GatewayTimeout``, an answer that is not HTTP)
    the next request waits out ``backoff`` first, so a Gateway that is down is not hammered.
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
        self.backoff = Backoff()

    def _connect(self) -> SingleAttemptHTTPClient:
        return SingleAttemptHTTPClient(
            *self.address, connection_timeout=self.timeout, network_timeout=self.timeout, concurrency=1
        )

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
                answer = response.status_code, response.read()
        except TimeoutError as exc:
            raise self._transport_fault(GatewayTimeout(f"no answer within {self.timeout:g} s")) from exc
        except GatewayTimeout as exc:
            raise self._transport_fault(exc) from None
        except HTTPConnectionClosed as exc:
            raise self._transport_fault(GatewayUnreachable("HTTPConnectionClosed")) from exc
        except HTTPParseError as exc:
            raise self._transport_fault(BadResponse("answer is not valid HTTP")) from exc
        except (ConnectionError, OSError) as exc:
            raise self._transport_fault(GatewayUnreachable(type(exc).__name__)) from exc
        self.backoff.succeeded()
        return answer

    def _transport_fault(self, error: MDKError) -> MDKError:
        """Start the backoff and drop the connection (a closed pool cannot be reused); returns ``error`` to raise."""
        self.backoff.failed()
        self._reset()
        return error

    def _answered(self, method: str, path: str, outcome, body: bytes = b"") -> tuple[int, bytes]:
        """One request's status and body, both noted on its outcome; a 429 raised as :class:`MDKRateLimited`."""
        status, raw = self._request(method, path, body)
        outcome.response_length = len(raw)
        outcome.context["status"] = status
        if status == 429:
            raise MDKRateLimited("HTTP 429")
        return status, raw

    def _json(self, method: str, path: str, outcome, body: bytes = b"") -> Any:
        status, raw = self._answered(method, path, outcome, body)
        try:
            value = json.loads(raw) if raw else None
        except ValueError:
            value = None
            if 200 <= status < 300:
                raise BadResponse(f"HTTP {status} body is not JSON") from None
        if not 200 <= status < 300:
            raise gateway_error(status, value)
        if not isinstance(value, dict):
            raise BadResponse(f"HTTP {status} body is not a JSON object")
        return value

    def _measured(self, name: str, fn, context: dict | None = None) -> Any:
        result = None
        self.last_error = None
        self.backoff.wait()
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
                raise Rejected(bounded_reason(match.group(0) if match else result["status"]))
            outcome.context["command_id"] = result.get("commandId")
            return str(result.get("commandId"))

        return self._measured("action", run, {"device_id": device_id, "action": action})

    def connect(self) -> bool:
        """Open the keep-alive connection ahead of the load with one ``GET /echo``, a request of its own name
        (``connect``), so the run counts every request the Gateway saw: whether it was answered. A 404 (a Gateway
        without that route) keeps the connection just the same and counts as connected; 429 and any other non-2xx
        are failures named as every request's are."""

        def run(outcome) -> bool:
            status, raw = self._answered("GET", "/echo", outcome)
            if not 200 <= status < 300 and status != 404:
                raise gateway_error(status, parsed_or_none(raw))
            return True

        return bool(self._measured(CONNECT_NAME, run))

    def echo(self, value: str = "x") -> bool:
        def run(outcome) -> bool:
            body = self._json("GET", f"/echo?value={quote(value)}", outcome)
            if body.get("value") != value:
                raise BadResponse("echo did not echo")
            return True

        return bool(self._measured("echo", run))
