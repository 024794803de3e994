"""The MCP Users' options: declared once with ``env_var`` (CLI, ``locust.conf``, compose, web UI) and checked once.

A bad value stops the run at init with one line and exit 2, before any user starts; ``--mcp-token`` is a secret.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from locust import events
from locust.env import Environment

from swarmgauge.core import hooks, option_kinds
from swarmgauge.core.options import add_option
from swarmgauge.errors import UsageError
from swarmgauge.protocols import mcp as proto

logger = logging.getLogger(__name__)
DEFAULT_ARGS = '{"url": "/corpus/quic/doc-0000.md"}'  # the first document of the reference server's corpus
DEFAULT_CHURN_RATE = 5.0  # new sessions per second, the demarkus page's churn
STEP_COUNTERS = ("sessions_started", "sessions_expired", "sessions_refused")


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    add_option(
        parser,
        "--mcp-path",
        default="/mcp",
        include_in_web_ui=True,
        help="MCP endpoint path on the host (default /mcp)",
    )
    add_option(
        parser,
        "--mcp-token",
        default="",
        include_in_web_ui=True,
        is_secret=True,
        help="Bearer token sent as Authorization on every MCP request",
    )
    add_option(
        parser,
        "--mcp-protocol",
        default=proto.DEFAULT_VERSION,
        include_in_web_ui=True,
        choices=list(proto.SUPPORTED_VERSIONS),
        help="MCP protocol version to pin (2026-07-28 is stateless: no initialize, no session)",
    )
    add_option(
        parser,
        "--mcp-tool",
        default="mark_fetch",
        include_in_web_ui=True,
        help="tool MCPUser / MCPChurnUser call",
    )
    add_option(
        parser,
        "--mcp-args",
        default=DEFAULT_ARGS,
        include_in_web_ui=True,
        help="JSON object of arguments for --mcp-tool",
    )
    add_option(
        parser,
        "--mcp-delete",
        action="store_true",
        default=False,
        include_in_web_ui=True,
        help="send DELETE when a session ends (default off, as on the demarkus page)",
    )
    add_option(
        parser,
        "--mcp-timeout",
        kind=option_kinds.REQUEST_TIMEOUT,
        type=float,
        default=10.0,
        include_in_web_ui=True,
        help="seconds for one MCP answer to arrive complete",
    )
    add_option(
        parser,
        "--mcp-churn-rate",
        kind=option_kinds.RATE,
        type=float,
        default=None,
        include_in_web_ui=True,
        help=f"new sessions per second for MCPChurnUser (default {DEFAULT_CHURN_RATE:g}), per load process outside a "
        "rate step; a rate step sets its own rate (mcp_churn.py's default plan takes this one as its rate)",
    )
    add_option(
        parser,
        "--mcp-query",
        default="alpha",
        include_in_web_ui=True,
        help="query MCPLookupAllUser sends to mark_lookup_all",
    )
    add_option(
        parser,
        "--mcp-list-weight",
        kind=option_kinds.NON_NEGATIVE,
        type=float,
        default=0.0,
        include_in_web_ui=True,
        help="MCPToolUser: weight of a tools/list call against 1 for a --mcp-tool call (0: never)",
    )


@dataclass
class MCPOptions:
    path: str = "/mcp"
    token: str = ""
    protocol: str = proto.DEFAULT_VERSION
    tool: str = "mark_fetch"
    args: dict[str, Any] = field(default_factory=lambda: json.loads(DEFAULT_ARGS))
    delete: bool = False
    timeout: float = 10.0
    churn_rate: float = DEFAULT_CHURN_RATE
    query: str = "alpha"
    list_weight: float = 0.0


def _given(value: Any, default: Any) -> Any:
    return default if value is None else value


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
        churn_rate=float(_given(getattr(parsed, "mcp_churn_rate", None), DEFAULT_CHURN_RATE)),
        query=getattr(parsed, "mcp_query", "alpha"),
        list_weight=float(getattr(parsed, "mcp_list_weight", 0.0)),
    )
    if options.protocol not in proto.SUPPORTED_VERSIONS:
        raise UsageError(f"--mcp-protocol {options.protocol!r} is not one of {', '.join(proto.SUPPORTED_VERSIONS)}")
    if not options.path.startswith("/"):
        raise UsageError(f"--mcp-path must start with '/', got {options.path!r}")
    if not 0 < options.timeout < float("inf"):
        raise UsageError("--mcp-timeout must be a positive finite number of seconds")
    if not 0 < options.churn_rate < float("inf"):
        raise UsageError("--mcp-churn-rate must be a positive finite number")
    if not 0 <= options.list_weight < float("inf"):
        raise UsageError("--mcp-list-weight must be a finite number >= 0")
    return options


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    for name in STEP_COUNTERS:
        hooks.register_step_counter(name)
    if getattr(environment, "parsed_options", None) is not None:
        try:
            options_from(environment.parsed_options)
        except UsageError as exc:
            logger.error("swarmgauge: %s", exc)
            raise SystemExit(2) from exc
