"""The real kneo-serv 1.2.0 as a target: ``swarmgauge target kneo [prepare] ...``.

``prepare`` builds the cached venv only (``.ci/run`` calls ``python3 -m targets.kneo prepare``). Otherwise it starts
the service (``--store sqlite`` or ``--store postgres [--dsn ...]``; without ``--dsn`` a throwaway PostgreSQL is
started too), prints ``ready http://HOST:PORT`` per process and the store locator, and runs until signalled.
Stdlib only, so it works before swarmgauge is installed.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import cast

from swarmgauge.errors import SwarmgaugeError
from swarmgauge.files import write_atomic
from swarmgauge.targets.kneo.service import (
    ECHO_SPEC,
    ECHO_SPEC_NAME,
    KneoService,
    KneoStartError,
    launch_fork_parent,
)
from swarmgauge.targets.kneo.venv import NoSuitablePython, VenvBuildError, ensure_venv, find_python, prepare
from swarmgauge.targets.postgres import redact_dsn

__all__ = [
    "ECHO_SPEC",
    "ECHO_SPEC_NAME",
    "KneoService",
    "KneoStartError",
    "NoSuitablePython",
    "VenvBuildError",
    "ensure_venv",
    "find_python",
    "main",
]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="swarmgauge target kneo", description="Run the real kneo-serv 1.2.0.")
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument(
        "--dsn", default=None, help="PostgreSQL DSN (default with --store postgres: a throwaway cluster); env KNEO_DSN"
    )
    parser.add_argument("--port", type=int, default=0, help="port of the first process (default: free)")
    parser.add_argument("--processes", type=int, default=1, help="service processes on the one store")
    parser.add_argument("--worker-concurrency", type=int, default=1, help="KNEO_SERV_WORKER_CONCURRENCY")
    parser.add_argument("--max-queue-depth", type=int, default=0, help="KNEO_SERV_MAX_QUEUE_DEPTH (0: unbounded)")
    parser.add_argument(
        "--api-key",
        action="append",
        default=[],
        metavar="NAME:KEY:SCOPE",
        help="enable auth with this key (repeatable), e.g. loader:s3cret:operator",
    )
    parser.add_argument("--admin-key", default=None, help="KNEO_SERV_ADMIN_API_KEY (enables auth)")
    parser.add_argument("--python", default=None, help="a Python >= 3.12 for the venv")
    parser.add_argument("--workdir", default=None, help="working directory (spec, SQLite store, logs)")
    parser.add_argument("--max-seconds", type=float, default=0.0, help="stop after this long (0: until signalled)")
    return parser


def main(argv: list[str]) -> int:
    if argv and argv[0] == "prepare":
        return prepare(argv[1:])
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    dsn = args.dsn or os.environ.get("KNEO_DSN")
    cluster = None
    fork_parent = None
    try:
        # kneo-serv's imports overlap PostgreSQL's start-up; no Python >= 3.12 fails here, before the cluster starts
        fork_parent = launch_fork_parent(args.python)
        if args.store == "postgres" and not dsn:
            from swarmgauge.targets.postgres import PostgresCluster

            cluster = PostgresCluster().start()
            dsn = cluster.dsn
        service = KneoService(
            fork_parent=fork_parent,
            store=args.store,
            dsn=dsn,
            processes=args.processes,
            worker_concurrency=args.worker_concurrency,
            max_queue_depth=args.max_queue_depth,
            api_keys=args.api_key,
            admin_key=args.admin_key,
            python=args.python,
            workdir=Path(args.workdir) if args.workdir else None,
            ports=[args.port] if args.port else [],
        )
        service.start()
    except NoSuitablePython as exc:
        print(f"swarmgauge target kneo: {exc}", file=sys.stderr)
        if cluster is not None:
            cluster.stop()
        if fork_parent is not None:
            fork_parent.close()
        return 1
    except SwarmgaugeError as exc:
        print(f"swarmgauge target kneo: {redact_dsn(str(exc))}", file=sys.stderr)
        if cluster is not None:
            cluster.stop()
        if fork_parent is not None:
            fork_parent.close()
        return 1
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        for url in service.urls:
            print(f"ready {url}", flush=True)
        print(f"store {redact_dsn(service.store_locator)}", flush=True)
        store_file = cast(Path, service.workdir) / "store"  # set by start()
        write_atomic(store_file, service.store_locator + "\n")  # mode 0600: a DSN holds the password
        print(f"store-file {store_file}", flush=True)
        print(f"pids {' '.join(map(str, service.pids))}", flush=True)
        stop.wait(args.max_seconds or None)
    finally:
        service.stop()
        if cluster is not None:
            cluster.stop()
    return 0
