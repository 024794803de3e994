"""Where a kneo-serv sync run's time goes at concurrency 1 (issue 30, the sync sweeps' runs/s ÷ c=1 rows).

``python -m benchmarks.kneo_c1_gap [--stores sqlite,postgres] [--clients requests,fasthttp,kneo-client,stdlib]
[--runs 100] [--rounds 3] [--concurrency 8] [--out FILE]``

At c=1 a run is serial: the generator builds and sends the request, kneo-serv parses it, runs the echo agent and
saves to its store, answers, and the generator reads the answer before it sends the next. Whatever the generator
spends is kneo-serv idle time, so runs/s at 1 is below what the service can do, and at c>1 that idle time is filled by
other users' runs (the sweeps' 1.1-1.2x). This script sends the same ``POST /v1/runs`` (echo agent, sync) one at a
time through several clients, side by side in rounds (the order rotated each round), against one real kneo-serv per
store, and splits each run's wall time into:

- the generator's CPU (this process's ``process_time``; nothing else runs in it),
- kneo-serv's CPU and PostgreSQL's (every process of the cluster), from the scheduler's own per-thread counts
  (``/proc/<pid>/task/*/schedstat``, nanoseconds; ``cpu_times`` counts 10 ms ticks),
- time runnable but not running, of the three (the run queue: the other engineers' load),
- the rest: time nobody was computing, blocked on I/O (loopback wake-ups, the store's fsync, lock hand-offs).

``kneo_serv_idle`` is the wall time less kneo-serv's CPU: what another user's run could fill at c>1. Every figure
is a mean over a block, so a part that overlaps another (the generator reading an answer while kneo-serv finishes
its request's bookkeeping, a background thread's run-queue wait) is counted in both, and ``rest`` can go below 0.

The same split is taken for ``GET /livez`` (kneo-serv's HTTP path with no run) with each client, which bounds what
the HTTP stack alone costs a request; and for the run at ``--concurrency`` through FastHttpSession (one session per
greenlet), which shows kneo-serv's own CPU a run when other runs are in flight, and, per client, the sweeps' shape
figure: runs/s at ``--concurrency`` over runs/s at 1 through that client, taken per round from blocks run side by
side, so the other engineers' load moves both. Each figure is the median over
rounds of the per-run mean of a round. Figures only; nothing here asserts on time. Prints a table and writes JSON
(``--out``, default ``benchmarks/results/kneo_c1_gap.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gevent
import psutil
from locust.clients import HttpSession  # imports gevent's monkey patching first, as a Locust run does
from locust.contrib.fasthttp import FastHttpSession
from locust.event import EventHook, Events

from swarmgauge.files import write_json
from swarmgauge.protocols.kneo import run_request
from swarmgauge.targets.kneo import KneoService
from swarmgauge.targets.postgres import PostgresCluster
from swarmgauge.users.kneo_client import KneoClient

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "kneo_c1_gap.json"
CLIENTS = ("requests", "fasthttp", "kneo-client", "stdlib")
MAX_RUNS = 2000


def _schedstat(pids: list[int]) -> tuple[float, float]:
    """Seconds on a CPU and seconds runnable but waiting, summed over every thread of ``pids``."""
    on_cpu = waiting = 0.0
    for pid in pids:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as handle:
                    fields = handle.read().split()
            except OSError:
                continue
            on_cpu += int(fields[0]) / 1e9
            waiting += int(fields[1]) / 1e9
    return on_cpu, waiting


def _postgres_pids(cluster: PostgresCluster | None) -> list[int]:
    if cluster is None:
        return []
    try:
        postmaster = int((cluster.data_dir / "postmaster.pid").read_text().split()[0])
        parent = psutil.Process(postmaster)
        return [postmaster, *(child.pid for child in parent.children(recursive=True))]
    except (OSError, ValueError, psutil.Error):
        return []


def _fast_sender(url: str, body: bytes) -> Callable[[str], int]:
    """``send(path)`` through a FastHttpSession of its own: a POST of the run body, or a GET of ``/livez``."""
    fast = FastHttpSession(url, request_event=EventHook(), user=None, max_retries=0, concurrency=1)
    headers = {"Content-Type": "application/json"}

    def with_fasthttp(path: str) -> int:
        if path == "/livez":
            return fast.client.urlopen(url + path, method="GET").status_code
        return fast.client.urlopen(url + path, method="POST", payload=body, headers=headers).status_code

    return with_fasthttp


def _senders(url: str, body: bytes) -> dict[str, Callable[[str], int]]:
    """One function per client kind: ``send(path)`` -> HTTP status; a POST of the run body to ``/v1/runs``."""
    requests_session = HttpSession(url, EventHook(), None)
    events = Events()
    kneo = KneoClient(url, request_events=events, tag="sg-c1-gap")
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    stdlib = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=30)
    headers = {"Content-Type": "application/json"}

    def with_requests(path: str) -> int:
        if path == "/livez":
            return requests_session.get(path, timeout=30).status_code
        return requests_session.post(path, data=body, headers=headers, timeout=30).status_code

    def with_kneo_client(path: str) -> int:
        if path == "/livez":
            return -1  # the client has no such operation
        kneo.dispatch()
        return 200

    def with_stdlib(path: str) -> int:
        for attempt in range(2):  # uvicorn closes a connection idle 5 s (while the other clients ran): open anew
            try:
                if path == "/livez":
                    stdlib.request("GET", path)
                else:
                    stdlib.request("POST", path, body=body, headers=headers)
                answer = stdlib.getresponse()
                answer.read()
                return answer.status
            except (OSError, http.client.HTTPException):
                stdlib.close()
                if attempt:
                    raise
        return -2

    return {
        "requests": with_requests,
        "fasthttp": _fast_sender(url, body),
        "kneo-client": with_kneo_client,
        "stdlib": with_stdlib,
    }


def _block(
    sends: list[Callable[[str], int]], path: str, runs: int, server: list[int], pg: list[int]
) -> dict[str, float]:
    """``runs`` requests split over ``sends``, each sender one after another in a greenlet of its own (concurrency
    ``len(sends)``); the split of their wall time per request."""
    each = max(1, runs // len(sends))
    runs = each * len(sends)

    def loop(send: Callable[[str], int]) -> None:
        for _ in range(each):
            status = send(path)
            if status not in (200, -1):
                raise SystemExit(f"{path}: HTTP {status}")

    me = [os.getpid()]
    gen0, (srv0, srq0), (pg0, pgrq0), (_, grq0) = (
        time.process_time(),
        _schedstat(server),
        _schedstat(pg),
        _schedstat(me),
    )
    wall0 = time.perf_counter()
    if len(sends) == 1:
        loop(sends[0])
    else:
        gevent.joinall([gevent.spawn(loop, send) for send in sends], raise_error=True)
    wall = time.perf_counter() - wall0
    (srv1, srq1), (pg1, pgrq1), (_, grq1) = _schedstat(server), _schedstat(pg), _schedstat(me)
    gen, srv, pgc = time.process_time() - gen0, srv1 - srv0, pg1 - pg0
    rq = (srq1 - srq0) + (pgrq1 - pgrq0) + (grq1 - grq0)
    per = 1000.0 / runs
    rest = wall - gen - srv - pgc - rq
    return {
        "wall_ms": wall * per,
        "kneo_serv_idle_ms": (wall - srv) * per,
        "generator_cpu_ms": gen * per,
        "kneo_serv_cpu_ms": srv * per,
        "postgres_cpu_ms": pgc * per,
        "run_queue_ms": rq * per,
        "rest_ms": rest * per,
        "per_s": runs / wall if wall > 0 else 0.0,
    }


def _median(blocks: list[dict[str, float]]) -> dict[str, float]:
    return {key: round(statistics.median(b[key] for b in blocks), 3) for key in blocks[0]}


def measure_store(store: str, clients: list[str], runs: int, rounds: int, concurrency: int) -> dict[str, Any]:
    cluster = PostgresCluster().start() if store == "postgres" else None
    service = KneoService(store=store, dsn=cluster.dsn if cluster else None)
    try:
        service.start()
        body = json.dumps(
            run_request("hello", spec_path="echo.yaml", target="agent", async_mode=False, run_tag="sg-c1-gap")
        ).encode()
        senders = _senders(service.url, body)
        many = [_fast_sender(service.url, body) for _ in range(concurrency)]
        server, pg = service.pids, _postgres_pids(cluster)
        for name in clients:  # warm-up: connections open, imports and caches of both sides warm
            _block([senders[name]], "/v1/runs", 10, server, pg)
        _block(many, "/v1/runs", 10 * concurrency, server, pg)
        results: dict[str, list[dict[str, float]]] = {}
        for round_index in range(rounds):
            order = clients[round_index % len(clients) :] + clients[: round_index % len(clients)]
            for name in order:
                send = [senders[name]]
                results.setdefault(f"run {name}", []).append(_block(send, "/v1/runs", runs, server, pg))
                if name != "kneo-client":
                    results.setdefault(f"livez {name}", []).append(_block(send, "/livez", runs, server, pg))
            if concurrency > 1:  # kneo-serv's CPU a run with others' runs in flight, the same round
                many_runs = _block(many, "/v1/runs", runs, server, pg)
                results.setdefault(f"run fasthttp x{concurrency}", []).append(many_runs)
        table: dict[str, Any] = {key: _median(blocks) for key, blocks in results.items()}
        many_key = f"run fasthttp x{concurrency}"
        if many_key in results:  # the sweeps' shape figure, per round (the blocks side by side), then the median
            table["shape"] = {
                f"runs/s x{concurrency} ÷ runs/s at 1, {name}": round(
                    statistics.median(
                        m["per_s"] / one["per_s"]
                        for m, one in zip(results[many_key], results[f"run {name}"], strict=True)
                        if one["per_s"] > 0
                    ),
                    3,
                )
                for name in clients
            }
        return table
    finally:
        service.stop()
        if cluster is not None:
            cluster.stop()


def _print(store: str, table: dict[str, Any]) -> None:
    cols = (
        "wall_ms",
        "kneo_serv_idle_ms",
        "generator_cpu_ms",
        "kneo_serv_cpu_ms",
        "postgres_cpu_ms",
        "run_queue_ms",
        "rest_ms",
        "per_s",
    )
    print(f"\n{store}: ms per request at concurrency 1 (median of rounds)")
    print(f"{'':22}" + "".join(f"{c.replace('_ms', '').replace('_cpu', ' CPU'):>16}" for c in cols))
    for key, row in table.items():
        if key != "shape":
            print(f"{key:22}" + "".join(f"{row[c]:>16.2f}" for c in cols))
    for key, value in table.get("shape", {}).items():
        print(f"{key}: {value:.2f} (median of rounds)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--runs", type=int, default=100, help="requests per block (one client, one path)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8, help="also FastHttpSession runs at this concurrency")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    stores = [s for s in args.stores.split(",") if s]
    clients = [c for c in args.clients.split(",") if c]
    bad = [c for c in clients if c not in CLIENTS] + [s for s in stores if s not in ("sqlite", "postgres")]
    if bad or not 1 <= args.runs <= MAX_RUNS or not 1 <= args.rounds <= 20 or not 1 <= args.concurrency <= 64:
        print(f"kneo_c1_gap: bad --stores/--clients/--runs/--rounds ({', '.join(bad) or 'range'})", file=sys.stderr)
        return 2
    load_before = os.getloadavg()
    report: dict[str, Any] = {
        "runs_per_block": args.runs,
        "rounds": args.rounds,
        "cores": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in load_before],
        "id": uuid.uuid4().hex[:8],
        "stores": {},
    }
    for store in stores:
        report["stores"][store] = measure_store(store, clients, args.runs, args.rounds, args.concurrency)
        _print(store, report["stores"][store])
    report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    print(f"\nload average before {report['load_average_before']}, after {report['load_average_after']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json(args.out, report)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
