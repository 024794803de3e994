"""The gateway app: the official SDK's ``MCPServer`` (stateful Streamable HTTP) with the demarkus tools.

Session lifetime is the SDK's own (mcp 2.3.0 has ``session_idle_timeout`` and ``max_sessions`` on its
``StreamableHTTPSessionManager``; we pass them through rather than re-implementing them). ``GET /metrics``
exposes the live-session count in Prometheus text so the resource sampler can chart it next to memory; the count
is read from the session manager's table (a private attribute of the SDK: 0 if it ever moves).
"""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from starlette.requests import Request
from starlette.responses import PlainTextResponse

from swarmgauge.targets.mcp_gateway import tools
from swarmgauge.targets.mcp_gateway.mark_backend import MarkAddress, MarkBackend, MarkBackendError

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


def _say_why(call):
    """A transport or URL failure becomes ``isError: true`` with its reason (the SDK hides other exceptions' text)."""

    async def run(*args, **kwargs):
        try:
            return await call(*args, **kwargs)
        except MarkBackendError as exc:
            raise ToolError(str(exc)) from exc

    return run


def build_server(config: GatewayConfig) -> tuple[MCPServer, MarkBackend]:
    backend = MarkBackend(config.mark, timeout=config.mark_timeout)
    server = MCPServer(
        "swarmgauge-mark-gateway",
        version="0.1.0",
        instructions="Mark (demarkus) tools over the swarmgauge reference gateway.",
        log_level="WARNING",
    )

    @server.tool(structured_output=False, description="Fetch a Mark document (url#anchor for one section).")
    async def mark_fetch(url: str, force: bool = False) -> str:
        return await _say_why(tools.mark_fetch)(backend, url, force)

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
        return PlainTextResponse(metrics_text(server))

    return server, backend


def live_sessions(server: MCPServer) -> int:
    try:
        return len(server.session_manager._server_instances)
    except Exception:  # noqa: BLE001 - before the first request, or if the SDK renames its table
        return 0


def metrics_text(server: MCPServer) -> str:
    return (
        "# HELP mcp_gateway_sessions_live Stateful MCP sessions the SDK session manager holds.\n"
        "# TYPE mcp_gateway_sessions_live gauge\n"
        f"mcp_gateway_sessions_live {live_sessions(server)}\n"
    )


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

    server, backend = build_server(config)
    app = server.streamable_http_app(
        streamable_http_path=config.path,
        json_response=config.json_response,
        stateless_http=config.stateless,
        session_idle_timeout=config.session_idle_timeout,
        max_sessions=config.max_sessions,
        host=config.host,
    )
    uv = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=2)
    )
    task = asyncio.create_task(uv.serve(sockets=[sock]))
    while not uv.started and not task.done():
        await asyncio.sleep(0.01)
    if uv.started and on_ready is not None:
        on_ready(endpoint_url(config, sock))
    if stop_event is not None:
        waiter = asyncio.create_task(stop_event.wait())
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        uv.should_exit = True
        waiter.cancel()
    await task
    await backend.close()
