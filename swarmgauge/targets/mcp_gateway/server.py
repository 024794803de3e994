"""The gateway app: the official SDK's ``MCPServer`` (stateful Streamable HTTP) with the demarkus tools.

Idle sessions are swept as the page's Go gateway sweeps them (``session_reaper="sweep"``: every TTL/2, see
``sessions.py``) or reaped by the SDK each on its own deadline (``"per-session"``: mcp 2.3.0's
``session_idle_timeout``); ``max_sessions`` is the SDK's. ``GET /metrics`` exposes the live-session count, the
sweeps and the fetch-dedup store's WARN lines in Prometheus text so the resource sampler can chart them next to
memory; the sessions are read from the session manager's table (a private attribute of the SDK: 0 if it moves).
"""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from starlette.requests import Request
from starlette.responses import PlainTextResponse

from swarmgauge.quic.engine import DEFAULT_ENGINE
from swarmgauge.targets.mcp_gateway import tools
from swarmgauge.targets.mcp_gateway.mark_backend import MarkAddress, MarkBackend, MarkBackendError
from swarmgauge.targets.mcp_gateway.sessions import DEDUP_CAP, HOLD, FetchDedup, SessionSweeper

LOOPBACK = ("127.0.0.1", "::1", "localhost")


@dataclass
class GatewayConfig:
    mark: MarkAddress
    host: str = "127.0.0.1"
    port: int = 0
    path: str = "/mcp"
    json_response: bool = False
    stateless: bool = False
    session_idle_timeout: float | None = 1800.0
    max_sessions: int | None = 10_000
    mark_timeout: float = 10.0
    mark_quic_engine: str = DEFAULT_ENGINE
    http_writes: str = "one"  # "one": a response's writes joined (one_write.py); "uvicorn": its own, two a response
    session_reaper: str = "sweep"
    dedup_cap: int = DEDUP_CAP

    @property
    def sweeps(self) -> bool:
        return self.session_reaper == "sweep" and self.session_idle_timeout is not None and not self.stateless

    @property
    def sdk_idle_timeout(self) -> float | None:
        """What the SDK is given: the TTL when it reaps, a far-off deadline when the sweeper does."""
        return HOLD if self.sweeps else self.session_idle_timeout


@dataclass
class GatewayState:
    """What the gateway keeps beside the SDK: the fetch-dedup store and, when it sweeps, the sweeper."""

    dedup: FetchDedup
    sweeper: SessionSweeper | None
    backend: MarkBackend | None = None


def _say_why(call):
    """A transport or URL failure becomes ``isError: true`` with its reason (the SDK hides other exceptions' text)."""

    async def run(*args, **kwargs):
        try:
            return await call(*args, **kwargs)
        except MarkBackendError as exc:
            raise ToolError(str(exc)) from exc

    return run


def _session_id(ctx: Context) -> str:
    try:
        request = ctx.request_context.request
    except ValueError:
        return ""
    headers = getattr(request, "headers", None)
    return (headers.get("mcp-session-id") or "") if headers is not None else ""


def build_server(config: GatewayConfig) -> tuple[MCPServer, MarkBackend, GatewayState]:
    backend = MarkBackend(config.mark, timeout=config.mark_timeout, quic_engine=config.mark_quic_engine)
    dedup = FetchDedup(config.dedup_cap)
    ttl = config.session_idle_timeout
    sweeper = SessionSweeper(ttl, dedup.drop) if config.sweeps and ttl is not None else None
    state = GatewayState(dedup, sweeper, backend)
    server = MCPServer(
        "swarmgauge-mark-gateway",
        version=metadata.version("swarmgauge"),  # the one version, from the installed metadata
        instructions="Mark (demarkus) tools over the swarmgauge reference gateway.",
        log_level="WARNING",
    )

    @server.tool(structured_output=False, description="Fetch a Mark document (url#anchor for one section).")
    async def mark_fetch(url: str, ctx: Context, force: bool = False) -> str:
        text = await _say_why(tools.mark_fetch)(backend, url, force)
        session = _session_id(ctx)
        if session:  # recorded per session as the broker's dedup does; the answer is unchanged
            dedup.seen(session, url, tools.field_of(text, "etag"))
        return text

    @server.tool(structured_output=False, description="List a Mark directory.")
    async def mark_list(url: str, include_archived: bool = False, cursor: str = "", page_size: int = 0) -> str:
        return await _say_why(tools.mark_list)(backend, url, include_archived, cursor, page_size)

    @server.tool(structured_output=False, description="Version history of a Mark document.")
    async def mark_versions(url: str) -> str:
        return await _say_why(tools.mark_versions)(backend, url)

    @server.tool(structured_output=False, description="Catalog search under a scope of one world.")
    async def mark_lookup(url: str, query: str, filter: str = "", limit: int = 0, match: str = "") -> str:
        return await _say_why(tools.mark_lookup)(backend, url, query, filter, limit, match)

    @server.tool(structured_output=False, description="Catalog search across every world of this gateway.")
    async def mark_lookup_all(query: str, scope: str = "/", filter: str = "", limit: int = 0, match: str = "") -> str:
        return await _say_why(tools.mark_lookup_all)(backend, query, scope, filter, limit, match)

    @server.custom_route("/metrics", methods=["GET"])
    async def metrics(_request: Request) -> PlainTextResponse:
        return PlainTextResponse(metrics_text(server, state))

    return server, backend, state


