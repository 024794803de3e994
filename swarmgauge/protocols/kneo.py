"""kneo-serv run dispatch as pure values: request bodies, response parsing, named errors, the run ledger.

No I/O here: the client in ``users/kneo_user.py`` sends the bytes and hands the status code, headers and body to these
functions, so every way a response can be wrong is tested without a socket. Facts are from kneo-serv 1.2.0
(``shared/docs/protocols/kneo.md``): ``completed`` is the success status (``succeeded`` accepted defensively), 503
``queue_full`` carries ``Retry-After``, error envelopes are ``{"detail": {"error": code, ...}}``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from swarmgauge.core.failure_names import bounded_reason
from swarmgauge.errors import SwarmgaugeError

TERMINAL_STATUSES = frozenset({"completed", "succeeded", "failed", "cancelled", "timed_out", "expired"})
SUCCESS_STATUSES = frozenset({"completed", "succeeded"})
RUN_TAG_KEY = "swarmgauge_run"
#: The service's Prometheus gauges and counters a run samples (``GET /metrics``).
METRIC_NAMES = (
    "kneo_runs_queued",
    "kneo_runs_running",
    "kneo_worker_count",
    "kneo_runs_started_total",
    "kneo_runs_completed_total",
    "kneo_runs_failed_total",
    "kneo_runs_rejected_total",
)


class KneoError(SwarmgaugeError):
    """Any failure talking to kneo-serv."""


class KneoUnreachable(KneoError):
    """No HTTP response at all: refused, reset, or timed out."""


class KneoMalformedResponse(KneoError):
    """A response whose body is not the JSON object the API promises."""


class KneoHTTPError(KneoError):
    """A non-success status; ``code`` is the envelope's ``error`` value (or ``http_<status>``)."""

    def __init__(self, status: int, code: str, message: str = "") -> None:
        super().__init__(f"{code} (HTTP {status})")
        self.status = status
        self.code = code
        self.message = message


class QueueFull(KneoHTTPError):
    """503 ``queue_full``: backpressure, counted apart from errors; the service stores the run as failed."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str = "",
        retry_after: float | None = None,
        depth: int | None = None,
        limit: int | None = None,
    ) -> None:
        super().__init__(status, code, message)
        self.retry_after = retry_after
        self.depth = depth
        self.limit = limit


class KneoUnauthorized(KneoHTTPError):
    """401: missing or unknown API key."""


class Forbidden(KneoHTTPError):
    """403: the key lacks the scope (e.g. ``runs:write``) or a policy blocks the environment."""


class SpecInvalid(KneoHTTPError):
    """400 ``spec_invalid`` / 422 ``spec_path_confined``: the spec the run names cannot be used."""


class ServiceUnavailable(KneoHTTPError):
    """503 other than ``queue_full`` (e.g. ``store_unavailable``)."""


class RunNotCompleted(KneoError):
    """A run reached a terminal status other than success; the class names the status."""

    def __init__(self, run_id: str, status: str) -> None:
        super().__init__(f"run {status}")
        self.run_id = run_id
        self.status = status


class RunFailed(RunNotCompleted):
    """Terminal ``failed``."""


class RunCancelled(RunNotCompleted):
    """Terminal ``cancelled``."""


class RunTimedOut(RunNotCompleted):
    """Terminal ``timed_out``."""


class RunExpired(RunNotCompleted):
    """Terminal ``expired``."""


class PollTimeout(KneoError):
    """Polling gave up before the run reached a terminal status (the wait is bounded)."""

    def __init__(self, run_id: str, last_status: str, waited: float) -> None:
        super().__init__(f"run still {bounded_reason(last_status)} at the poll bound")
        self.waited = waited
        self.run_id = run_id
        self.last_status = last_status


_TERMINAL_FAILURES = {"failed": RunFailed, "cancelled": RunCancelled, "timed_out": RunTimedOut, "expired": RunExpired}


def run_request(input_text: str, *, spec_path: str, target: str, async_mode: bool, run_tag: str) -> dict[str, Any]:
    """The ``POST /v1/runs`` body; the tag goes into ``metadata`` so the store can be reconciled per run."""
    return {
        "input": input_text,
        "spec_path": spec_path,
        "target": target,
        "async_mode": async_mode,
        "metadata": {RUN_TAG_KEY: run_tag},
    }


def _decode_object(body: bytes) -> dict[str, Any]:
    try:
        value = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise KneoMalformedResponse("body is not JSON") from exc
    if not isinstance(value, dict):
        raise KneoMalformedResponse(f"body is JSON {type(value).__name__}, not an object")
    return value


def _retry_after(headers: Mapping[str, str]) -> float | None:
    for key, value in headers.items():
        if key.lower() == "retry-after":
            try:
                return float(value)
            except ValueError:
                return None
    return None


def error_for(status: int, headers: Mapping[str, str], body: bytes) -> KneoHTTPError:
    """The named error for a non-success response; a non-JSON error body still gets a class by status."""
    detail: Any = None
    try:
        detail = _decode_object(body).get("detail")
    except KneoMalformedResponse:
        pass
    code, message, extra = f"http_{status}", "", {}
    if isinstance(detail, dict):
        code = bounded_reason(detail.get("error")) if detail.get("error") else code
        message = str(detail.get("message") or "")
        extra = detail
    elif isinstance(detail, list):
        code = "validation_error"
    if status == 503 and code == "queue_full":
        return QueueFull(
            status,
            code,
            message,
            retry_after=_retry_after(headers),
            depth=extra.get("queue_depth"),
            limit=extra.get("limit"),
        )
    if status == 401:
        return KneoUnauthorized(status, code if code != "http_401" else "unauthorized", message)
    if status == 403:
        return Forbidden(status, code if code != "http_403" else "forbidden", message)
    if code in ("spec_invalid", "spec_path_confined"):
        return SpecInvalid(status, code, message)
    if status == 503:
        return ServiceUnavailable(status, code, message)
    return KneoHTTPError(status, code, message)


@dataclass(frozen=True)
class RunState:
    """What a create or poll response says about one run."""

    run_id: str
    status: str
    error: Any = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES


def parse_run(status: int, headers: Mapping[str, str], body: bytes, *, expect: tuple[int, ...]) -> RunState:
    """Parse a create (200/202) or poll (200) response, or raise its named error."""
    if status not in expect:
        if 200 <= status < 300:
            raise KneoMalformedResponse(f"unexpected HTTP {status}, expected {expect}")
        raise error_for(status, headers, body)
    obj = _decode_object(body)
    run_id, run_status = obj.get("run_id"), obj.get("status")
    if not isinstance(run_id, str) or not run_id or not isinstance(run_status, str):
        raise KneoMalformedResponse("response lacks run_id/status")
    return RunState(run_id, run_status, obj.get("error"))


def check_terminal(state: RunState) -> None:
    """Raise the status's named failure unless the run succeeded; a non-terminal state is a protocol error."""
    if state.status in SUCCESS_STATUSES:
        return
    cls = _TERMINAL_FAILURES.get(state.status)
    if cls is not None:
        raise cls(state.run_id, state.status)
    raise KneoMalformedResponse(f"status {bounded_reason(state.status)!r} is not terminal")


