"""Start-up checks of the Mark and MCP users' options: a bad value stops the run at ``init``, before any user spawns.

The users' own constructors check the same things, but only when users spawn: by then the plan runs on with no
users (a wrong ``--host`` scheme), or a ``nan`` timeout busy-loops a greenlet. Here every value is range-checked once
on the master (or the local runner), with one line and exit 2 (:func:`errors.stop_on_usage_error`).
"""

from __future__ import annotations

import math
import sys
from typing import Any
from urllib.parse import urlsplit

from locust import events
from locust.env import Environment
from locust.runners import WorkerRunner

from swarmgauge.errors import UsageError, stop_on_usage_error

MAX_TIMEOUT_SECONDS = 3600.0
TIMEOUT_OPTIONS = (("mark_timeout", "--mark-timeout"), ("mcp_timeout", "--mcp-timeout"))


def positive_seconds(flag: str, value: Any) -> float:
    """A timeout: a finite number of seconds above zero and at most an hour."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{flag} {value!r}: expected a number of seconds") from None
    if not math.isfinite(seconds) or not 0 < seconds <= MAX_TIMEOUT_SECONDS:
        raise UsageError(
            f"{flag} {value!r}: must be a finite number of seconds above 0 and at most {MAX_TIMEOUT_SECONDS:g}"
        )
    return seconds


def _selected(environment: Environment, base: type) -> bool:
    return any(isinstance(cls, type) and issubclass(cls, base) for cls in (environment.user_classes or []))


def check_host(environment: Environment) -> None:
    """The host the selected users will talk to has their scheme: http(s) for MCP users, mark:// for Mark users."""
    host = environment.host
    if not host:
        return
    mcp_users = sys.modules.get("swarmgauge.users.mcp_user")  # only what the locustfile imported: no new listeners
    mark_users = sys.modules.get("swarmgauge.users.mark_user")
    if mcp_users is not None and _selected(environment, mcp_users._MCPBase):
        parts = urlsplit(host)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(f"--host {host!r}: MCP users need an http(s)://HOST:PORT URL")
    elif mark_users is not None and _selected(environment, mark_users.MarkUser):
        from swarmgauge.users.mark_client import parse_mark_url

        parse_mark_url(host)


def check_options(environment: Environment) -> None:
    parsed = getattr(environment, "parsed_options", None)
    for name, flag in TIMEOUT_OPTIONS:
        if parsed is not None and hasattr(parsed, name):
            positive_seconds(flag, getattr(parsed, name))
    check_host(environment)


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    if isinstance(environment.runner, WorkerRunner):
        return
    stop_on_usage_error(check_options, environment)