def session_table(server: MCPServer) -> dict[str, Any]:
    try:
        return server.session_manager._server_instances
    except Exception:  # noqa: BLE001 - before the first request, or if the SDK renames its table
        return {}


def live_sessions(server: MCPServer) -> int:
    return len(session_table(server))


def _gauge(name: str, help_text: str, value: float) -> str:
    return f"# HELP {name} {help_text}\n# TYPE {name} gauge\n{name} {value:g}\n"


def metrics_text(server: MCPServer, state: GatewayState | None = None) -> str:
    text = _gauge(
        "mcp_gateway_sessions_live", "Stateful MCP sessions the SDK session manager holds.", live_sessions(server)
    )
    if state is None:
        return text
    dedup = state.dedup
    text += _gauge("mcp_gateway_dedup_sessions", "Sessions in the fetch-dedup store.", len(dedup))
    text += _gauge("mcp_gateway_dedup_warn_lines", "WARN lines logged for dedup evictions.", dedup.warn_lines)
    text += _gauge(
        "mcp_gateway_dedup_sessions_after_full",
        "New sessions in the dedup store since its first eviction.",
        dedup.sessions_after_full,
    )
    if state.backend is not None:
        engine_name = state.backend.engine.name
        text += (
            "# HELP mcp_gateway_mark_quic_engine The QUIC library of the hop to the Mark server.\n"
            f'# TYPE mcp_gateway_mark_quic_engine gauge\nmcp_gateway_mark_quic_engine{{engine="{engine_name}"}} 1\n'
        )
        text += _gauge(
            "mcp_gateway_mark_connections", "QUIC connections opened to the Mark server.", state.backend.connections
        )
    if state.sweeper is not None:
        counts = state.sweeper.counts
        text += _gauge("mcp_gateway_sweeps", "Idle-session sweeps run.", counts.sweeps)
        text += _gauge("mcp_gateway_sessions_swept", "Sessions the sweeps ended.", counts.swept)
        text += _gauge("mcp_gateway_sweep_largest", "Most sessions one sweep ended.", counts.largest_sweep)
        if counts.swept:
            text += _gauge("mcp_gateway_swept_idle_min_seconds", "Shortest idle time at a sweep.", counts.idle_min)
            text += _gauge("mcp_gateway_swept_idle_max_seconds", "Longest idle time at a sweep.", counts.idle_max)
    return text


def bind(config: GatewayConfig) -> socket.socket:
    if config.host not in LOOPBACK:
        from swarmgauge.errors import UsageError

        raise UsageError(f"the gateway binds loopback only, not {config.host!r}")
    family = socket.AF_INET6 if ":" in config.host else socket.AF_INET
    # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY on accepted sockets only then (else ~40 ms delayed-ACK stalls).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((config.host, config.port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


def endpoint_url(config: GatewayConfig, sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{config.path}"


async def serve(
    config: GatewayConfig, sock: socket.socket, on_ready=None, stop_event: asyncio.Event | None = None
) -> None:
    """Run uvicorn on the bound socket until ``stop_event`` is set (or forever)."""
    import uvicorn

    server, backend, state = build_server(config)
    app = server.streamable_http_app(
        streamable_http_path=config.path,
        json_response=config.json_response,
        stateless_http=config.stateless,
        session_idle_timeout=config.sdk_idle_timeout,
        max_sessions=config.max_sessions,
        host=config.host,
    )
    from swarmgauge.targets.mcp_gateway.one_write import OneWriteH11Protocol

    http: Any = OneWriteH11Protocol if config.http_writes == "one" else "h11"
    uv = uvicorn.Server(
        uvicorn.Config(
            app, http=http, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=2
        )
    )
    task = asyncio.create_task(uv.serve(sockets=[sock]))
    while not uv.started and not task.done():
        await asyncio.sleep(0.01)
    sweeping = None
    if state.sweeper is not None:
        import anyio

        sweeping = asyncio.create_task(state.sweeper.run(lambda: session_table(server), anyio.current_time))
    if uv.started and on_ready is not None:
        on_ready(endpoint_url(config, sock))
    if stop_event is not None:
        waiter = asyncio.create_task(stop_event.wait())
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        uv.should_exit = True
        waiter.cancel()
    await task
    if sweeping is not None:
        sweeping.cancel()
    await backend.close()