def poll_delays(initial: float, factor: float, cap: float) -> Iterator[float]:
    """Backoff between polls: initial, initial*factor, ... capped; the caller bounds count and time."""
    delay = initial
    while True:
        yield delay
        delay = min(cap, delay * factor)


@dataclass
class RunLedger:
    """What this process's users sent and saw, per run tag, for the end-of-run reconciliation.

    ``accepted`` maps run id to the terminal status Locust observed (``None`` until then). ``refused`` counts sends
    answered with an error envelope and no run id, by error code (some, like a sync ``spec_invalid``, still leave a
    failed row). ``indeterminate`` counts sends that got no response, so a row the store has but Locust never heard
    of can be explained.
    """

    accepted: dict[str, str | None] = field(default_factory=dict)
    rejected_queue_full: int = 0
    indeterminate: int = 0
    refused: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def accept(self, run_id: str) -> None:
        with self._lock:
            self.accepted.setdefault(run_id, None)

    def observe(self, run_id: str, status: str) -> None:
        with self._lock:
            self.accepted[run_id] = status

    def reject(self) -> None:
        with self._lock:
            self.rejected_queue_full += 1

    def lost(self) -> None:
        with self._lock:
            self.indeterminate += 1

    def refuse(self, code: str) -> None:
        with self._lock:
            self.refused[code] = self.refused.get(code, 0) + 1

    def drain(self) -> dict[str, Any]:
        """Take everything recorded so far as a msgpack-able dict and reset (worker → master)."""
        with self._lock:
            data = {
                "accepted": dict(self.accepted),
                "rejected_queue_full": self.rejected_queue_full,
                "indeterminate": self.indeterminate,
                "refused": dict(self.refused),
            }
            self.accepted, self.rejected_queue_full, self.indeterminate, self.refused = {}, 0, 0, {}
        return data

    def merge(self, data: Mapping[str, Any]) -> None:
        """Fold a drained dict in; an observed status wins over ``None``."""
        with self._lock:
            for run_id, status in dict(data.get("accepted") or {}).items():
                if status is not None or run_id not in self.accepted:
                    self.accepted[run_id] = status
            self.rejected_queue_full += int(data.get("rejected_queue_full") or 0)
            self.indeterminate += int(data.get("indeterminate") or 0)
            for code, n in dict(data.get("refused") or {}).items():
                self.refused[code] = self.refused.get(code, 0) + int(n)
