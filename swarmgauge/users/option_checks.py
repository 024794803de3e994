"""Start-up checks of the Mark and MCP users' options: a bad value stops the run at ``init``, before any user spawns.

The users' own constructors check the same things, but only when users spawn: by then the plan runs on with no
users (a wrong ``--host`` scheme). Numbers are range-checked by their option kinds (``--mark-timeout`` and
``--mcp-timeout`` are :data:`swarmgauge.core.option_kinds.REQUEST_TIMEOUT`); here, once on the master (or the local
runner), with one line and exit 2 (:func:`errors.stop_on_usage_error`), are the checkable facts: a ``--mark-ca``
file that must exist and hold PEM certificates (else the first handshake finds it, as a "network error"), and, in
a headless run, a ``--host`` that a selected User needs (else
every user's constructor raises: tracebacks, a run folder with no requests, and an SLO "failed" over no data). That
last check runs after every ``init`` listener of the locustfile, since an embedded target sets the host in one.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from locust import events
from locust.env import Environment
from locust.runners import WorkerRunner

from swarmgauge.core.user_hosts import missing_host
from swarmgauge.errors import UsageError, stop_on_usage_error

CA_FILE_OPTIONS = (("mark_ca", "--mark-ca"),)


def _selected(environment: Environment, base: type) -> bool:
    return any(isinstance(cls, type) and issubclass(cls, base) for cls in (environment.user_classes or []))


def check_host(environment: Environment) -> None:
    """The host the selected users will talk to has their scheme: http(s) for MCP users, mark:// for Mark users."""
    host = environment.host
    if not host:
        return
    mcp_users = sys.modules.get("swarmgauge.users.mcp_user")  # only what the locustfile imported: no new listeners
    mark_users = sys.modules.get("swarmgauge.users.mark_user")
    if mcp_users is not None and _selected(environment, mcp_users.MCPBase):
        parts = urlsplit(host)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(f"--host {host!r}: MCP users need an http(s)://HOST:PORT URL")
    elif mark_users is not None and _selected(environment, mark_users.MarkUser):
        from swarmgauge.users.mark_client import parse_mark_url

        parse_mark_url(host)


def pem_certificates(flag: str, value: Any) -> None:
    """A CA file: it exists and holds at least one PEM certificate (what the QUIC engines load from it)."""
    from cryptography import x509

    path = Path(str(value))
    if not path.is_file():
        raise UsageError(
            f"{flag} {value}: no such file; give the PEM file of the CA that signed the server's certificate"
        )
    try:
        x509.load_pem_x509_certificates(path.read_bytes())
    except OSError as exc:
        raise UsageError(f"{flag} {value}: cannot read it ({exc.strerror or exc})") from None
    except ValueError:
        raise UsageError(f"{flag} {value}: not a PEM certificate file (-----BEGIN CERTIFICATE----- ...)") from None


def check_host_given(environment: Environment) -> None:
    """A headless run whose selected Users need a ``--host`` has one (a web UI run may still type it in the form)."""
    parsed = getattr(environment, "parsed_options", None)
    if environment.host or not (getattr(parsed, "headless", False) or getattr(parsed, "autostart", False)):
        return
    refusal = missing_host(environment.user_classes, environment.host)
    if refusal:
        raise UsageError(refusal)


def check_options(environment: Environment) -> None:
    parsed = getattr(environment, "parsed_options", None)
    for name, flag in CA_FILE_OPTIONS:
        if getattr(parsed, name, None):
            pem_certificates(flag, getattr(parsed, name))
    check_host(environment)


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    if isinstance(environment.runner, WorkerRunner):
        return
    stop_on_usage_error(check_options, environment)


def _on_init_after_the_locustfile(environment: Environment, **_kwargs: Any) -> None:
    if isinstance(environment.runner, WorkerRunner):
        return
    stop_on_usage_error(check_host_given, environment)


@events.init_command_line_parser.add_listener
def _check_the_host_last(**_kwargs: Any) -> None:
    """Register the host check now: Locust builds its parser after importing the locustfile, so this ``init`` listener
    comes after every one the locustfile registered (an embedded target sets ``--host`` in one). The parser is built
    more than once (the web form reads it), the listener is added once."""
    if _on_init_after_the_locustfile not in _registered:
        events.init.add_listener(_on_init_after_the_locustfile)
        _registered.append(_on_init_after_the_locustfile)


_registered: list[Any] = []
