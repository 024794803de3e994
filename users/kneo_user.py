"""``KneoClient`` and ``KneoUser``: run dispatch against kneo-serv on Locust's HTTP client, with a reconciliation.

Request types: ``run sync`` (``POST /v1/runs`` inline → 200 with a terminal status), ``run submit`` (async → 202),
``run poll`` (one ``GET /v1/runs/{id}``) and ``run queued`` (submit to terminal, end to end). ``--kneo-mode batch``
is the capacity page's queue mode: the users submit ``--kneo-batch`` runs between them as fast as they can (the
dispatch fan-out) and then idle while the service drains them; the drain rate and each run's queue wait are read
from the store at the end (``kneo.json`` ``queue_drain``). ``--kneo-hosts`` spreads the users over several service
processes on one PostgreSQL (the page's scaling advice), round robin. Locust's
``HttpSession`` carries the connections, but it is given a private event hook so that every ``request`` event goes
through ``users/recording.py`` once, with the named error class. Every run carries
``metadata: {swarmgauge_run: <tag>}`` and lands in the process's ``RunLedger``; workers send theirs to the master.
``QueueFull`` is recorded as its own failure class and counted apart (ledger and the per-step counter
``queue_full``). At the end the master reconciles the ledger with the store (``users/kneo_ledger.py``) and gates
the run on ``kneo_mismatches==0`` (exit 3).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import gevent
from locust import User, constant, events, task
from locust.clients import HttpSession
from locust.event import EventHook
from locust.runners import WorkerRunner

from swarmgauge.core import hooks
from swarmgauge.errors import UsageError, stop_on_usage_error
from swarmgauge.protocols.kneo import (
    KneoHTTPError,
    KneoMalformedResponse,
    KneoUnreachable,
    PollTimeout,
    QueueFull,
    RunLedger,
    RunState,
    check_terminal,
    parse_run,
    poll_delays,
    run_request,
)
from swarmgauge.users.kneo_ledger import MISMATCH_TERM, ledger_for, reconcile_run, run_tag, store_locator
from swarmgauge.users.recording import measure, set_intended_start

__all__ = ["MISMATCH_TERM", "KneoClient", "KneoUser", "ledger_for", "reconcile_run", "run_tag", "store_locator"]
RUNS_PATH = "/v1/runs"
MODES = ("sync", "queued", "batch")
BATCH_IDLE_S = 0.5
TARGETS = ("agent", "workflow")
GAUGES = (
    "kneo_runs_queued",
    "kneo_runs_running",
    "kneo_worker_count",
    "kneo_runs_started_total",
    "kneo_runs_completed_total",
    "kneo_runs_failed_total",
    "kneo_runs_rejected_total",
)
DEFAULT_STOP_TIMEOUT = 15.0  # without --stop-timeout, runs in flight at the end finish, so the ledger is exact


def _option(parser: Any, flag: str, text: str, **kwargs: Any) -> None:
    """One Locust option with its ``SWARMGAUGE_*`` environment variable, shown in the web UI unless told."""
    kwargs.setdefault("include_in_web_ui", True)
    env_var = "SWARMGAUGE_" + flag.lstrip("-").upper().replace("-", "_")
    parser.add_argument(flag, env_var=env_var, help=text, **kwargs)


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    _option(parser, "--kneo-spec", "spec_path of each run, relative to the service's spec root", default="echo.yaml")
    _option(parser, "--kneo-target", "run target: agent or workflow", default="agent", choices=TARGETS)
    _option(
        parser,
        "--kneo-mode",
        "sync (200, inline), queued (202, then poll) or batch (submit --kneo-batch runs, "
        "then let the service drain them)",
        default="sync",
        choices=MODES,
    )
    _option(
        parser,
        "--kneo-batch",
        "batch mode: runs the users submit between them (per Locust process)",
        type=int,
        default=500,
    )
    _option(
        parser,
        "--kneo-hosts",
        "more service URLs (comma-separated) the users are spread over with --host, "
        "round robin: several kneo-serv processes on one PostgreSQL",
        default="",
    )
    _option(parser, "--kneo-api-key", "API key sent as Authorization: Bearer", default="", is_secret=True)
    _option(parser, "--kneo-input", "input text of each run", default="hello")
    _option(
        parser,
        "--kneo-idempotency",
        "send an Idempotency-Key per run and resend once, same key, when no response came",
        action="store_true",
        default=False,
    )
    _option(
        parser,
        "--kneo-poll-timeout",
        "seconds a queued run may take to reach a terminal status",
        type=float,
        default=60.0,
    )
    _option(
        parser,
        "--kneo-run-tag",
        "metadata.swarmgauge_run of every run (default: generated once per test run)",
        default="",
        include_in_web_ui=False,
    )
    _option(
        parser,
        "--kneo-store",
        "reconcile against this store at the end: a PostgreSQL DSN or the SQLite "
        "file's path (kept out of the web UI: a DSN carries a password)",
        default="",
        include_in_web_ui=False,
    )
    _option(
        parser,
        "--kneo-store-file",
        "read --kneo-store from this file (what 'swarmgauge target kneo' prints as store-file)",
        default="",
    )
    _option(
        parser,
        "--kneo-drain-timeout",
        "seconds to wait at the end for the store's runs to finish",
        type=float,
        default=30.0,
    )
    _option(
        parser,
        "--kneo-no-gauges",
        "do not sample the service's /metrics gauges (sampled from --host by default)",
        action="store_true",
        default=False,
    )


def _count_step(environment: Any, name: str) -> None:
    hooks.count_step(environment, name)


class KneoClient:
    """One user's client: each method is one measured operation that raises its named error after recording."""

    def __init__(
        self,
        base_url: str,
        *,
        request_events: Any = None,
        environment: Any = None,
        api_key: str = "",
        spec_path: str = "echo.yaml",
        target: str = "agent",
        input_text: str = "hello",
        tag: str = "sg-adhoc",
        ledger: RunLedger | None = None,
        idempotency: bool = False,
        timeout: float = 30.0,
        poll_timeout: float = 60.0,
        poll_initial: float = 0.05,
        poll_factor: float = 1.6,
        poll_cap: float = 1.0,
        max_polls: int = 10_000,
        user: Any = None,
    ) -> None:
        if target not in TARGETS:
            raise UsageError(f"--kneo-target must be agent or workflow, not {target!r}")
        if poll_timeout <= 0 or timeout <= 0:
            raise UsageError("kneo timeouts must be positive")
        self.session = HttpSession(base_url, EventHook(), user)
        if api_key:
            self.session.headers["Authorization"] = f"Bearer {api_key}"
        self.events = request_events
        self.environment = environment
        self.spec_path, self.target, self.input_text, self.tag = spec_path, target, input_text, tag
        self.name = f"{target}:{spec_path}"
        self.ledger = ledger if ledger is not None else RunLedger()
        self.idempotency = idempotency
        self.timeout = timeout
        self.poll_timeout, self.poll_initial, self.poll_factor, self.poll_cap = (
            poll_timeout,
            poll_initial,
            poll_factor,
            poll_cap,
        )
        self.max_polls = max_polls

    def _send(self, method: str, path: str, **kwargs: Any) -> tuple[int, dict, bytes]:
        response = self.session.request(method, path, timeout=self.timeout, **kwargs)
        if getattr(response, "error", None) is not None and not response.status_code:
            raise KneoUnreachable(f"{type(response.error).__name__}: {str(response.error)[:120]}")
        return response.status_code, dict(response.headers), response.content or b""

    def _post_run(self, body: dict, headers: dict) -> tuple[int, dict, bytes]:
        """Send once (twice with an idempotency key); a send with no answer may still have made a row."""
        attempts = 2 if self.idempotency else 1
        for attempt in range(attempts):
            try:
                return self._send("POST", RUNS_PATH, json=body, headers=headers)
            except KneoUnreachable:
                if attempt + 1 < attempts:
                    gevent.sleep(0.2)
                    continue
                self.ledger.lost()
                raise
            except BaseException:  # stopped mid-send: the service may have stored the run
                self.ledger.lost()
                raise
        raise AssertionError("unreachable")

    def _create(self, async_mode: bool, outcome: Any) -> RunState:
        body = run_request(
            self.input_text, spec_path=self.spec_path, target=self.target, async_mode=async_mode, run_tag=self.tag
        )
        headers = {"Idempotency-Key": uuid.uuid4().hex} if self.idempotency else {}
        status, resp_headers, content = self._post_run(body, headers)
        outcome.response_length = len(content)
        outcome.context["status"] = status
        try:
            state = parse_run(status, resp_headers, content, expect=(202,) if async_mode else (200,))
        except QueueFull:
            self.ledger.reject()
            if self.environment is not None:
                _count_step(self.environment, "queue_full")
            raise
        except KneoHTTPError as exc:
            self.ledger.refuse(exc.code)
            raise
        except KneoMalformedResponse:
            self.ledger.lost()
            raise
        self.ledger.accept(state.run_id)
        outcome.context["run_id"] = state.run_id
        return state

    def dispatch(self) -> RunState:
        """``run sync``: one inline run; success only when its terminal status is ``completed``."""
        with measure(self.events, "run sync", self.name, reraise=True) as outcome:
            state = self._create(False, outcome)
            if state.terminal:
                self.ledger.observe(state.run_id, state.status)
            check_terminal(state)
        return state

    def submit(self) -> RunState:
        """``run submit``: 202 with the run row's status at dispatch (``running``)."""
        with measure(self.events, "run submit", self.name, reraise=True) as outcome:
            state = self._create(True, outcome)
        return state

    def poll(self, run_id: str) -> RunState:
        """``run poll``: one status read."""
        with measure(self.events, "run poll", self.name, reraise=True) as outcome:
            status, headers, content = self._send("GET", f"{RUNS_PATH}/{run_id}", name=f"{RUNS_PATH}/{{id}}")
            outcome.response_length = len(content)
            state = parse_run(status, headers, content, expect=(200,))
            if state.terminal:
                self.ledger.observe(state.run_id, state.status)
        return state

    def wait(self, run_id: str) -> RunState:
        """Poll with a bounded backoff until terminal; ``PollTimeout`` when the bound (time or count) is hit."""
        started = time.monotonic()
        last = "running"
        delays = poll_delays(self.poll_initial, self.poll_factor, self.poll_cap)
        for _ in range(self.max_polls):
            remaining = self.poll_timeout - (time.monotonic() - started)
            if remaining <= 0:
                break
            gevent.sleep(min(next(delays), remaining))
            try:
                state = self.poll(run_id)
            except KneoUnreachable:
                continue
            if state.terminal:
                return state
            last = state.status
        raise PollTimeout(run_id, last, time.monotonic() - started)

    def queued(self) -> RunState | None:
        """``run queued``: submit, then wait; the end-to-end event is fired only for an accepted submit."""
        started = time.perf_counter()
        try:
            state = self.submit()
        except Exception:  # noqa: BLE001 - already recorded as the submit's failure
            return None
        set_intended_start(started)
        with measure(self.events, "run queued", self.name, context={"run_id": state.run_id}) as outcome:
            final = self.wait(state.run_id)
            check_terminal(final)
        return final if outcome.ok else None


