"""MCP gateway target on the official ``mcp`` SDK server: demarkus tools in front of a Mark server.

``swarmgauge target mcp [--mark mark://127.0.0.1:PORT]`` prints ``ready http://127.0.0.1:PORT/mcp`` once it
accepts connections, then ``mark URL`` (the Mark server behind it); without ``--mark`` it starts the reference Mark
server as its own child. ``launch()`` runs the gateway as a child process (tests, locustfiles): a gevent-patched load
process must not host the asyncio server.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import signal
import sys
from typing import Any

from swarmgauge.errors import UsageError
from swarmgauge.quic.engine import DEFAULT_ENGINE, ENGINES
from swarmgauge.targets.mcp_gateway.sessions import DEDUP_CAP, REAPERS

__all__ = ["build_parser", "gateway_base_url", "launch", "launch_beside_mark", "main", "parse_args"]


def _positive_or_none(text: str) -> float | None:
    if text.lower() in ("none", "off", "0"):
        return None
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be positive, or 'none'")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The gateway's command line; ``--mcp-embedded-args`` are checked with it before the load."""
    parser = argparse.ArgumentParser(prog="swarmgauge target mcp", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--mark",
        default=os.environ.get("SWARMGAUGE_MCP_MARK", ""),
        help="Mark server URL (mark://127.0.0.1:PORT); default: start the reference one here",
    )
    parser.add_argument(
        "--mark-from-stdin",
        action="store_true",
        help="read the Mark server URL from stdin's first line once this process has imported the SDK (a launcher "
        "that starts the Mark server beside it: launch_beside_mark)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to bind (127.0.0.1 or ::1)")
    parser.add_argument("--port", type=int, default=0, help="TCP port (0: any free port)")
    parser.add_argument("--path", default="/mcp")
    parser.add_argument("--json-response", action="store_true", help="answer requests with application/json, not SSE")
    parser.add_argument("--stateless", action="store_true", help="no sessions (SDK stateless_http mode)")
    parser.add_argument(
        "--session-idle-timeout",
        type=_positive_or_none,
        default=1800.0,
        help="seconds an idle session lives (SDK default 1800; 'none' disables)",
    )
    parser.add_argument(
        "--session-reaper",
        choices=REAPERS,
        default="sweep",
        help="sweep: end sessions idle past the timeout every timeout/2, as the page's mcp-go gateway (they live "
        "1.0-1.5x it); per-session: the SDK ends each exactly at the timeout",
    )
    parser.add_argument(
        "--dedup-cap",
        type=int,
        default=DEDUP_CAP,
        help=f"sessions the fetch-dedup store holds; each eviction past it logs a WARN (default {DEDUP_CAP})",
    )
    parser.add_argument(
        "--max-sessions",
        type=_positive_or_none,
        default=10_000.0,
        help="open-session cap; past it initialize gets 503 (SDK default 10000; 'none' disables)",
    )
    parser.add_argument("--mark-timeout", type=float, default=10.0)
    parser.add_argument(
        "--http-writes",
        choices=("one", "uvicorn"),
        default="one",
        help="one: a response's headers and body in one send (default); uvicorn: its own two sends",
    )
    parser.add_argument(
        "--mark-quic-engine",
        choices=ENGINES,
        default=DEFAULT_ENGINE,
        help=f"QUIC library of the hop to the Mark server (default {DEFAULT_ENGINE}, as the Mark client's)",
    )
    return parser


def parse_args(argv: list[str]):
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.path.startswith("/"):
        parser.error("--path must start with '/'")
    if args.dedup_cap < 1:
        parser.error("--dedup-cap must be at least 1")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    # The SDK's imports (most of the gateway's start) build pydantic models, hundreds of thousands of objects that all
    # live on: a cyclic collection every 700 of them was 0.06 s of a 0.8 s start. The collector is back on before
    # anything runs.
    gc.disable()
    try:
        from swarmgauge.targets.mcp_gateway.mark_backend import parse_mark_url
        from swarmgauge.targets.mcp_gateway.server import GatewayConfig, bind, serve
    finally:
        gc.enable()

    mark_handle = None
    try:
        if args.mark_from_stdin:
            address = parse_mark_url(sys.stdin.readline().strip())
        elif args.mark:
            address = parse_mark_url(args.mark)
        else:
            mark_handle = _start_reference_mark()
            address = parse_mark_url(mark_handle.url)
        config = GatewayConfig(
            mark=address,
            host=args.host,
            port=args.port,
            path=args.path,
            json_response=args.json_response,
            stateless=args.stateless,
            session_idle_timeout=args.session_idle_timeout,
            max_sessions=int(args.max_sessions) if args.max_sessions is not None else None,
            mark_timeout=args.mark_timeout,
            mark_quic_engine=args.mark_quic_engine,
            http_writes=args.http_writes,
            session_reaper=args.session_reaper,
            dedup_cap=args.dedup_cap,
        )
        sock = bind(config)
    except (UsageError, OSError) as exc:
        print(f"swarmgauge target mcp: {exc}", file=sys.stderr)
        return 2

    def ready(url: str) -> None:
        print(f"ready {url}", flush=True)
        print(f"mark {address.url}", flush=True)

    # uvicorn re-raises the signal it stopped on once it is done; as KeyboardInterrupt it lets the finally below
    # stop the Mark child instead of leaving it orphaned.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        asyncio.run(serve(config, sock, on_ready=ready))
    except KeyboardInterrupt:
        pass
    finally:
        if mark_handle is not None:
            mark_handle.stop()
    return 0


def _interrupt(signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _start_reference_mark():
    """The reference Mark server as a child process, seeded with the corpus, for a gateway given no ``--mark``."""
    from swarmgauge.targets.launch import launch_target

    return launch_target("mark", ["--port", "0", "--seed-corpus", "300"])


def gateway_base_url(url: str) -> str:
    """``http://HOST:PORT/mcp`` -> ``http://HOST:PORT`` (what HTTP clients take as their host)."""
    return url.rsplit("/", 1)[0] if url.count("/") > 2 else url


def launch(args: list[str] | None = None, timeout: float = 30.0):
    """Start ``swarmgauge target mcp ARGS`` as a child and wait for its ``ready`` and ``mark`` lines."""
    from swarmgauge.targets.launch import launch_target

    return _with_urls(launch_target("mcp", list(args or []), timeout=timeout, wait_for=("ready", "mark")))


def _with_urls(process):
    process.base_url = gateway_base_url(process.url)
    process.mark_url = process.lines["mark"]
    return process


def launch_beside_mark(mark_args: list[str], gateway_args: list[str] | None = None, timeout: float = 30.0):
    """The Mark server (``swarmgauge target mark MARK_ARGS``) and the gateway in front of it as two children, started
    side by side: the gateway's start is mostly the SDK's imports (0.7 s of a quiet machine's 0.95), the Mark
    server's 0.3 s fits beside them, and the gateway is told the server's URL on its stdin once the server is ready.
    Returns (mark, gateway) once both are; if either fails, neither is left running."""
    from swarmgauge.targets.launch import launch_target, start_target

    starting = start_target("mcp", ["--mark-from-stdin", *(gateway_args or [])], stdin_pipe=True)
    try:
        mark = launch_target("mark", mark_args, timeout=timeout)
    except BaseException:
        starting.abandon()
        raise
    try:
        starting.tell(mark.url)
        gateway = _with_urls(starting.ready(timeout=timeout, wait_for=("ready", "mark")))
    except BaseException:
        mark.stop()
        raise
    return mark, gateway
