"""MCP Users over Streamable HTTP: ``MCPUser`` (one long session), ``MCPToolUser`` (one long session calling any
tool, mixed with list calls by weight), ``MCPChurnUser`` (a new session per iteration, never deleted), and
``MCPFetchUser`` / ``MCPLookupAllUser`` (the demarkus gateway tools, for gateway-vs-direct).

Every fault is a named failure (``protocols.mcp`` and ``users.mcp_client`` errors, messages from a fixed set); a
user never dies of one, and after a transport fault (refused, reset, not HTTP, timeout) it waits a backoff that
doubles from ``BACKOFF_FIRST`` to ``BACKOFF_MAX`` seconds and resets on the next answer (``users.backoff``).

The client is ``users.mcp_client.MCPClient`` (re-exported here). Options are declared with ``env_var`` so
they work from the CLI, ``locust.conf``, compose and the web UI (``users.mcp_options``); ``--mcp-token`` is a
secret.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable
from typing import Any, ClassVar, cast

import gevent
from locust import User, task
from locust.env import Environment

from swarmgauge.core import hooks
from swarmgauge.errors import UsageError
from swarmgauge.protocols import mcp as proto
from swarmgauge.users import backoff, option_checks  # noqa: F401 - option_checks range-checks the options at init
from swarmgauge.users.backoff import Backoff
from swarmgauge.users.mcp_client import MCPBadHTTP, MCPClient, MCPUnreachable
from swarmgauge.users.mcp_options import DEFAULT_ARGS, MCPOptions, options_from
from swarmgauge.users.recording import set_intended_start

__all__ = [
    "MCPChurnUser",
    "MCPClient",
    "MCPFetchUser",
    "MCPLookupAllUser",
    "MCPOptions",
    "MCPToolUser",
    "MCPUnreachable",
    "MCPUser",
    "SessionPacer",
    "options_from",
]

logger = logging.getLogger(__name__)
BACKOFF_FIRST = backoff.FIRST
BACKOFF_MAX = backoff.CAP
TRANSPORT_FAULTS = (MCPUnreachable, MCPBadHTTP, proto.MCPTimeout)
LIST_METHOD = "tools/list"


class SessionPacer:
    """Hands out start times at a fixed rate (one process's share of new sessions per second).

    Users of one class share one pacer; a user waits for its ticket, so the rate holds whatever the response
    time (until every user is busy: then tickets queue and run late, and ``lag`` shows it).
    """

    def __init__(self, rate: float, clock: Callable[[], float] = time.perf_counter) -> None:
        if rate <= 0:
            raise UsageError("session rate must be positive")
        self.interval = 1.0 / rate
        self._clock = clock
        self._next: float | None = None
        self.issued = 0
        self.lag = 0.0

    def take(self) -> float:
        """The intended start of the next session (``perf_counter`` time); may lie in the past when behind."""
        now = self._clock()
        if self._next is None:
            self._next = now
        ticket = self._next
        self._next += self.interval
        self.issued += 1
        self.lag = max(0.0, now - ticket)
        return ticket


def _pacer_for(user: MCPChurnUser) -> SessionPacer:
    cls = type(user)
    rate = user.options.churn_rate
    pacer = cls.__dict__.get("_pacer")
    if pacer is None or abs(pacer.interval - 1.0 / rate) > 1e-12:
        pacer = SessionPacer(rate)
        cls._pacer = pacer
    return pacer


def _churn_wait(user: MCPChurnUser) -> float:
    """Wait for this user's next session ticket; the measured requests are timed from the intended start.

    In a step with a rate (the ``Churn``/``ArrivalRate`` shapes) the tickets come from ``shapes.open_model``;
    otherwise from this class's ``SessionPacer`` at ``--mcp-churn-rate``.
    """
    current = hooks.current_step(user.environment)
    if current is not None and current.rate is not None and hooks.take_ticket(user):
        return 0.0
    ticket = _pacer_for(user).take()
    delay = ticket - time.perf_counter()
    set_intended_start(ticket)
    return max(0.0, delay)


class MCPBase(User):
    """Builds the client from the options; subclasses say what one iteration does."""

    abstract = True
    needs_host: ClassVar[str] = "http(s)://HOST:PORT"  # checked at init (users.option_checks), before any load
    require_session_id = False  # True: a server that issues no Mcp-Session-Id is a failure, not a stateless server
    feeder_columns: ClassVar[tuple[str, ...]] = ("arguments",)  # --feeder: each call's tool arguments
    feeder_json_columns: ClassVar[tuple[str, ...]] = ("arguments",)  # a JSON object (its text in a CSV cell)

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        self.options = options_from(getattr(environment, "parsed_options", None))
        if not self.host:
            raise UsageError("MCP users need --host http://127.0.0.1:PORT")
        self.client = self._new_client()
        self.backoff = Backoff(BACKOFF_FIRST, BACKOFF_MAX)

    def _new_client(self) -> MCPClient:
        return MCPClient(
            cast(str, self.host),  # __init__ refuses a user without a host
            environment=self.environment,
            path=self.options.path,
            protocol_version=self.options.protocol,
            token=self.options.token or None,
            timeout=self.options.timeout,
            require_session_id=self.require_session_id,
        )

    def on_stop(self) -> None:
        if self.options.delete:
            try:
                self.client.delete()
            except proto.MCPError:
                pass
        self.client.close()

    def after_outcome(self, exc: BaseException | None) -> None:
        """Back off after a transport fault (bounded, doubling), so a refused or vanished target is not hammered."""
        if exc is None or not isinstance(exc, TRANSPORT_FAULTS):
            self.backoff.succeeded()
            return
        gevent.sleep(self.backoff.failed())

    def in_session(self, operation: Callable[[], Any]) -> Any:
        """Run ``operation`` in the current session; on session loss re-initialize (as the spec requires) and
        try once more. Every failure is already recorded by the client with its class; the user goes on either way.
        """
        for _attempt in range(2):
            try:
                self.client.ensure_session()
                result = operation()
            except proto.SessionExpired:
                continue
            except (proto.MCPError, UsageError) as exc:
                self.after_outcome(exc)
                return None
            self.after_outcome(None)
            return result
        return None

    def tool_arguments(self) -> dict[str, Any]:
        """The next ``--feeder`` row's ``arguments`` (checked to be a JSON object at init), else ``--mcp-args``."""
        row = hooks.next_row(self)
        if row is None:
            return self.options.args
        value = row["arguments"]
        return dict(json.loads(value) if isinstance(value, str) else value)

    def call_with_recovery(self, tool: str, arguments: dict[str, Any]) -> str | None:
        return self.in_session(lambda: self.client.call_tool(tool, arguments))


class MCPUser(MCPBase):
    """One session per user, kept for the whole run; each iteration calls ``--mcp-tool`` with ``--mcp-args``.

    ``call`` is the one task of this class and of every subclass: a subclass changes what an iteration does by
    overriding ``one_call``, never with a ``@task`` of its own. Locust adds a base class's tasks to a subclass's, so
    a second ``@task`` ran the base's call as often as the subclass's: ``MCPLookupAllUser`` sent a ``mark_fetch``
    for every ``mark_lookup_all``, and the tool's rate showed half the gateway's.
    """

    abstract = True
    wait_time = staticmethod(lambda: 0.0)

    def on_start(self) -> None:
        try:
            self.client.ensure_session()
        except (proto.MCPError, UsageError) as exc:
            self.after_outcome(exc)

    @task
    def call(self) -> None:
        self.one_call()

    def one_call(self) -> None:
        """One iteration's request(s); subclasses override this, not ``call``."""
        self.call_with_recovery(self.options.tool, self.tool_arguments())


class MCPToolUser(MCPUser):
    """A long session calling ``--mcp-tool`` with ``--mcp-args`` (any tool, any arguments), mixed with ``tools/list``
    at ``--mcp-list-weight`` against 1: e.g. ``--mcp-list-weight 0.25`` makes one list call per four tool calls.
    """

    abstract = True

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        self._mix = random.Random()

    def one_call(self) -> None:
        weight = self.options.list_weight
        if weight > 0 and self._mix.random() < weight / (1.0 + weight):
            self.in_session(lambda: self.client.list_items(LIST_METHOD))
        else:
            self.call_with_recovery(self.options.tool, self.tool_arguments())


class MCPChurnUser(MCPBase):
    """Each iteration is a brand-new session: initialize, initialized, one tool call, and no DELETE.

    In a rate step (a ``Churn`` plan) it takes the step's tickets; outside one it is paced by ``SessionPacer`` at
    ``--mcp-churn-rate`` new sessions per second per process. Run enough users that
    one always waits for its ticket (latency x rate, plus margin). Under a stateless protocol version
    (``--mcp-protocol 2026-07-28``) there is no handshake and no server-side session: a "session" is one
    self-contained ``tools/call`` (version and capabilities in its ``_meta``), so the rate is calls per second and
    nothing can accumulate on the server.
    """

    abstract = True
    wait_time = _churn_wait
    takes_tickets: ClassVar[bool] = True  # _churn_wait takes a rate step's tickets (shapes.open_model.takes_tickets)
    # a plan's rate step paces it instead of --mcp-churn-rate: that option with such a plan is refused or taken
    paced_by_option: ClassVar[tuple[str, str]] = ("mcp_churn_rate", "--mcp-churn-rate")
    # no value here: _pacer_for() sets one on each concrete class and reads it from that class's __dict__
    _pacer: ClassVar[SessionPacer]

    def on_start(self) -> None:
        """Locust runs one task before the first wait: take the first ticket here so every session is paced."""
        gevent.sleep(_churn_wait(self))

    @task
    def one_session(self) -> None:
        self.client.session.abandon()
        arguments = self.tool_arguments()
        fault: BaseException | None = None
        try:
            if not self.client.session.stateless:
                self.client.open_session()
            self.client.call_tool(self.options.tool, arguments)
        except (proto.MCPError, UsageError) as exc:
            fault = exc
        if self.options.delete and not isinstance(fault, TRANSPORT_FAULTS):
            try:
                self.client.delete()
            except proto.MCPError:
                pass
        self.client.session.abandon()
        self.after_outcome(fault)


class MCPFetchUser(MCPUser):
    """``tools/call mark_fetch`` in one long session (the demarkus page's MCP row)."""

    abstract = True
    feeder_columns = ()

    def one_call(self) -> None:
        arguments = self.options.args if self.options.tool == "mark_fetch" else json.loads(DEFAULT_ARGS)
        self.call_with_recovery("mark_fetch", arguments)


class MCPLookupAllUser(MCPUser):
    """``tools/call mark_lookup_all`` in one long session (one world: the embedded Mark server)."""

    abstract = True
    feeder_columns = ()

    def one_call(self) -> None:
        self.call_with_recovery("mark_lookup_all", {"query": self.options.query})
