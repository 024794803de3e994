"""Push the run's metrics to a Pushgateway and to a remote-write receiver, on a timer and once at the end.

A scrape of ``/swarmgauge/metrics`` can miss a 30-second CI run entirely; a push cannot. With
``--prometheus-push URL`` (a Pushgateway) and/or ``--prometheus-remote-write URL`` (Prometheus's
``/api/v1/write`` or any remote-write receiver), the master (or a local run; never a worker, the master's figures
are the merged ones) sends the same families as the scrape every ``--prometheus-push-interval`` (default 10 s) from
its own greenlet, off the request path, and once more at the end after ``steps.csv``'s figures are final, so the
last push equals ``steps.csv``.

- Pushgateway: ``PUT <URL>/metrics/job/swarmgauge/run/<run>`` (prometheus-client's ``push_to_gateway``): each push
  replaces the run's group, the counters being totals so far.
- Remote-write: one sample per series at the push time, with ``job="swarmgauge"`` and ``run="<run>"`` labels.

``<run>`` is the run folder's name (``--run-dir``), else the start time. A push that fails is counted per kind
(``remote-write HTTP 400``, ``pushgateway URLError``) and logged once per kind, never raised: the load goes on. The
counts land in ``run.json`` under ``prometheus_push``. A URL's user and password are registered as secrets, so logs
and ``run.json`` show ``***``; a URL that is not ``http(s)://host...`` is exit 2 before any load.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import gevent
import requests
from locust import events
from locust.env import Environment
from locust.runners import WorkerRunner
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import basic_auth_handler, default_handler, push_to_gateway

from swarmgauge.core.durations import parse_duration
from swarmgauge.core.options import add_option
from swarmgauge.core.run_context import PerEnvironment
from swarmgauge.errors import UsageError, stop_on_usage_error
from swarmgauge.listeners import remote_write, run_redaction, rundir, steps
from swarmgauge.listeners.prom_export import RunCollector
from swarmgauge.redaction import register_secret

logger = logging.getLogger("swarmgauge.prom_push")

JOB = "swarmgauge"
DEFAULT_INTERVAL = "10s"
PUSH_TIMEOUT_SECONDS = 10.0
MAX_PUSHES = 10_000_000
PUSHGATEWAY, REMOTE_WRITE = "pushgateway", "remote-write"


@dataclass(frozen=True)
class Endpoint:
    """A push URL split into what is sent (no credentials), what is shown, and the credentials apart."""

    target: str
    url: str
    username: str | None
    password: str | None

    @property
    def shown(self) -> str:
        return self.url if self.username is None else self.url.replace("://", "://***@", 1)


@dataclass
class PushRecord:
    """What the pushes did, per target: for ``run.json`` and the once-per-kind log."""

    pushes: dict[str, int] = field(default_factory=dict)
    failures: dict[str, dict[str, int]] = field(default_factory=dict)

    def ok(self, target: str) -> None:
        self.pushes[target] = self.pushes.get(target, 0) + 1

    def failed(self, target: str, kind: str) -> bool:
        """Count a failure; True the first time this kind is seen (so it is logged once)."""
        self.pushes[target] = self.pushes.get(target, 0) + 1
        kinds = self.failures.setdefault(target, {})
        kinds[kind] = kinds.get(kind, 0) + 1
        return kinds[kind] == 1

    def as_info(self, endpoints: list[Endpoint]) -> dict[str, Any]:
        return {
            e.target: {
                "url": e.shown,
                "pushes": self.pushes.get(e.target, 0),
                "failures": self.failures.get(e.target, {}),
            }
            for e in endpoints
        }


def parse_endpoint(target: str, flag: str, value: str) -> Endpoint:
    """``value`` as an http(s) URL with a host; a :class:`UsageError` otherwise. Credentials become secrets."""
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError as exc:
        raise UsageError(f"{flag}: not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{flag}: expected an http:// or https:// URL with a host, such as http://127.0.0.1:9091")
    username = unquote(parts.username) if parts.username is not None else None
    password = unquote(parts.password) if parts.password is not None else None
    for secret in (parts.username, parts.password, username, password):
        register_secret(secret)
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    netloc = host if port is None else f"{host}:{port}"
    return Endpoint(target, urlunsplit((parts.scheme, netloc, parts.path, parts.query, "")), username, password)


def endpoints(environment: Environment) -> list[Endpoint]:
    options = getattr(environment, "parsed_options", None)
    found = []
    for target, flag, dest in (
        (PUSHGATEWAY, "--prometheus-push", "prometheus_push"),
        (REMOTE_WRITE, "--prometheus-remote-write", "prometheus_remote_write"),
    ):
        value = getattr(options, dest, None)
        if value:
            found.append(parse_endpoint(target, flag, str(value)))
    return found


def push_interval(environment: Environment) -> float:
    value = getattr(getattr(environment, "parsed_options", None), "prometheus_push_interval", None)
    seconds = parse_duration(DEFAULT_INTERVAL if value in (None, "") else value, "--prometheus-push-interval")
    if seconds <= 0:
        raise UsageError(f"--prometheus-push-interval {value!r}: expected a duration above 0, such as 10s")
    return seconds


def validate(environment: Environment) -> None:
    endpoints(environment)
    push_interval(environment)


@dataclass
class _Pushing(PerEnvironment):
    """Owned by ``listeners/prom_push.py``: when this Environment's run started, its push record and push loop."""

    started: float | None = None
    record: PushRecord | None = None
    loop: Any = None