def service_hosts(host: str, extra: str) -> list[str]:
    """``--host`` then each ``--kneo-hosts`` URL, without repeats; a URL that is not http(s) is a UsageError."""
    hosts: list[str] = []
    for url in [host, *str(extra or "").split(",")]:
        url = url.strip().rstrip("/")
        if not url:
            continue
        if not url.startswith(("http://", "https://")):
            raise UsageError(f"--kneo-hosts takes http(s) URLs, not {url!r}")
        if url not in hosts:
            hosts.append(url)
    return hosts


def take_batch_ticket(environment: Any, size: int) -> bool:
    """One run of this process's batch, while any is left."""
    left = getattr(environment, "_kneo_batch_left", None)
    if left is None:
        left = max(0, int(size))
    if left <= 0:
        environment._kneo_batch_left = 0
        return False
    environment._kneo_batch_left = left - 1
    return True


class KneoUser(User):
    """Dispatches runs in ``--kneo-mode`` (sync, queued or batch) against ``--host`` (and ``--kneo-hosts``, round
    robin); closed loop by default."""

    abstract = True
    wait_time = constant(0)
    _spawned = 0

    def __init__(self, environment: Any) -> None:
        super().__init__(environment)
        if not self.host:
            raise UsageError("KneoUser needs --host http://127.0.0.1:PORT (or the locustfile's embedded target)")
        options = environment.parsed_options
        hosts = service_hosts(self.host, getattr(options, "kneo_hosts", "") or "")
        self.host = hosts[KneoUser._spawned % len(hosts)]
        KneoUser._spawned += 1
        self.batch_size = int(getattr(options, "kneo_batch", 500) or 0)
        self.mode = getattr(options, "kneo_mode", "sync")
        if self.mode not in MODES:
            raise UsageError(f"--kneo-mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        self.client = KneoClient(
            self.host,
            request_events=environment.events,
            environment=environment,
            api_key=getattr(options, "kneo_api_key", "") or "",
            spec_path=getattr(options, "kneo_spec", "echo.yaml"),
            target=getattr(options, "kneo_target", "agent"),
            input_text=getattr(options, "kneo_input", "hello"),
            tag=run_tag(environment),
            ledger=ledger_for(environment),
            idempotency=bool(getattr(options, "kneo_idempotency", False)),
            poll_timeout=float(getattr(options, "kneo_poll_timeout", 60.0)),
            user=self,
        )

    @task
    def run_once(self) -> None:
        if self.mode == "batch":
            if not take_batch_ticket(self.environment, self.batch_size):
                gevent.sleep(BATCH_IDLE_S)
                return
            try:
                self.client.submit()
            except Exception:  # noqa: BLE001 - recorded as the submit's failure
                pass
        elif self.mode == "sync":
            try:
                self.client.dispatch()
            except Exception:  # noqa: BLE001 - recorded as the request's failure
                pass
        else:
            self.client.queued()


