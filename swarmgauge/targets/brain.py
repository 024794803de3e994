"""A stand-in for the 2dph brain HTTP API (not the real service): same routes, semaphore and failure modes.

The real brain (``eSlider/2dph``, ``pkg/httpapi``) is Go over a Ladybug database and an embedding daemon. This
stand-in keeps what a load test sees: the exact-path routes (``/health``, ``/search``, ``/get``, ``/stats``,
``/audit``, ``/ingest``, ``/openapi.json``, the minimal stateless ``/mcp``; anything else is a 404 JSON), the
``KB_WORKERS`` semaphore around the backend routes (waiting just blocks), backend errors as 502 ``{"error"}``, and a
small deterministic corpus. Two fault modes reproduce the bugs on the 2dph PERF page:

* ``--leak-per-search KB`` is the reload-the-model-per-request bug: every search loads the embedding model again
  (``--model-load-ms``, spent filling a real, touched read buffer and matrix of KB each) and retains the matrix, so
  the process RSS grows and each search pays the load. Without it the model is a process-wide singleton, loaded
  once at the first search. The page measured 1,429 ms per search before the fix and 6 ms after
  (``--model-load-ms 1429 --search-ms 6``); a scaled run keeps the ratio (``--model-load-ms 143 --search-ms 0.6``);
* ``--pool-exhaustion N`` leaves each search's query result unclosed; once N are pinned, every backend route
  answers 502 (the buffer-pool-full error) until restart. ``/health`` stays 200, as in the real API where it
  never touches the database;
* ``--zombies-per-search N`` is the page's zombie ``[serve]`` subprocesses: each search starts a child never waited
  for, up to N (``targets/brain_zombies.py``).

It also serves ``/metrics`` (Prometheus text: process RSS, searches, pinned results) for the sampler's ``prom:``
source; the real API has no such route. Prints ``ready http://HOST:PORT`` once it accepts connections.

This module is its command line; the state and what each route does are ``targets/brain_service.py``, the HTTP
server and its routes ``targets/brain_http.py``.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import cast

from swarmgauge.targets.brain_http import serve
from swarmgauge.targets.brain_service import Brain

LOOPBACK = ("127.0.0.1", "::1", "localhost")


def build_parser() -> argparse.ArgumentParser:
    env = os.environ.get
    p = argparse.ArgumentParser(
        prog="swarmgauge target brain",
        description="A STAND-IN for the 2dph brain HTTP API (not the real service), with "
        "its two memory/pool bugs as fault modes.",
    )
    p.add_argument("--host", default=env("KB_HOST", "127.0.0.1"), help="bind address, loopback only")
    p.add_argument("--port", type=int, default=int(env("KB_PORT", "8630")), help="0 picks a free port")
    p.add_argument("--workers", type=int, default=int(env("KB_WORKERS", "4")), help="worker semaphore (KB_WORKERS)")
    p.add_argument("--corpus-size", type=int, default=300, help="deterministic leafs to serve")
    p.add_argument("--search-ms", type=float, default=5.0, help="time a search spends in the backend")
    p.add_argument(
        "--leak-per-search",
        type=int,
        default=0,
        metavar="KB",
        help="the reload-per-search bug: each search loads the model again and retains KB",
    )
    p.add_argument(
        "--model-load-ms",
        type=float,
        default=0.0,
        metavar="MS",
        help="time one model load takes (page: 1429); paid per search with the leak, once without",
    )
    p.add_argument(
        "--pool-exhaustion",
        type=int,
        default=0,
        metavar="N",
        help="after N unclosed search results every backend route answers 502 until restart",
    )
    p.add_argument(
        "--zombies-per-search",
        type=int,
        default=0,
        metavar="N",
        help="the zombie bug: each search starts a child never waited for, up to N (page: about 20)",
    )
    p.add_argument("--pidfile", help="write the pid here (for the sampler's psutil:pidfile=)")
    return p


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.host not in LOOPBACK:
        print(f"swarmgauge target brain: --host {args.host}: the stand-in binds loopback only", file=sys.stderr)
        return 2
    brain = Brain(
        workers=args.workers,
        corpus_size=args.corpus_size,
        search_ms=args.search_ms,
        leak_per_search_kb=args.leak_per_search,
        pool_exhaustion=args.pool_exhaustion,
        model_load_ms=args.model_load_ms,
        zombies_per_search=args.zombies_per_search,
    )
    try:
        server = serve(brain, args.host, args.port)
    except OSError as exc:
        print(f"swarmgauge target brain: cannot bind {args.host}:{args.port}: {exc.strerror}", file=sys.stderr)
        return 2
    if args.pidfile:
        with open(args.pidfile, "w") as f:
            f.write(f"{os.getpid()}\n")
    host, port = cast(tuple[str, int], server.server_address[:2])  # an AF_INET/AF_INET6 server
    print(f"ready http://{'[' + host + ']' if ':' in host else host}:{port}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
