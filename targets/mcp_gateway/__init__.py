"""MCP gateway target on the official ``mcp`` SDK server: demarkus tools in front of a Mark server.

``swarmgauge target mcp [--mark mark://127.0.0.1:PORT]`` prints ``ready http://127.0.0.1:PORT/mcp`` once it
accepts connections; without ``--mark`` it starts the reference Mark server in the same process. ``launch()``
runs it as a child process (tests, locustfiles): a gevent-patched load process must not host the asyncio server.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swarmgauge.errors import SwarmgaugeError, UsageError

__all__ = ["main", "launch", "GatewayProcess", "GatewayStartError", "parse_args"]

_REPO_ROOT = Path(__file__).resolve().parents[2]


class GatewayStartError(SwarmgaugeError):
    """The gateway process exited or stayed silent instead of printing its ready line."""


def _positive_or_none(text: str) -> float | None:
    if text.lower() in ("none", "off", "0"):
        return None
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be positive, or 'none'")
    return value


def parse_args(argv: list[str]):
    parser = argparse.ArgumentParser(prog="swarmgauge target mcp", description=__doc__.splitlines()[0])
    parser.add_argument("--mark", default=os.environ.get("SWARMGAUGE_MCP_MARK", ""),
                        help="Mark server URL (mark://127.0.0.1:PORT); default: start the reference one here")
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to bind (127.0.0.1 or ::1)")
    parser.add_argument("--port", type=int, default=0, help="TCP port (0: any free port)")
    parser.add_argument("--path", default="/mcp")
    parser.add_argument("--json-response", action="store_true", help="answer requests with application/json, not SSE")
    parser.add_argument("--stateless", action="store_true", help="no sessions (SDK stateless_http mode)")
    parser.add_argument("--session-idle-timeout", type=_positive_or_none, default=1800.0,
                        help="seconds an idle session lives (SDK default 1800; 'none' disables)")
    parser.add_argument("--max-sessions", type=_positive_or_none, default=10_000.0,
                        help="open-session cap; past it initialize gets 503 (SDK default 10000; 'none' disables)")
    parser.add_argument("--mark-timeout", type=float, default=10.0)
    args = parser.parse_args(argv)
    if not args.path.startswith("/"):
        parser.error("--path must start with '/'")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    from targets.mcp_gateway.mark_backend import parse_mark_url
    from targets.mcp_gateway.server import GatewayConfig, bind, serve

    mark_handle = None
    try:
        if args.mark:
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
        )
        sock = bind(config)
    except (UsageError, OSError) as exc:
        print(f"swarmgauge target mcp: {exc}", file=sys.stderr)
        return 2

    def ready(url: str) -> None:
        print(f"ready {url}", flush=True)
        print(f"mark {address.url}", flush=True)

    try:
        asyncio.run(serve(config, sock, on_ready=ready))
    except KeyboardInterrupt:
        pass
    finally:
        if mark_handle is not None:
            mark_handle.stop()
    return 0


def _start_reference_mark():
    try:
        from targets.mark import start_in_thread
    except ImportError as exc:
        raise UsageError("no --mark given and the reference Mark server (targets.mark) is not available") from exc
    return start_in_thread(host="127.0.0.1", port=0)


@dataclass
class GatewayProcess:
    """A running gateway child process; ``stop()`` ends it (SIGTERM, then SIGKILL)."""

    url: str
    mark_url: str
    process: subprocess.Popen
    args: list[str] = field(default_factory=list)
    log: Any = None

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def base_url(self) -> str:
        return self.url.rsplit("/", 1)[0] if self.url.count("/") > 2 else self.url

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        for stream in (self.process.stdout, self.log):
            if stream is not None:
                stream.close()


def launch(args: list[str] | None = None, timeout: float = 30.0) -> GatewayProcess:
    """Start ``swarmgauge target mcp ARGS`` as a child and wait for its ``ready`` line."""
    import selectors

    command = [sys.executable, "-m", "swarmgauge.cli", "target", "mcp", *(args or [])]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_REPO_ROOT), env.get("PYTHONPATH", "")]))
    log = tempfile.TemporaryFile()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, env=env, cwd=str(_REPO_ROOT))
    deadline = time.monotonic() + timeout
    url = mark_url = ""
    buffer = b""
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    try:
        while time.monotonic() < deadline and not (url and mark_url):
            if not selector.select(timeout=min(0.5, max(0.0, deadline - time.monotonic()))):
                if process.poll() is not None:
                    break
                continue
            chunk = os.read(process.stdout.fileno(), 4096)
            if not chunk:
                break
            buffer += chunk
            for line in buffer.decode("utf-8", "replace").splitlines():
                if line.startswith("ready "):
                    url = line.split(" ", 1)[1].strip()
                elif line.startswith("mark "):
                    mark_url = line.split(" ", 1)[1].strip()
    finally:
        selector.close()
    if not (url and mark_url):
        process.kill()
        process.wait(5)
        log.seek(0)
        stderr = log.read().decode("utf-8", "replace")[-800:]
        log.close()
        raise GatewayStartError(f"gateway did not get ready: {stderr.strip() or 'no output'}")
    return GatewayProcess(url, mark_url, process, list(args or []), log)
