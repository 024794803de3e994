"""The brain stand-in's HTTP face: its exact-path routes over :class:`~swarmgauge.targets.brain_service.Brain`,
``/openapi.json`` from the Ops table, ``/metrics`` for the sampler, and the threaded server (IPv4 or IPv6 loopback).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CollectorRegistry, Gauge, ProcessCollector, generate_latest

from swarmgauge.targets.brain_service import ApiError, Brain
from swarmgauge.targets.brain_zombies import count_zombies

OPS = (  # path, method, summary: the Ops table /openapi.json is generated from
    ("/health", "GET", "liveness; bypasses the worker semaphore"),
    ("/search", "GET", "search leafs: q (required), n 1..100, root facts|info, noweb, as_of YYYY-MM-DD, sort"),
    ("/get", "GET", "one leaf by id; body=1 adds the body"),
    ("/stats", "GET", "index health"),
    ("/audit", "GET", "facts confidence histogram"),
    ("/ingest", "POST", 'add leafs: one object, an array or {"leafs": [...]}'),
    ("/mcp", "POST", "minimal stateless MCP JSON-RPC"),
)


def openapi() -> dict:
    paths = {
        path: {method.lower(): {"summary": summary, "responses": {"200": {"description": "ok"}}}}
        for path, method, summary in OPS
    }
    return {"openapi": "3.0.3", "info": {"title": "brain API (swarmgauge stand-in)", "version": "0.1"}, "paths": paths}


def metrics_registry(brain: Brain) -> CollectorRegistry:
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    Gauge("brain_searches", "Searches answered.", registry=registry).set_function(lambda: brain.searches)
    Gauge("brain_pinned_results", "Unclosed query results.", registry=registry).set_function(
        lambda: brain.pinned_results
    )
    Gauge("brain_model_loads", "Embedding model loads.", registry=registry).set_function(lambda: brain.model_loads)
    Gauge("brain_zombie_children", "Children exited and never waited for.", registry=registry).set_function(
        count_zombies
    )
    return registry


def make_handler(brain: Brain):
    registry = metrics_registry(brain)
    gets: dict[str, Callable[[dict[str, str]], dict]] = {
        "/search": brain.search,
        "/get": brain.get,
        "/stats": brain.stats,
        "/audit": brain.audit,
    }

    class Handler(BaseHTTPRequestHandler):
        """Each answer leaves in one write, with Nagle off: headers and body as two small segments on a kept-open
        connection would wait for the client's delayed ACK (about 40 ms) on top of the configured search time."""

        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def _send(self, status: int, doc, content_type: str = "application/json") -> None:
            data = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
            head = (
                f"{self.protocol_version} {status} {self.responses.get(status, ('',))[0]}\r\n"
                f"Server: {self.version_string()}\r\nDate: {self.date_time_string()}\r\n"
                f"Content-Type: {content_type}\r\nContent-Length: {len(data)}\r\n\r\n"
            )
            self.wfile.write(head.encode("latin-1") + data)

        def _route(self, method: str) -> None:
            url = urlsplit(self.path)
            params = {k: v[-1] for k, v in parse_qs(url.query).items()}
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) if method == "POST" else b""
            try:
                if url.path == "/health":
                    return self._send(200, {"status": "ok"})
                if url.path == "/openapi.json":
                    return self._send(200, openapi())
                if url.path == "/metrics":
                    return self._send(200, generate_latest(registry), "text/plain; version=0.0.4")
                if url.path == "/mcp":
                    if method != "POST":
                        raise ApiError(405, "method not allowed")
                    with brain.semaphore:
                        return self._send(200, brain.mcp(body))
                if url.path in gets or url.path == "/ingest":
                    wanted = "POST" if url.path == "/ingest" else "GET"
                    if method != wanted:
                        raise ApiError(405, "method not allowed")
                    with brain.semaphore:
                        out = brain.ingest(body) if url.path == "/ingest" else gets[url.path](params)
                    return self._send(200, out)
                raise ApiError(404, f"no route {url.path}")
            except ApiError as exc:
                self._send(exc.status, {"error": str(exc)})

        def do_GET(self) -> None:
            self._route("GET")

        def do_POST(self) -> None:
            self._route("POST")

        def log_message(self, *args) -> None:
            pass

    return Handler


def serve(brain: Brain, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """Bind (not yet serving); ``server.server_address`` has the real port when ``port`` is 0."""
    server_class = _ThreadingHTTPServer6 if ":" in host else ThreadingHTTPServer
    server = server_class((host, port), make_handler(brain))
    server.daemon_threads = True
    return server


class _ThreadingHTTPServer6(ThreadingHTTPServer):
    address_family = socket.AF_INET6