def run_name(environment: Environment) -> str:
    directory = rundir.run_dir(environment)
    if directory is not None:
        return directory.name
    started = _Pushing.of(environment).started or time.time()
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime(started))


class FrozenCollector:
    """Families collected once, so every target of one push gets the same figures."""

    def __init__(self, families: list[Any]) -> None:
        self.families = families

    def collect(self) -> list[Any]:
        return self.families


def _registry(environment: Environment) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FrozenCollector(list(RunCollector(environment).collect())))
    return registry


def _push_gateway(endpoint: Endpoint, registry: CollectorRegistry, run: str) -> None:
    def handler(url: str, method: str, timeout: float | None, headers: list[tuple[str, str]], data: bytes) -> Any:
        if endpoint.username is None:
            return default_handler(url, method, timeout, headers, data)
        return basic_auth_handler(url, method, timeout, headers, data, endpoint.username, endpoint.password)

    push_to_gateway(
        endpoint.url,
        job=JOB,
        registry=registry,
        grouping_key={"run": run},
        timeout=PUSH_TIMEOUT_SECONDS,
        handler=handler,
    )


def _remote_write(endpoint: Endpoint, registry: CollectorRegistry, run: str) -> None:
    series = remote_write.series_of(registry.collect(), {"job": JOB, "run": run})
    body = remote_write.encode(series, int(time.time() * 1000))
    auth = (endpoint.username, endpoint.password or "") if endpoint.username is not None else None
    response = requests.post(
        endpoint.url, data=body, headers=remote_write.HEADERS, auth=auth, timeout=PUSH_TIMEOUT_SECONDS
    )
    if response.status_code >= 300:
        raise PushRejected(response.status_code, response.text[:200])


class PushRejected(Exception):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body.strip()}")
        self.status = status


def failure_kind(exc: Exception) -> str:
    status = getattr(exc, "status", None) or getattr(exc, "code", None)
    return f"HTTP {status}" if isinstance(status, int) else type(exc).__name__


def push_once(environment: Environment, targets: list[Endpoint], record: PushRecord) -> None:
    """One push to every target; a failure is counted and logged once per kind, never raised."""
    registry, run = _registry(environment), run_name(environment)
    for endpoint in targets:
        try:
            if endpoint.target == PUSHGATEWAY:
                _push_gateway(endpoint, registry, run)
            else:
                _remote_write(endpoint, registry, run)
            record.ok(endpoint.target)
        except Exception as exc:  # noqa: BLE001 - a push must never stop the run
            kind = failure_kind(exc)
            if record.failed(endpoint.target, kind):
                message = run_redaction.redact(f"{exc}", environment)
                logger.warning("%s push to %s failed (%s): %s", endpoint.target, endpoint.shown, kind, message)


def _push_loop(environment: Environment, targets: list[Endpoint], record: PushRecord, interval: float) -> None:
    for _ in range(MAX_PUSHES):
        gevent.sleep(interval)
        push_once(environment, targets, record)


def _is_pusher(environment: Environment) -> bool:
    return not isinstance(environment.runner, WorkerRunner) and bool(endpoints(environment))


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    add_option(
        parser,
        "--prometheus-push",
        default="",
        metavar="URL",
        include_in_web_ui=False,
        help="Push the run's metrics to this Prometheus Pushgateway (http://host:9091) every "
        "--prometheus-push-interval and at the end; job=swarmgauge, run=<run folder>",
    )
    add_option(
        parser,
        "--prometheus-remote-write",
        default="",
        metavar="URL",
        include_in_web_ui=False,
        help="Send the run's metrics by Prometheus remote-write to this URL (http://host:9090/api/v1/write) every "
        "--prometheus-push-interval and at the end",
    )
    add_option(
        parser,
        "--prometheus-push-interval",
        default=DEFAULT_INTERVAL,
        metavar="DURATION",
        include_in_web_ui=False,
        help=f"How often --prometheus-push and --prometheus-remote-write send (default {DEFAULT_INTERVAL}); "
        "once more at the end",
    )


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    if isinstance(environment.runner, WorkerRunner):
        return
    stop_on_usage_error(validate, environment)


@events.test_start.add_listener
def _on_test_start(environment: Environment, **_kwargs: Any) -> None:
    if not _is_pusher(environment):
        return
    pushing = _Pushing.of(environment)
    if pushing.loop is not None:
        pushing.loop.kill(block=False)
    pushing.record = record = PushRecord()
    pushing.started = time.time()
    pushing.loop = gevent.spawn(_push_loop, environment, endpoints(environment), record, push_interval(environment))


@events.quitting.add_listener
def _on_quitting(environment: Environment, **_kwargs: Any) -> None:
    """The last push, with ``steps.csv``'s final figures (``steps.finalize`` is idempotent; it writes them now)."""
    pushing = _Pushing.of(environment)
    record = pushing.record
    if record is None or not _is_pusher(environment):
        return
    loop = pushing.loop
    if loop is not None:
        loop.kill(block=True, timeout=PUSH_TIMEOUT_SECONDS)
    steps.finalize(environment)
    targets = endpoints(environment)
    push_once(environment, targets, record)
    rundir.add_run_info(environment, "prometheus_push", record.as_info(targets))
    for endpoint in targets:
        failed = sum(record.failures.get(endpoint.target, {}).values())
        if failed:
            logger.warning(
                "%s: %d of %d pushes to %s failed",
                endpoint.target,
                failed,
                record.pushes[endpoint.target],
                endpoint.shown,
            )
