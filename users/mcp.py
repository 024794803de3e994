"""MCP Users over Streamable HTTP: ``MCPUser`` (one long session), ``MCPChurnUser`` (a new session per iteration,
never deleted), and ``MCPFetchUser`` / ``MCPLookupAllUser`` (the demarkus gateway tools, for gateway-vs-direct).

The client is ``users.mcp_client.MCPClient`` (re-exported here). Options are declared below with ``env_var`` so
they work from the CLI, ``locust.conf``, compose and the web UI; ``--mcp-token`` is a secret.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import gevent
from locust import User, events, task

from swarmgauge.protocols import mcp as proto
from swarmgauge.errors import UsageError
from swarmgauge.users import option_checks  # noqa: F401 - range-checks the options at init
from swarmgauge.users.mcp_client import MCPClient, MCPUnreachable, _count

__all__ = [
    "MCPClient",
    "MCPUnreachable",
    "MCPOptions",
    "MCPUser",
    "MCPChurnUser",
    "MCPFetchUser",
    "MCPLookupAllUser",
    "SessionPacer",
    "options_from",
]

logger = logging.getLogger(__name__)
DEFAULT_ARGS = '{"url": "/corpus/quic/doc-0000.md"}'  # the first document of the reference server's corpus
STEP_COUNTERS = ("sessions_started", "sessions_expired", "sessions_refused")


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    parser.add_argument("--mcp-path", default="/mcp", env_var="SWARMGAUGE_MCP_PATH", include_in_web_ui=True,
                        help="MCP endpoint path on the host (default /mcp)")
    parser.add_argument("--mcp-token", default="", env_var="SWARMGAUGE_MCP_TOKEN", include_in_web_ui=True,
                        is_secret=True, help="Bearer token sent as Authorization on every MCP request")
    parser.add_argument("--mcp-protocol", default=proto.DEFAULT_VERSION, env_var="SWARMGAUGE_MCP_PROTOCOL",
                        include_in_web_ui=True, choices=list(proto.SUPPORTED_VERSIONS),
                        help="MCP protocol version to pin (2026-07-28 is stateless: no initialize, no session)")
    parser.add_argument("--mcp-tool", default="mark_fetch", env_var="SWARMGAUGE_MCP_TOOL", include_in_web_ui=True,
                        help="tool MCPUser / MCPChurnUser call")
    parser.add_argument("--mcp-args", default=DEFAULT_ARGS, env_var="SWARMGAUGE_MCP_ARGS",
                        include_in_web_ui=True, help="JSON object of arguments for --mcp-tool")
    parser.add_argument("--mcp-delete", action="store_true", default=False, env_var="SWARMGAUGE_MCP_DELETE",
                        include_in_web_ui=True, help="send DELETE when a session ends (default off, as on the demarkus page)")
    parser.add_argument("--mcp-timeout", type=float, default=10.0, env_var="SWARMGAUGE_MCP_TIMEOUT",
                        include_in_web_ui=True, help="seconds for one MCP answer to arrive complete")
    parser.add_argument("--mcp-churn-rate", type=float, default=5.0, env_var="SWARMGAUGE_MCP_CHURN_RATE",
                        include_in_web_ui=True, help="new sessions per second for MCPChurnUser, per load process")
    parser.add_argument("--mcp-query", default="alpha", env_var="SWARMGAUGE_MCP_QUERY", include_in_web_ui=True,
                        help="query MCPLookupAllUser sends to mark_lookup_all")


@dataclass
class MCPOptions:
    path: str = "/mcp"
    token: str = ""
    protocol: str = proto.DEFAULT_VERSION
    tool: str = "mark_fetch"
    args: dict[str, Any] = field(default_factory=lambda: json.loads(DEFAULT_ARGS))
    delete: bool = False
    timeout: float = 10.0
    churn_rate: float = 5.0
    query: str = "alpha"


def options_from(parsed: Any) -> MCPOptions:
    """Validate the parsed options once; a bad value raises ``UsageError`` with one line."""
    if parsed is None:
        return MCPOptions()
    raw_args = getattr(parsed, "mcp_args", DEFAULT_ARGS)
    try:
        args = json.loads(raw_args) if isinstance(raw_args, str) else dict(raw_args)
    except ValueError as exc:
        raise UsageError(f"--mcp-args is not JSON: {raw_args!r}") from exc
    if not isinstance(args, dict):
        raise UsageError("--mcp-args must be a JSON object")
    options = MCPOptions(
        path=getattr(parsed, "mcp_path", "/mcp"),
        token=getattr(parsed, "mcp_token", "") or "",
        protocol=getattr(parsed, "mcp_protocol", proto.DEFAULT_VERSION),
        tool=getattr(parsed, "mcp_tool", "mark_fetch"),
        args=args,
        delete=bool(getattr(parsed, "mcp_delete", False)),
        timeout=float(getattr(parsed, "mcp_timeout", 10.0)),
        churn_rate=float(getattr(parsed, "mcp_churn_rate", 5.0)),
        query=getattr(parsed, "mcp_query", "alpha"),
    )
    if options.protocol not in proto.SUPPORTED_VERSIONS:
        raise UsageError(f"--mcp-protocol {options.protocol!r} is not one of {', '.join(proto.SUPPORTED_VERSIONS)}")
    if not options.path.startswith("/"):
        raise UsageError(f"--mcp-path must start with '/', got {options.path!r}")
    if options.timeout <= 0:
        raise UsageError("--mcp-timeout must be positive")
    if options.churn_rate <= 0:
        raise UsageError("--mcp-churn-rate must be positive")
    return options


@events.init.add_listener
def _on_init(environment: Any, **_kwargs: Any) -> None:
    try:
        from swarmgauge.listeners import steps
    except ImportError:
        steps = None
    register = getattr(steps, "register_step_counter", None)
    if register is not None:
        for name in STEP_COUNTERS:
            try:
                register(name)
            except Exception:  # noqa: BLE001 - registering twice is harmless
                pass
    if getattr(environment, "parsed_options", None) is not None:
        try:
            options_from(environment.parsed_options)
        except UsageError as exc:
            logger.error("swarmgauge: %s", exc)
            raise SystemExit(2) from exc


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


def _pacer_for(user: "MCPChurnUser") -> SessionPacer:
    cls = type(user)
    rate = user.options.churn_rate
    pacer = cls.__dict__.get("_pacer")
    if pacer is None or abs(pacer.interval - 1.0 / rate) > 1e-12:
        pacer = SessionPacer(rate)
        cls._pacer = pacer
    return pacer


def _churn_wait(user: "MCPChurnUser") -> float:
    """Wait for this user's next session ticket; the measured requests are timed from the intended start.

    In a step with a rate (the ``Churn``/``ArrivalRate`` shapes) the tickets come from ``shapes.open_model``;
    otherwise from this class's ``SessionPacer`` at ``--mcp-churn-rate``.
    """
    from swarmgauge.users.recording import set_intended_start

    try:
        from swarmgauge.listeners import steps
        from swarmgauge.shapes import open_model

        current = steps.current_step(user.environment)
    except ImportError:
        current = None
    if current is not None and current.rate is not None:
        open_model.take_ticket(user)
        return 0.0
    ticket = _pacer_for(user).take()
    delay = ticket - time.perf_counter()
    set_intended_start(ticket)
    return max(0.0, delay)


class _MCPBase(User):
    """Builds the client from the options; subclasses say what one iteration does."""

    abstract = True
    require_session_id = False  # True: a server that issues no Mcp-Session-Id is a failure, not a stateless server

    def __init__(self, environment: Any) -> None:
        super().__init__(environment)
        self.options = options_from(getattr(environment, "parsed_options", None))
        if not self.host:
            raise UsageError("MCP users need --host http://127.0.0.1:PORT")
        self.client = self._new_client()

    def _new_client(self) -> MCPClient:
        return MCPClient(
            self.host,
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

    def call_with_recovery(self, tool: str, arguments: dict[str, Any]) -> str | None:
        """Call ``tool`` in the current session; on 404 re-initialize (as the spec requires) and try once more.

        Every failure is already recorded by the client with its class; the user goes on either way.
        """
        for _attempt in range(2):
            try:
                self.client.ensure_session()
                return self.client.call_tool(tool, arguments)
            except proto.SessionExpired:
                continue
            except (proto.MCPError, UsageError):
                return None
        return None


class MCPUser(_MCPBase):
    """One session per user, kept for the whole run; each task calls ``--mcp-tool`` with ``--mcp-args``."""

    abstract = True
    wait_time = staticmethod(lambda: 0.0)

    def on_start(self) -> None:
        try:
            self.client.ensure_session()
        except proto.MCPError:
            pass

    @task
    def call(self) -> None:
        self.call_with_recovery(self.options.tool, self.options.args)


class MCPChurnUser(_MCPBase):
    """Each iteration is a brand-new session: initialize, initialized, one tool call, and no DELETE.

    Paced by ``SessionPacer`` at ``--mcp-churn-rate`` new sessions per second per process; run enough users that
    one always waits for its ticket (latency x rate, plus margin).
    """

    abstract = True
    wait_time = _churn_wait

    def on_start(self) -> None:
        """Locust runs one task before the first wait: take the first ticket here so every session is paced."""
        gevent.sleep(_churn_wait(self))

    @task
    def one_session(self) -> None:
        self.client.session.abandon()
        try:
            self.client.open_session()
            self.client.call_tool(self.options.tool, self.options.args)
        except (proto.MCPError, UsageError):
            pass
        if self.options.delete:
            try:
                self.client.delete()
            except proto.MCPError:
                pass
        self.client.session.abandon()


class MCPFetchUser(MCPUser):
    """``tools/call mark_fetch`` in one long session (the demarkus page's MCP row)."""

    abstract = True

    @task
    def call(self) -> None:
        arguments = self.options.args if self.options.tool == "mark_fetch" else json.loads(DEFAULT_ARGS)
        self.call_with_recovery("mark_fetch", arguments)


class MCPLookupAllUser(MCPUser):
    """``tools/call mark_lookup_all`` in one long session (one world: the embedded Mark server)."""

    abstract = True

    @task
    def call(self) -> None:
        self.call_with_recovery("mark_lookup_all", {"query": self.options.query})
