"""``KneoClient`` and ``KneoUser``: run dispatch against kneo-serv on Locust's HTTP client.

Request types: ``run sync`` (``POST /v1/runs`` inline → 200 with a terminal status), ``run submit`` (async → 202),
``run poll`` (one ``GET /v1/runs/{id}``) and ``run queued`` (submit to terminal, end to end). Locust's
``HttpSession`` carries the connections, but it is given a private event hook so that every ``request`` event goes
through ``users/recording.py`` once, with the named error class. Every run carries
``metadata: {swarmgauge_run: <tag>}`` and lands in the process's ``RunLedger``, which the end-of-run reconciliation
(``listeners/kneo_reconcile.py``) compares with the store. ``QueueFull`` is recorded as its own failure class and
counted apart (ledger ``rejected_queue_full`` and the per-step counter ``queue_full``).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import gevent
from locust import User, constant, events, task
from locust.clients import HttpSession
from locust.event import EventHook

from protocols.kneo import (
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
from swarmgauge.errors import UsageError
from users.recording import measure, set_intended_start

RUNS_PATH = "/v1/runs"
MODES = ("sync", "queued")
TARGETS = ("agent", "workflow")


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    parser.add_argument("--kneo-spec", env_var="SWARMGAUGE_KNEO_SPEC", default="echo.yaml", include_in_web_ui=True,
                        help="spec_path of each run, relative to the service's spec root")
    parser.add_argument("--kneo-target", env_var="SWARMGAUGE_KNEO_TARGET", default="agent", choices=TARGETS,
                        include_in_web_ui=True, help="run target: agent or workflow")
    parser.add_argument("--kneo-mode", env_var="SWARMGAUGE_KNEO_MODE", default="sync", choices=MODES,
                        include_in_web_ui=True, help="sync (200, inline) or queued (202, then poll)")
    parser.add_argument("--kneo-api-key", env_var="SWARMGAUGE_KNEO_API_KEY", default="", is_secret=True,
                        include_in_web_ui=True, help="API key sent as Authorization: Bearer")
    parser.add_argument("--kneo-input", env_var="SWARMGAUGE_KNEO_INPUT", default="hello", include_in_web_ui=True,
                        help="input text of each run")
    parser.add_argument("--kneo-idempotency", env_var="SWARMGAUGE_KNEO_IDEMPOTENCY", action="store_true",
                        default=False, include_in_web_ui=True,
                        help="send an Idempotency-Key per run and resend once, same key, when no response came")
    parser.add_argument("--kneo-poll-timeout", env_var="SWARMGAUGE_KNEO_POLL_TIMEOUT", type=float, default=60.0,
                        include_in_web_ui=True, help="seconds a queued run may take to reach a terminal status")
    parser.add_argument("--kneo-run-tag", env_var="SWARMGAUGE_KNEO_RUN_TAG", default="", include_in_web_ui=False,
                        help="metadata.swarmgauge_run of every run (default: generated once per test run)")


def run_tag(environment: Any) -> str:
    """This test run's tag; the master (or local runner) makes one, workers receive it with the options."""
    options = getattr(environment, "parsed_options", None)
    tag = getattr(options, "kneo_run_tag", "") if options is not None else ""
    if not tag:
        tag = getattr(environment, "_kneo_run_tag", "") or f"sg-{uuid.uuid4().hex[:16]}"
        environment._kneo_run_tag = tag
        if options is not None:
            options.kneo_run_tag = tag
    return tag


def ledger_for(environment: Any) -> RunLedger:
    """The process's ledger of runs sent (one per Environment)."""
    ledger = getattr(environment, "_kneo_ledger", None)
    if ledger is None:
        ledger = environment._kneo_ledger = RunLedger()
    return ledger


@events.init.add_listener
def _make_tag_on_master(environment: Any, **_: Any) -> None:
    from locust.runners import WorkerRunner

    if not isinstance(environment.runner, WorkerRunner):
        run_tag(environment)


def _count_step(environment: Any, name: str) -> None:
    try:
        from listeners import steps
    except ImportError:
        return
    counter = getattr(steps, "count", None)
    if counter is not None:
        counter(environment, name)


class KneoClient:
    """One user's client: each method is one measured operation that raises its named error after recording."""

    def __init__(self, base_url: str, *, request_events: Any = None, environment: Any = None,
                 api_key: str = "", spec_path: str = "echo.yaml", target: str = "agent", input_text: str = "hello",
                 tag: str = "sg-adhoc", ledger: RunLedger | None = None, idempotency: bool = False,
                 timeout: float = 30.0, poll_timeout: float = 60.0, poll_initial: float = 0.05,
                 poll_factor: float = 1.6, poll_cap: float = 1.0, max_polls: int = 10_000, user: Any = None) -> None:
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
            poll_timeout, poll_initial, poll_factor, poll_cap)
        self.max_polls = max_polls

    def _send(self, method: str, path: str, **kwargs: Any) -> tuple[int, dict, bytes]:
        response = self.session.request(method, path, timeout=self.timeout, **kwargs)
        if getattr(response, "error", None) is not None and not response.status_code:
            raise KneoUnreachable(f"{type(response.error).__name__}: {str(response.error)[:120]}")
        return response.status_code, dict(response.headers), response.content or b""

    def _create(self, async_mode: bool, outcome: Any) -> RunState:
        body = run_request(self.input_text, spec_path=self.spec_path, target=self.target, async_mode=async_mode,
                           run_tag=self.tag)
        headers = {"Idempotency-Key": uuid.uuid4().hex} if self.idempotency else {}
        attempts = 2 if self.idempotency else 1
        for attempt in range(attempts):
            try:
                status, resp_headers, content = self._send("POST", RUNS_PATH, json=body, headers=headers)
                break
            except KneoUnreachable:
                if attempt + 1 < attempts:
                    gevent.sleep(0.2)
                    continue
                self.ledger.lost()
                raise
        outcome.response_length = len(content)
        try:
            state = parse_run(status, resp_headers, content, expect=(202,) if async_mode else (200,))
        except QueueFull:
            self.ledger.reject()
            if self.environment is not None:
                _count_step(self.environment, "queue_full")
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
            return self._create(True, outcome)

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


class KneoUser(User):
    """Dispatches runs in ``--kneo-mode`` (sync or queued) against ``--host``; closed loop by default."""

    abstract = True
    wait_time = constant(0)

    def __init__(self, environment: Any) -> None:
        super().__init__(environment)
        if not self.host:
            raise UsageError("KneoUser needs --host http://127.0.0.1:PORT (or the locustfile's embedded target)")
        options = environment.parsed_options
        self.mode = getattr(options, "kneo_mode", "sync")
        if self.mode not in MODES:
            raise UsageError(f"--kneo-mode must be sync or queued, not {self.mode!r}")
        self.client = KneoClient(
            self.host, request_events=environment.events, environment=environment,
            api_key=getattr(options, "kneo_api_key", "") or "",
            spec_path=getattr(options, "kneo_spec", "echo.yaml"), target=getattr(options, "kneo_target", "agent"),
            input_text=getattr(options, "kneo_input", "hello"), tag=run_tag(environment),
            ledger=ledger_for(environment), idempotency=bool(getattr(options, "kneo_idempotency", False)),
            poll_timeout=float(getattr(options, "kneo_poll_timeout", 60.0)), user=self)

    @task
    def run_once(self) -> None:
        if self.mode == "sync":
            try:
                self.client.dispatch()
            except Exception:  # noqa: BLE001 - recorded as the request's failure
                pass
        else:
            self.client.queued()
