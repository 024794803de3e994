"""``MarkUser``: Mark Protocol load over QUIC, one ``request`` event per operation.

request_type is the verb (``FETCH``, ``LOOKUP``, ..., ``PUBLISH``), name the path or a template the caller
passes, response_length the body bytes. Every QUIC handshake is its own request (``QUIC``/``handshake``), so the
cost of ``fresh`` connections shows next to the requests they carry. Status errors (``NotFound``, ``Conflict``,
...) and transport errors (``RequestTimeout``, ``ConnectionLost``, ...) are the recorded failures, by class.

Connection mode (class attribute ``connection`` or ``--mark-connection``, one of ``users.mark_client.CONNECTION_MODES``):
``pooled`` (one connection per user, streams multiplexed), ``shared`` (one per process, all users' streams on it),
``fresh`` (a new connection per request, the benchmark's "fresh connection per request" rows). ``MarkClient`` owns
reconnecting: a connection that died is replaced by the next request, after a bounded backoff if the last attempt
failed, each attempt counted in ``mark_reconnects``. The connection is made before a request is timed, so a failed
handshake is one failure (the ``QUIC``/``handshake`` row, with its real duration), not two.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from locust import User, events
from locust.env import Environment

from swarmgauge.core import hooks, option_kinds
from swarmgauge.core.lifecycle import at_end
from swarmgauge.core.options import add_option
from swarmgauge.core.run_context import PerEnvironment, weakly_held
from swarmgauge.errors import UsageError
from swarmgauge.protocols.mark import Response
from swarmgauge.quic.driver import QuicError, QuicStats
from swarmgauge.quic.engine import DEFAULT_ENGINE, ENGINES
from swarmgauge.users import option_checks  # noqa: F401 - range-checks the options at init
from swarmgauge.users.mark_client import CONNECTION_MODES, MarkClient
from swarmgauge.users.mark_errors import MarkError
from swarmgauge.users.recording import fire, measure

log = logging.getLogger(__name__)

RECONNECT_COUNTER = "mark_reconnects"


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    add_option(
        parser,
        "--mark-token",
        default="",
        include_in_web_ui=True,
        is_secret=True,
        help="capability token sent as auth on writes (never logged)",
    )
    add_option(
        parser,
        "--mark-insecure",
        action="store_true",
        default=False,
        include_in_web_ui=True,
        help="skip TLS verification (the dev certificate needs it)",
    )
    add_option(
        parser,
        "--mark-ca",
        default="",
        include_in_web_ui=True,
        help="CA file (PEM) to verify the server with",
    )
    add_option(
        parser,
        "--mark-server-name",
        default="",
        include_in_web_ui=True,
        help="TLS server name (SNI), for multi-world servers",
    )
    add_option(
        parser,
        "--mark-connection",
        default="",
        include_in_web_ui=True,
        choices=["", *CONNECTION_MODES],
        help="pooled | shared | fresh (default: the user class's own, else pooled)",
    )
    add_option(
        parser,
        "--mark-quic-engine",
        default=DEFAULT_ENGINE,
        include_in_web_ui=True,
        choices=list(ENGINES),
        help=f"QUIC library under the Mark client: {' | '.join(ENGINES)} (default {DEFAULT_ENGINE})",
    )
    add_option(
        parser,
        "--mark-initial-rtt",
        kind=option_kinds.POSITIVE_SECONDS,
        type=float,
        default=None,
        include_in_web_ui=True,
        help="seconds the QUIC client assumes a round trip takes before it has measured one; a first Initial that "
        "gets no answer is resent after twice this (default: the library's, qh3 0.333 s; quic-go, the demarkus "
        "tools' client, uses 0.1 s)",
    )
    add_option(
        parser,
        "--mark-timeout",
        kind=option_kinds.REQUEST_TIMEOUT,
        type=float,
        default=10.0,
        include_in_web_ui=True,
        help="seconds per request and per handshake",
    )


@events.init.add_listener
def _register_counter(environment: Environment, **_kwargs: Any) -> None:
    hooks.register_step_counter(RECONNECT_COUNTER)


class RecordedMarkClient:
    """A :class:`MarkClient` whose every call fires one event; calls return the Response, or None on failure.

    ``reraise=True`` on a call hands the named error to the caller as well (e.g. to read a ``Conflict``).
    """

    def __init__(self, client: MarkClient, environment: Environment) -> None:
        self.inner = client
        self._environment = environment
        self.last_error: BaseException | None = None

    def _call(
        self,
        verb: str,
        name: str,
        operation: Callable[..., Response],
        args: tuple[Any, ...],
        options: dict[str, Any],
        reraise: bool,
    ) -> Response | None:
        """``operation(*args, **options)`` timed as one event: the operation and its arguments, not a closure made per
        request (a lambda and its frame on every FETCH)."""
        inner = self.inner
        if not inner.ready:
            try:
                inner.connect()  # recorded as QUIC/handshake by the client's hook, success or failure
            except QuicError as exc:
                self.last_error = exc
                if reraise:
                    raise
                return None
        with measure(self._environment.events, verb, name, reraise=reraise) as outcome:
            response = operation(*args, **options)
            outcome.response_length = len(response.body)
        self.last_error = outcome.exception
        return response if outcome.exception is None else None

    def fetch(self, path: str, *, name: str | None = None, reraise: bool = False, **options: Any) -> Response | None:
        return self._call("FETCH", name or path, self.inner.fetch, (path,), options, reraise)

    def list(
        self, path: str = "/", *, name: str | None = None, reraise: bool = False, **options: Any
    ) -> Response | None:
        return self._call("LIST", name or path, self.inner.list, (path,), options, reraise)

    def versions(self, path: str, *, name: str | None = None, reraise: bool = False) -> Response | None:
        return self._call("VERSIONS", name or path, self.inner.versions, (path,), {}, reraise)

    def lookup(
        self, scope: str, query: str, *, name: str | None = None, reraise: bool = False, **options: Any
    ) -> Response | None:
        return self._call("LOOKUP", name or scope, self.inner.lookup, (scope, query), options, reraise)

    def publish(
        self, path: str, body: bytes | str, *, name: str | None = None, reraise: bool = False, **options: Any
    ) -> Response | None:
        return self._call("PUBLISH", name or path, self.inner.publish, (path, body), options, reraise)

    def append(
        self, path: str, body: bytes | str, *, name: str | None = None, reraise: bool = False, **options: Any
    ) -> Response | None:
        return self._call("APPEND", name or path, self.inner.append, (path, body), options, reraise)

    def archive(self, path: str, *, name: str | None = None, reraise: bool = False, **options: Any) -> Response | None:
        return self._call("ARCHIVE", name or path, self.inner.archive, (path,), options, reraise)


def _option(environment: Environment, name: str, default: Any) -> Any:
    parsed = getattr(environment, "parsed_options", None)
    value = getattr(parsed, name, None) if parsed is not None else None
    return default if value in (None, "") else value


def _initial_rtt(value: Any) -> float | None:
    return None if value is None else float(value)


#: The process's shared connections (``--mark-connection shared``), one per host and settings, closed on quitting.
_SHARED_CLIENTS: dict[tuple, MarkClient] = {}


@dataclass
class ClientHooks(PerEnvironment):
    """Owned by ``users/mark_user.py``: the two hooks every MarkUser's client in one Environment calls, made once.

    They need only the Environment: a bound method of each user for each was 128 B a user at 1,000 users."""

    on_handshake: Callable[[float, BaseException | None], None] | None = None
    on_reconnect: Callable[[], None] | None = None

    @classmethod
    def of_environment(cls, environment: Environment) -> ClientHooks:
        made = cls.of(environment)
        if made.on_handshake is None:
            made.on_handshake, made.on_reconnect = _hooks_for(environment)
        return made


def _hooks_for(environment: Environment) -> tuple[Callable[[float, BaseException | None], None], Callable[[], None]]:
    held = weakly_held(environment)  # the record must not keep its Environment

    def on_handshake(seconds: float, error: BaseException | None) -> None:
        """One ``QUIC``/``handshake`` event, counted in the step it began in (one cut by a ramp-down too)."""
        target = held()
        if target is not None:
            fire(
                target.events,
                request_type="QUIC",
                name="handshake",
                response_time=seconds * 1000.0,
                exception=error,
                start_time=time.time() - seconds,
            )

    def on_reconnect() -> None:
        """Mirror ``QuicStats.reconnects`` (counted by the client, the one owner of reconnecting) into the steps."""
        target = held()
        if target is not None:
            hooks.count_step(target, RECONNECT_COUNTER)

    return on_handshake, on_reconnect


class MarkUser(User):
    """Abstract: subclass it and write tasks against ``self.client`` (a :class:`RecordedMarkClient`)."""

    abstract = True
    needs_host: ClassVar[str] = "mark://HOST:PORT"  # checked at init (users.option_checks), before any load
    connection: str | None = None  # one of CONNECTION_MODES; --mark-connection overrides it
    feeder_columns: ClassVar[tuple[str, ...]] = ("path",)  # --feeder: fed_path() reads this column

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        self.host = self.host or environment.host
        if not self.host:
            raise UsageError("MarkUser needs --host mark://HOST:PORT")
        self.connection_mode = _option(environment, "mark_connection", self.connection or "pooled")
        if self.connection_mode not in CONNECTION_MODES:
            raise UsageError(f"connection must be one of {', '.join(CONNECTION_MODES)}, not {self.connection_mode!r}")
        self.client = RecordedMarkClient(self._client_for_mode(), environment)

    def fed_path(self) -> str | None:
        """The ``path`` of the next ``--feeder`` row, or None when no feeder is given (the task picks its own)."""
        hook = hooks.next_row  # its implementation called directly: this runs before every fed request
        row = (hook.implementation or hook.default)(self)
        return None if row is None else str(row["path"])

    def _settings(self) -> dict[str, Any]:
        env = self.environment
        return dict(
            token=_option(env, "mark_token", None),
            insecure=bool(_option(env, "mark_insecure", False)),
            ca_file=_option(env, "mark_ca", None),
            server_name=_option(env, "mark_server_name", None),
            timeout=float(_option(env, "mark_timeout", 10.0)),
            quic_engine=str(_option(env, "mark_quic_engine", DEFAULT_ENGINE)),
            initial_rtt=_initial_rtt(_option(env, "mark_initial_rtt", None)),
        )

    def _client_for_mode(self) -> MarkClient:
        settings = self._settings()
        if self.connection_mode != "shared":
            return self._new_client(self.connection_mode, settings)
        key = (self.host, *sorted((k, str(v)) for k, v in settings.items()))
        shared = _SHARED_CLIENTS.get(key)
        if shared is None:
            shared = _SHARED_CLIENTS[key] = self._new_client("shared", settings)
        return shared

    def _new_client(self, mode: str, settings: dict[str, Any]) -> MarkClient:
        hooks_of = ClientHooks.of_environment(self.environment)
        return MarkClient(
            cast(str, self.host),  # __init__ refuses a user without a host
            connection=mode,
            stats=QuicStats(),
            on_handshake=hooks_of.on_handshake,
            on_reconnect=hooks_of.on_reconnect,
            **settings,
        )

    def on_stop(self) -> None:
        if self.connection_mode != "shared":
            self.client.inner.close()


@at_end("connections closed")
def _close_shared(_environment: Environment) -> None:
    for client in _SHARED_CLIENTS.values():
        client.close()
    _SHARED_CLIENTS.clear()


__all__ = ["CONNECTION_MODES", "MarkError", "MarkUser", "RecordedMarkClient"]
