"""The master-worker channel: no secret goes over it, and with a cluster key only key holders get on it.

Locust's master sends every worker its whole parsed options with each ``spawn`` (secrets included), to anyone who
connects to its port, in clear. Two changes to Locust's ZeroMQ sockets (``locust.rpc.zmqrpc``; registry entries
``locust-worker-channel-secrets`` and ``locust-worker-channel-curve``) fix that:

- every message the master sends passes :func:`scrub_message`: a ``spawn`` carries no secret option (each worker
  keeps the value it read itself: Locust updates a worker's options only with the keys the message holds) but the
  names of the secrets the master has set (:data:`SECRETS_SET`), no option only the master reads (``--kneo-store``'s
  DSN: :func:`keep_on_master`), and no registered secret value appears anywhere in any message;
- with a cluster key armed (:func:`arm`), the master's socket is a ZeroMQ CURVE server and every worker's a CURVE
  client. Both key pairs derive from the shared key (:func:`derive_keys`), so the channel is encrypted, a peer that
  lacks the key fails the handshake before any message, and a ZAP handler on the master accepts only the workers'
  derived public key. Each refused handshake is counted and logged (:class:`RefusalLog`).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import zmq
from locust.env import Environment
from locust.rpc import zmqrpc
from locust.rpc.protocol import Message
from zmq.utils import z85
from zmq.utils.monitor import parse_monitor_message

from swarmgauge.redaction import known_secrets, redact

log = logging.getLogger("swarmgauge.cluster")

#: The key a ``spawn`` message's options carry instead of the secrets: the dests of those the master has set.
SECRETS_SET = "swarmgauge_secrets_set"
ZAP_ENDPOINT = "inproc://zeromq.zap.01"
ZAP_DOMAIN = b"swarmgauge"
#: Seconds between two log lines about refused handshakes (the first is logged at once; a rogue retries 10x a second).
REFUSAL_LOG_INTERVAL_S = 60.0
#: Seconds a handler greenlet waits for a request before it checks whether its socket is still open.
POLL_MS = 1000
HANDSHAKE_FAILURES = (
    zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL | zmq.EVENT_HANDSHAKE_FAILED_AUTH
)


@dataclass(frozen=True)
class ChannelKeys:
    """The CURVE key pairs (Z85) of the master and of every worker, derived from one shared key."""

    server_public: bytes
    server_secret: bytes
    client_public: bytes
    client_secret: bytes


def _key_pair(shared: bytes, role: bytes) -> tuple[bytes, bytes]:
    secret = z85.encode(hashlib.sha256(b"swarmgauge cluster key\0" + role + b"\0" + shared).digest())
    return zmq.curve_public(secret), secret


def derive_keys(shared: bytes) -> ChannelKeys:
    """Both key pairs from the shared key: whoever holds it can be master or worker, nobody else either."""
    server_public, server_secret = _key_pair(shared, b"master")
    client_public, client_secret = _key_pair(shared, b"worker")
    return ChannelKeys(server_public, server_secret, client_public, client_secret)


def curve_available() -> bool:
    return bool(zmq.has("curve"))


@dataclass
class RefusalLog:
    """Refused handshakes on the master's port: the first logged at once, then one line per interval at most."""

    count: int = 0
    logged_count: int = 0
    last_logged: float = field(default=-REFUSAL_LOG_INTERVAL_S)

    def refused(self, why: str, now: float | None = None) -> None:
        self.count += 1
        now = time.monotonic() if now is None else now
        if now - self.last_logged < REFUSAL_LOG_INTERVAL_S:
            return
        since = self.count - self.logged_count
        log.warning(
            "swarmgauge: refused a worker connection (%s): it does not hold the cluster key; %d refused so far%s",
            why,
            self.count,
            f" ({since} since the last line)" if self.logged_count else "",
        )
        self.logged_count, self.last_logged = self.count, now


_armed: list[ChannelKeys] = []
REFUSALS = RefusalLog()
#: The master endpoint a worker was refused by, once said (the worker then stops: one line is enough).
WORKER_TOLD: list[str] = []


def arm(keys: ChannelKeys | None) -> None:
    """The keys every master or worker socket created from now on in this process uses (None: plain ZeroMQ)."""
    _armed[:] = [keys] if keys is not None else []


def armed() -> ChannelKeys | None:
    return _armed[0] if _armed else None


#: Options only the master reads, which may carry a password (see keep_on_master).
_master_only: set[str] = set()


