"""``KneoClient``: one user's run dispatch against kneo-serv on Locust's FastHttpSession, each operation measured once.

Request types: ``run sync`` (``POST /v1/runs`` inline → 200 with a terminal status), ``run submit`` (async → 202),
``run poll`` (one ``GET /v1/runs/{id}``) and ``run queued`` (submit to terminal, end to end). Locust's
``FastHttpSession`` (geventhttpclient) carries the connections; its user agent is driven directly, so the session
fires no ``request`` event of its own and every event goes through ``users/recording.py`` once, with the named error
class. Why not ``HttpSession`` (requests): at concurrency 1 the generator's CPU is on every run's critical path
(kneo-serv waits for the next request), and ``benchmarks/kneo_c1_gap.py`` measured this client's CPU a sync run at
1.8 ms on requests against 0.6-0.7 ms on geventhttpclient. Every run carries
``metadata: {swarmgauge_run: <tag>}`` and lands in the process's ``RunLedger``. ``QueueFull`` is recorded as its own
failure class and counted apart (ledger and the per-step counter ``queue_full``).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import gevent
from locust.env import Environment

from swarmgauge.core import hooks
from swarmgauge.errors import UsageError
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
from swarmgauge.users.backoff import Backoff
from swarmgauge.users.recording import fire, measure
from swarmgauge.users.single_attempt import close_connections, underlying_fault, unrecorded_session

RUNS_PATH = "/v1/runs"
TARGETS = ("agent", "workflow")
JSON_HEADERS = {"Content-Type": "application/json"}


def fault_name(exc: BaseException) -> str:
    """The class name of a transport fault, unwrapped from the user agent's ``ConnectionError`` (its text carries the
    URL, and a poll's URL its run id: one failure row per run)."""
    return type(underlying_fault(exc)).__name__


def _count_step(environment: Environment, name: str) -> None:
    hooks.count_step(environment, name)


class KneoClient:
    """One user's client: each method is one measured operation that raises its named error after recording.

    After a send that got no answer (``KneoUnreachable``: refused, reset, timed out) the next operation first waits
    out ``backoff``, so a service that is down or restarting is not hammered.
    """

    def __init__(
        self,
        base_url: str,
        *,
        request_events: Any = None,
        environment: Environment | None = None,
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
        self.base_url = base_url.rstrip("/")
        self.session = unrecorded_session(  # one send per request: a dropped connection is a fault, not a resend
            self.base_url,
            user=user,
            timeout=timeout,
            concurrency=10,  # opened on demand: a user's greenlet keeps one, greenlets sharing a client more
            headers={"Authorization": f"Bearer {api_key}"} if api_key else None,
        )
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
        self.backoff = Backoff()

    def close(self) -> None:
        """Drop the kept-open connection (after a fault, so a late or half-read answer is never read as the next)."""
        close_connections(self.session)

    def _send(
        self, method: str, path: str, body: dict | None = None, headers: dict | None = None
    ) -> tuple[int, dict, bytes]:
        payload = json.dumps(body).encode() if body is not None else None
        sent_headers = {**JSON_HEADERS, **(headers or {})} if payload is not None else headers
        try:
            response = self.session.client.urlopen(
                self.base_url + path, method=method, payload=payload, headers=sent_headers
            )
            content = response.content or b""
        except Exception as exc:  # noqa: BLE001 - any fault below HTTP: refused, reset, cut short, timed out, not HTTP
            self.close()
            self.backoff.failed()
            # the class name only: the error's text carries the URL, and a poll's URL its run id (one name per run)
            raise KneoUnreachable(fault_name(exc)) from None
        self.backoff.succeeded()
        # items(), not dict(): geventhttpclient's Headers keeps (name, value) pairs under lower-cased keys
        return response.status_code, dict(response.headers.items()), content

    def _post_run(self, body: dict, headers: dict, outcome: Any) -> tuple[int, dict, bytes]:
        """Send once (twice with an idempotency key); a send with no answer may still have made a row.

        A first send that failed is recorded as its own failure before the second goes out, so the events count
        every request the service may have seen."""
        attempts = 2 if self.idempotency else 1
        for attempt in range(attempts):
            started = time.perf_counter()
            try:
                return self._send("POST", RUNS_PATH, body, headers)
            except KneoUnreachable as exc:
                if attempt + 1 < attempts:
                    if self.events is not None:
                        fire(
                            self.events,
                            request_type=outcome.request_type,
                            name=outcome.name,
                            response_time=(time.perf_counter() - started) * 1000.0,
                            exception=exc,
                            context={"attempt": attempt + 1},
                        )
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
        status, resp_headers, content = self._post_run(body, headers, outcome)
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
        self.backoff.wait()
        with measure(self.events, "run sync", self.name, reraise=True) as outcome:
            state = self._create(False, outcome)
            if state.terminal:
                self.ledger.observe(state.run_id, state.status)
            check_terminal(state)
        return state

    def submit(self) -> RunState:
        """``run submit``: 202 with the run row's status at dispatch (``running``)."""
        self.backoff.wait()
        with measure(self.events, "run submit", self.name, reraise=True) as outcome:
            state = self._create(True, outcome)
        return state

    def poll(self, run_id: str) -> RunState:
        """``run poll``: one status read."""
        self.backoff.wait()
        with measure(self.events, "run poll", self.name, reraise=True) as outcome:
            status, headers, content = self._send("GET", f"{RUNS_PATH}/{run_id}")
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
        with measure(self.events, "run queued", self.name, context={"run_id": state.run_id}, since=started) as outcome:
            final = self.wait(state.run_id)
            check_terminal(final)
        return final if outcome.ok else None