@events.init.add_listener
def _on_init(environment: Any, **_: Any) -> None:
    if not any(issubclass(u, KneoUser) for u in environment.user_classes):
        return  # imported (by swarmgauge.api, say) into a run without kneo users: no ledger, no gauges
    if not environment.stop_timeout:
        environment.stop_timeout = DEFAULT_STOP_TIMEOUT
    if isinstance(environment.runner, WorkerRunner):
        return
    run_tag(environment)
    ledger_for(environment)
    options = environment.parsed_options
    if options is None:
        return
    stop_on_usage_error(lambda env: store_locator(env.parsed_options), environment)
    if getattr(options, "kneo_mode", "sync") == "batch" and int(getattr(options, "kneo_batch", 500) or 0) < 1:
        stop_on_usage_error(_bad_batch, environment)
    stop_on_usage_error(
        lambda env: service_hosts(env.host or "", getattr(options, "kneo_hosts", "") or ""), environment
    )
    if environment.host and not getattr(options, "kneo_no_gauges", False):
        for host in service_hosts(environment.host, getattr(options, "kneo_hosts", "") or ""):
            hooks.add_sample_source(environment, f"prom:{host}/metrics#{','.join(GAUGES)}")


def _bad_batch(environment: Any) -> None:
    raise UsageError(f"--kneo-batch must be at least 1, got {environment.parsed_options.kneo_batch}")