def keep_on_master(dest: str) -> None:
    """Never send the option ``dest`` to workers: only the master reads it and it may carry a password (a DSN), so
    it is not a secret a worker must have (a worker is not told it lacks it)."""
    _master_only.add(dest)


#: Secret options code generated for a target it started itself, which the workers need (see share_with_workers).
_shared: set[str] = set()


def share_with_workers(dest: str) -> None:
    """Send the secret option ``dest`` to workers after all: only for a throwaway value code generated at start-up
    for an embedded target on the master's loopback (``demarkus_writes.py``'s write token), which no worker can read
    from anywhere else. A value the user gave is never shared."""
    _shared.add(dest)


# -- secrets out of every message ----------------------------------------------------------------------------------
def _scrub_value(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {key: _scrub_value(item, secrets) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub_value(item, secrets) for item in value]
    return value


def scrub_message(message: Message, is_secret: Callable[[str], bool]) -> Message:
    """``message`` as a worker may see it: a new Message (the spawn's options are the master's own dict)."""
    data = message.data
    shared_values: set[Any] = set()
    if message.type == "spawn" and isinstance(data, dict) and isinstance(data.get("parsed_options"), dict):
        options = data["parsed_options"]
        withheld = {key for key in options if is_secret(key) and key not in _shared}
        shared_values = {options[key] for key in _shared if key in options}
        kept = {key: value for key, value in options.items() if key not in withheld and key not in _master_only}
        kept[SECRETS_SET] = sorted(key for key in withheld if options[key])
        data = {**data, "parsed_options": kept}
    secrets = [secret for secret in known_secrets() if secret not in shared_values]
    if secrets:
        data = _scrub_value(data, secrets)
    if data is message.data:
        return message
    return Message(message.type, data, message.node_id)


def scrub_outgoing(is_secret: Callable[[str], bool]) -> None:
    """Every message the master sends (``send_to_client``) passes :func:`scrub_message`; idempotent."""
    original = zmqrpc.BaseSocket.send_to_client
    if getattr(original, "swarmgauge_scrubs", False):
        return

    def send_to_client(self: Any, msg: Message) -> None:
        original(self, scrub_message(msg, is_secret))

    send_to_client.swarmgauge_scrubs = True  # type: ignore[attr-defined]
    send_to_client.__wrapped__ = original  # type: ignore[attr-defined]
    zmqrpc.BaseSocket.send_to_client = send_to_client  # type: ignore[method-assign]


# -- CURVE on every socket -----------------------------------------------------------------------------------------
def _serve_zap(handler: Any, server: Any, keys: ChannelKeys) -> None:
    """Answer ZAP requests while the master's socket is open: only the workers' derived key is let in."""
    while not server.closed and not handler.closed:
        if not handler.poll(POLL_MS):
            continue
        frames = handler.recv_multipart()
        version, request_id, _domain, address, _identity, mechanism = frames[:6]
        credentials = frames[6:]
        allowed = mechanism == b"CURVE" and credentials[:1] == [z85.decode(keys.client_public)]
        if not allowed:
            REFUSALS.refused(f"from {address.decode(errors='replace')}, {mechanism.decode(errors='replace')} key")
        status = [b"200", b"OK"] if allowed else [b"400", b"not a cluster key holder"]
        handler.send_multipart([version, request_id, *status, b"worker" if allowed else b"", b""])
    handler.close(linger=0)


def _watch_handshakes(monitor: Any, socket: Any, failed: Callable[[str], None]) -> None:
    """Tell ``failed`` of each failed handshake on ``socket`` while it is open (a peer without the key, or with
    another, never reaches the ZAP handler)."""
    while not socket.closed and not monitor.closed:
        if not monitor.poll(POLL_MS):
            continue
        event = parse_monitor_message(monitor.recv_multipart())
        if event["event"] & (zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL):
            failed(event["endpoint"].decode(errors="replace"))
    monitor.close(linger=0)


def _stop_refused_worker(main: Any) -> Callable[[str], None]:
    """What a worker does when the master refuses its handshake: one line, then exit 2 from ``main`` (the greenlet
    that made the socket: Locust's own, waiting for the master's ack). Locust would otherwise retry for minutes
    against a key that cannot change."""
    import gevent

    def refused(endpoint: str) -> None:
        if WORKER_TOLD:
            return
        WORKER_TOLD.append(endpoint)
        log.error(
            "swarmgauge: the master at %s refused this worker's handshake: its --cluster-key-file holds another "
            "key, or it has none; this worker stops (exit 2)",
            endpoint,
        )
        gevent.get_hub().loop.run_callback(main.throw, SystemExit(2))

    return refused


def _make_curve_server(socket: Any, keys: ChannelKeys) -> None:
    import gevent

    handler = socket.context.socket(zmq.REP)
    handler.bind(ZAP_ENDPOINT)
    gevent.spawn(_serve_zap, handler, socket, keys)
    monitor = socket.get_monitor_socket(HANDSHAKE_FAILURES)
    gevent.spawn(
        _watch_handshakes, monitor, socket, lambda endpoint: REFUSALS.refused(f"handshake failed on {endpoint}")
    )
    socket.zap_domain = ZAP_DOMAIN
    socket.curve_secretkey = keys.server_secret
    socket.curve_publickey = keys.server_public
    socket.curve_server = True


def _make_curve_client(socket: Any, keys: ChannelKeys) -> None:
    import gevent
    from greenlet import getcurrent

    refused = _stop_refused_worker(getcurrent())
    gevent.spawn(_watch_handshakes, socket.get_monitor_socket(HANDSHAKE_FAILURES), socket, refused)
    socket.curve_serverkey = keys.server_public
    socket.curve_publickey = keys.client_public
    socket.curve_secretkey = keys.client_secret


def secure_sockets() -> None:
    """Locust's master and worker sockets take the armed keys before they bind or connect; idempotent.

    ``Server.__init__`` and ``Client.__init__`` call ``BaseSocket.__init__`` (which creates the socket) and then
    bind or connect: the wrapper sets the CURVE options in between.
    """
    original = zmqrpc.BaseSocket.__init__
    if getattr(original, "swarmgauge_secures", False):
        return

    def init_secured(self: Any, sock_type: int, ipv4_only: bool) -> None:
        original(self, sock_type, ipv4_only)
        keys = armed()
        if keys is None:
            return
        if isinstance(self, zmqrpc.Server):
            _make_curve_server(self.socket, keys)
        elif isinstance(self, zmqrpc.Client):
            _make_curve_client(self.socket, keys)

    init_secured.swarmgauge_secures = True  # type: ignore[attr-defined]
    init_secured.__wrapped__ = original  # type: ignore[attr-defined]
    zmqrpc.BaseSocket.__init__ = init_secured  # type: ignore[method-assign]


#: ``prepare(environment, role, kwargs)``: called before Locust makes a runner, with the role (``master``,
#: ``worker`` or ``local``) and the keyword arguments Locust passes (``master_bind_host``/``master_bind_port``,
#: ``master_host``/``master_port``, none); returns them, changed or not.
PrepareRunner = Callable[[Environment, str, dict[str, Any]], dict[str, Any]]

_preparers: list[PrepareRunner] = []


def _prepared(environment: Environment, role: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    for prepare in _preparers:
        kwargs = prepare(environment, role, kwargs)
    return kwargs


def before_runner_creation(prepare: PrepareRunner) -> None:
    """Run ``prepare`` when Locust makes a runner (before a master's or worker's socket exists, before Locust makes
    the ``--csv`` folder); each callback once, in the order given.

    Locust parses the options, makes the runner (which binds or connects at once), and only then fires ``init``: the
    runner's creation is the one moment the options are known and the socket is not yet made.
    """
    if prepare not in _preparers:
        _preparers.append(prepare)
    if getattr(Environment.create_master_runner, "swarmgauge_prepared", False):
        return
    create_master = Environment.create_master_runner
    create_worker = Environment.create_worker_runner
    create_local = Environment.create_local_runner

    def create_master_runner(self: Environment, master_bind_host: str = "*", master_bind_port: int = 5557) -> Any:
        kwargs = _prepared(self, "master", {"master_bind_host": master_bind_host, "master_bind_port": master_bind_port})
        return create_master(self, **kwargs)

    def create_worker_runner(self: Environment, master_host: str, master_port: int) -> Any:
        kwargs = _prepared(self, "worker", {"master_host": master_host, "master_port": master_port})
        return create_worker(self, **kwargs)

    def create_local_runner(self: Environment) -> Any:
        _prepared(self, "local", {})
        return create_local(self)

    create_master_runner.swarmgauge_prepared = True  # type: ignore[attr-defined]
    Environment.create_master_runner = create_master_runner  # type: ignore[method-assign]
    Environment.create_worker_runner = create_worker_runner  # type: ignore[method-assign]
    Environment.create_local_runner = create_local_runner  # type: ignore[method-assign]
