"""A distributed run that keeps its secrets home: the master on loopback unless told, no secret sent to a worker,
and (with ``--cluster-key-file``) only workers holding the shared key let onto the master's port.

- ``--master-bind-host`` defaults to 127.0.0.1 (Locust's default is every interface); one line at start says so
  and how to open it. Compose runs the workers in the master's network namespace, so they reach it on loopback.
- Secret options (``is_secret=True``, or named like one) never leave the master: :mod:`swarmgauge.core.worker_channel`
  takes them out of every message. A worker reads its own from its environment or config file; one whose master set
  a secret it lacks stops before it loads (:class:`MissingSecretError`, one line, exit 2).
- ``--cluster-key-file FILE`` on the master and on every worker: the channel becomes ZeroMQ CURVE with keys derived
  from the file's contents; a worker without the key gets no message at all and the master logs the refusal.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

from locust import events
from locust.env import Environment
from locust.runners import WorkerRunner

from swarmgauge.core import locust_compat, worker_channel
from swarmgauge.core.options import DECLARED, add_option
from swarmgauge.errors import UsageError, stop_on_usage_error
from swarmgauge.redaction import SECRET_NAME

log = logging.getLogger("swarmgauge.cluster")

LOOPBACK = "127.0.0.1"
MIN_KEY_BYTES = 16
QUIT_LINGER_MS = 2000
MASTER_BIND_HOST_HELP = (
    f"Interface the master listens on for workers. Defaults to {LOOPBACK} (loopback only, swarmgauge's default; "
    "Locust's is '*'): workers on other hosts need an address of this host or '*', and --cluster-key-file"
)


class MissingSecretError(UsageError):
    """A worker lacks a secret its master set: secrets are not sent to workers, each reads its own."""


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    parser.set_defaults(master_bind_host=LOOPBACK)
    locust_compat.set_option_help(parser, "--master-bind-host", MASTER_BIND_HOST_HELP)
    add_option(
        parser,
        "--cluster-key-file",
        default="",
        include_in_web_ui=False,
        help="file holding a shared key (at least 16 bytes) given to the master and every worker: the "
        "master-worker channel is then encrypted (ZeroMQ CURVE) and a worker without the key is refused",
    )


def is_secret_option(dest: str) -> bool:
    """Declared ``is_secret`` or named like a secret (token, password, api key...): it stays in this process."""
    declared = {option.dest for option in DECLARED.values() if option.secret}
    return dest in declared or bool(SECRET_NAME.search(dest))


def read_cluster_key(path: str) -> bytes:
    """The shared key in ``path`` (surrounding whitespace dropped); :class:`UsageError` when unusable."""
    try:
        key = Path(path).read_bytes().strip()
    except OSError as exc:
        raise UsageError(f"--cluster-key-file {path}: {exc.strerror}") from None
    if len(key) < MIN_KEY_BYTES:
        raise UsageError(f"--cluster-key-file {path}: the key must be at least {MIN_KEY_BYTES} bytes")
    if Path(path).stat().st_mode & 0o077:
        log.warning("swarmgauge: --cluster-key-file %s is readable by other users: chmod 600 it", path)
    if not worker_channel.curve_available():
        raise UsageError("--cluster-key-file: this pyzmq's libzmq was built without CURVE")
    return key


def _prepare_runner(environment: Environment, role: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Arm the channel's keys (or none) and tell where the master listens, before Locust makes the socket."""
    if role == "local":
        return kwargs
    options = environment.parsed_options
    path = str(getattr(options, "cluster_key_file", "") or "")

    def arm(_environment: Environment) -> None:
        worker_channel.arm(worker_channel.derive_keys(read_cluster_key(path)) if path else None)

    stop_on_usage_error(arm, environment)
    if role == "master":
        host = kwargs["master_bind_host"]
        where = "only on loopback" if host == LOOPBACK else "on every interface" if host in ("*", "0.0.0.0") else ""
        log.info(
            "swarmgauge: the master listens for workers on %s:%s%s%s; %s",
            host,
            kwargs["master_bind_port"],
            f" ({where})" if where else "",
            ", encrypted, cluster key required" if path else ", no cluster key",
            "open it to other hosts with --master-bind-host <address or *> and --cluster-key-file"
            if host == LOOPBACK
            else "give workers the same --cluster-key-file"
            if path
            else "anyone who reaches this port can join: set --cluster-key-file on the master and the workers",
        )
    return kwargs


def missing_secrets(options: Any) -> list[str]:
    """The flags of the secrets the master set (the spawn message names them) that this worker has no value for."""
    wanted = getattr(options, worker_channel.SECRETS_SET, None) or []
    by_dest = {option.dest: option for option in DECLARED.values()}
    missing = []
    for dest in wanted:
        if not getattr(options, dest, None):
            missing.append(by_dest[dest].flag if dest in by_dest else f"--{dest.replace('_', '-')}")
    return missing


def missing_secret_error(flags: list[str]) -> MissingSecretError:
    hints = []
    for flag in flags:
        declared = DECLARED.get(flag)
        hints.append(f"{flag} ({declared.locust} or {declared.swarmgauge})" if declared else flag)
    return MissingSecretError(
        f"MissingSecretError: the master sets {', '.join(hints)} and this worker has no value: secrets are not "
        "sent to workers; give this worker its own (environment, config file or command line)"
    )


@events.test_start.add_listener
def _check_worker_secrets(environment: Environment, **_kwargs: Any) -> None:
    """A worker whose master set a secret it lacks quits before it spawns a user (the master sees it quit)."""
    runner = environment.runner
    if not isinstance(runner, WorkerRunner):
        return
    missing = missing_secrets(environment.parsed_options)
    if not missing:
        return
    sys.stderr.write(f"swarmgauge: {missing_secret_error(missing)}\n")
    runner.send_message("quit")
    # _exit kills ZeroMQ's I/O thread: destroying the context first sends the quit (waiting at most the linger)
    runner.client.socket.context.destroy(linger=QUIT_LINGER_MS)
    logging.shutdown()
    sys.stderr.flush()
    os._exit(2)


worker_channel.scrub_outgoing(is_secret_option)
worker_channel.secure_sockets()
worker_channel.before_runner_creation(_prepare_runner)
