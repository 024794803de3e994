"""The kneo-serv capacity page's sweep as HTTP load: sync at 1, 4, 8, 16 users per store, then the queue row.

``python -m benchmarks.kneo_sweep [--stores sqlite,postgres] [--users 1,4,8,16] [--pg-processes 1,2]
[--sqlite-processes 1,2] [--step-time 15s] [--out DIR]``

Each store gets a fresh real kneo-serv (PostgreSQL on a throwaway cluster) and one headless Locust step ramp of
``locustfiles/kneo_dispatch.py`` into ``DIR/<store>[-xN]-sync``. PostgreSQL is swept once per ``--pg-processes``
count: N service processes on the one database, the users spread over them round robin (the page's "run multiple
service processes against shared PostgreSQL"), so where one process's CPU is the ceiling the store's own limit
shows; SQLite likewise once per ``--sqlite-processes`` count, N processes on its one file (each its own connection,
one writer at a time), as a user scaling kneo-serv on SQLite would run it. The queue row is the page's queue mode: ``--queued-users`` submitters dispatch a ``--queued-batch`` of runs
and the service drains it; its runs/s is the drain rate and its latencies the per-run queue wait (save to
terminal), read from the store. The table is printed in the page's layout (with p90 where the page has p95:
``steps.csv`` carries p50/p90/p99; the queue row gives p95) beside the page's figure, with the service's peak RSS
per step (all processes) from the resource sampler, and written to ``DIR/kneo-sweep.json``. Every run is reconciled
against its store. Figures only: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from swarmgauge.files import write_json
from swarmgauge.run_folders import resolve

ROOT = Path(__file__).resolve().parents[1]
LOCUSTFILE = "locustfiles/kneo_dispatch.py"
# The page's reference rows (echo agent, zero provider delay, Threadripper 3975WX): runs/s by (store, mode, users).
PAGE_RUNS_PER_S = {
    ("sqlite", "sync", 1): 51,
    ("sqlite", "sync", 4): 51,
    ("sqlite", "sync", 8): 50,
    ("sqlite", "sync", 16): 51,
    ("postgres", "sync", 1): 79,
    ("postgres", "sync", 8): 77,
    ("postgres", "sync", 16): 76,
    ("postgres", "sync", 32): 75,
    ("postgres", "queue", 8): 44,
}
HEADER = (
    "Store / mode",
    "Concurrency",
    "Throughput (runs/s)",
    "p50",
    "p90",
    "p99",
    "Peak RSS",
    "service CPU",
    "page runs/s",
    "reconciled",
)


def _latency(ms: Any) -> str:
    if ms in (None, ""):
        return ""
    value = float(ms)
    return f"{value:.1f} ms" if value < 100 else f"{value:.0f} ms"


def _read_csv(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        return []
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def peak_rss_by_step(resources: list[dict[str, str]]) -> dict[int, float]:
    """Per step: the largest sum of the service processes' RSS in one sampling round, in MiB."""
    rounds: dict[tuple[int, int], float] = {}
    for row in resources:
        if row["source"].startswith("psutil:") and row["metric"] == "rss_bytes" and row["step"] != "":
            key = (int(float(row["step"])), int(row["round"]))
            rounds[key] = rounds.get(key, 0.0) + float(row["value"])
    peaks: dict[int, float] = {}
    for (step, _), value in rounds.items():
        peaks[step] = max(peaks.get(step, 0.0), value / 2**20)
    return peaks


def batch_row(run_dir: Path, store: str, users: int, processes: int = 1) -> list[dict[str, Any]]:
    """The queue row: the store's drain figures of the batch run (``kneo.json`` ``queue_drain``)."""
    run_dir = resolve(run_dir)
    kneo = json.loads((run_dir / "kneo.json").read_text()) if (run_dir / "kneo.json").is_file() else {}
    drain = kneo.get("queue_drain") or {}
    resources = _read_csv(run_dir / "resources.csv")
    peaks, cpu = peak_rss_by_step(resources), service_cpu_by_step(resources)
    submits = [s for s in _read_csv(run_dir / "steps.csv") if s["request_type"] == "run submit"]
    return [
        {
            "store": store,
            "mode": "batch",
            "users": users,
            "processes": processes,
            "requests": int(drain.get("runs") or 0),
            "failures": sum(int(s["failures"]) for s in submits),
            "runs_per_s": float(drain.get("runs_per_s") or 0.0),
            "p50_ms": drain.get("wait_p50_ms"),
            "p90_ms": None,
            "p95_ms": drain.get("wait_p95_ms"),
            "p99_ms": drain.get("wait_p99_ms"),
            "drain_s": drain.get("drain_s"),
            "unfinished": drain.get("unfinished"),
            "peak_rss_mib": max(peaks.values()) if peaks else None,
            "service_cpu_percent": max(cpu.values()) if cpu else None,
            "generator_cpu_max": 0.0,
            "generator_bound": False,
            "page_runs_per_s": PAGE_RUNS_PER_S.get((store, "queue", users)),
            "reconciled": kneo.get("mismatches") == 0,
            "run_dir": str(run_dir),
        }
    ]


def service_cpu_by_step(resources: list[dict[str, str]]) -> dict[int, float]:
    """Per step: the busiest service process's mean CPU, in % of one core (where one process is the ceiling)."""
    samples: dict[tuple[int, str], list[float]] = {}
    for row in resources:
        if row["source"].startswith("psutil:") and row["metric"] == "cpu_percent" and row["step"] != "":
            samples.setdefault((int(float(row["step"])), row["source"]), []).append(float(row["value"]))
    busiest: dict[int, float] = {}
    for (step, _), values in samples.items():
        busiest[step] = max(busiest.get(step, 0.0), sum(values) / len(values))
    return busiest


def rows_from_run(run_dir: Path, store: str, mode: str, processes: int = 1) -> list[dict[str, Any]]:
    """One table row per step of the run: the end-to-end request type (``run sync`` or ``run queued``)."""
    run_dir = resolve(run_dir)
    request_type = "run sync" if mode == "sync" else "run queued"
    resources = _read_csv(run_dir / "resources.csv")
    peaks, cpu = peak_rss_by_step(resources), service_cpu_by_step(resources)
    kneo = json.loads((run_dir / "kneo.json").read_text()) if (run_dir / "kneo.json").is_file() else {}
    rows = []
    for step in _read_csv(run_dir / "steps.csv"):
        if step["request_type"] != request_type:
            continue
        users = int(float(step["users"]))
        rows.append(
            {
                "store": store,
                "mode": mode,
                "users": users,
                "processes": processes,
                "requests": int(step["requests"]),
                "failures": int(step["failures"]),
                "runs_per_s": float(step["rps"] or 0.0),
                "p50_ms": float(step["p50_ms"] or 0.0),
                "p90_ms": float(step["p90_ms"] or 0.0),
                "p99_ms": float(step["p99_ms"] or 0.0),
                "peak_rss_mib": peaks.get(int(step["step"])),
                "service_cpu_percent": cpu.get(int(step["step"])),
                "generator_cpu_max": float(step.get("generator_cpu_max") or 0.0),
                "generator_bound": step.get("generator_bound") == "True",
                "page_runs_per_s": PAGE_RUNS_PER_S.get((store, "queue" if mode == "queued" else mode, users))
                if processes == 1
                else None,
                "reconciled": kneo.get("mismatches") == 0,
                "run_dir": str(run_dir),
            }
        )
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    """The page's Markdown table layout, one line per store, mode and concurrency."""
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for row in rows:
        rss = "" if row["peak_rss_mib"] is None else f"{row['peak_rss_mib']:.0f} MiB"
        mode = "queue" if row["mode"] in ("queued", "batch") else row["mode"]
        store = row["store"] if row.get("processes", 1) == 1 else f"{row['store']} x{row['processes']} processes"
        p90 = _latency(row["p90_ms"]) if row.get("p90_ms") is not None else f"{_latency(row.get('p95_ms'))} (p95)"
        cpu = row.get("service_cpu_percent")
        cells = [
            f"{store} / {mode}",
            str(row["users"]),
            f"{row['runs_per_s']:.1f}",
            _latency(row["p50_ms"]),
            p90,
            _latency(row["p99_ms"]),
            rss,
            "" if cpu is None else f"{cpu:.0f} %",
            "" if row["page_runs_per_s"] is None else str(row["page_runs_per_s"]),
            "yes" if row["reconciled"] else "NO",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run_point(
    service: Any,
    run_dir: Path,
    mode: str,
    users: list[int],
    step_time: str,
    warmup: str,
    timeout: float,
    extra: list[str] | None = None,
) -> int:
    """One headless Locust step ramp against ``service`` (all its processes); returns Locust's exit code."""
    samples = [arg for spec in service.gauge_sources() if spec.startswith("psutil:") for arg in ("--sample", spec)]
    cmd = [
        str(Path(sys.executable).parent / "locust"),
        "-f",
        LOCUSTFILE,
        "--headless",
        "--only-summary",
        "--host",
        service.url,
        "--kneo-hosts",
        ",".join(service.urls[1:]),
        "--kneo-store",
        service.store_locator,
        "--kneo-mode",
        mode,
        "--steps",
        ",".join(map(str, users)),
        "--step-time",
        step_time,
        "--warmup",
        warmup,
        "--sample-interval",
        "1",
        "--run-dir",
        str(run_dir),
        *samples,
        *(extra or []),
    ]
    with open(run_dir.parent / f"{run_dir.name}.log", "w") as log:
        return subprocess.run(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, timeout=timeout).returncode


def sweep_store(store: str, args: argparse.Namespace, out: Path) -> list[dict[str, Any]]:
    from swarmgauge.targets.postgres import PostgresCluster

    cluster = PostgresCluster().start() if store == "postgres" else None
    rows: list[dict[str, Any]] = []
    try:
        counts = args.pg_processes if store == "postgres" else args.sqlite_processes
        plan = [("sync", args.users, args.step_time, n) for n in counts]
        if store in args.queued_stores:
            plan.append(("batch", [args.queued_users], args.queued_time, 1))
        for mode, users, step_time, processes in plan:
            rows += _sweep_point(store, cluster.dsn if cluster else None, args, out, mode, users, step_time, processes)
    finally:
        if cluster is not None:
            cluster.stop()
    return rows


def _sweep_point(
    store: str,
    dsn: str | None,
    args: argparse.Namespace,
    out: Path,
    mode: str,
    users: list[int],
    step_time: str,
    processes: int,
) -> list[dict[str, Any]]:
    """One fresh service (``processes`` of it on the store) and one Locust run against it."""
    from swarmgauge.targets.kneo import KneoService

    with KneoService(store=store, dsn=dsn, processes=processes, worker_concurrency=args.worker_concurrency) as service:
        run_dir = out / (f"{store}-{mode}" if processes == 1 else f"{store}-x{processes}-{mode}")
        extra = (
            ["--kneo-batch", str(args.queued_batch), "--kneo-drain-timeout", str(args.drain_timeout)]
            if mode == "batch"
            else []
        )
        limit = len(users) * (_seconds(step_time) + 30) + 120 + (args.drain_timeout if mode == "batch" else 0)
        code = run_point(service, run_dir, mode, users, step_time, args.warmup, limit, extra)
        found = (
            batch_row(run_dir, store, users[0]) if mode == "batch" else rows_from_run(run_dir, store, mode, processes)
        )
    for row in found:
        row["locust_exit_code"] = code
    print(f"{store} x{processes} / {mode}: Locust exit {code}, {len(found)} row(s) in {run_dir}", file=sys.stderr)
    return found


def _seconds(value: str) -> float:
    from swarmgauge.plans.plan import parse_duration

    return parse_duration(value, "--step-time")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.kneo_sweep", description=__doc__.splitlines()[0])
    parser.add_argument("--stores", default="sqlite,postgres", help="stores to sweep, in order")
    parser.add_argument("--users", default="1,4,8,16", help="sync concurrency steps")
    parser.add_argument("--step-time", default="15s", help="hold per step")
    parser.add_argument("--warmup", default="2s", help="start of each step left out")
    parser.add_argument("--queued-stores", default="postgres", help="stores that also get the queue row ('' none)")
    parser.add_argument("--queued-users", type=int, default=8, help="dispatch fan-out of the queue row")
    parser.add_argument("--queued-batch", type=int, default=500, help="runs the queue row dispatches (page: 500)")
    parser.add_argument("--queued-time", default="30s", help="time the queue row's users have to dispatch it")
    parser.add_argument("--drain-timeout", type=float, default=120.0, help="seconds the batch may take to drain")
    parser.add_argument("--pg-processes", default="1,2", help="PostgreSQL sync sweeps, one per process count")
    parser.add_argument("--sqlite-processes", default="1", help="SQLite sync sweeps, one per process count")
    parser.add_argument("--worker-concurrency", type=int, default=1, help="KNEO_SERV_WORKER_CONCURRENCY")
    parser.add_argument("--out", default="runs/kneo-sweep", help="directory for run directories and the JSON")
    return parser


def _counts(text: str) -> list[int]:
    """A comma list of process counts, empty when any is not a whole number of at least 1."""
    try:
        counts = [int(n) for n in str(text).split(",") if n.strip()]
    except ValueError:
        return []
    return counts if counts and min(counts) >= 1 else []


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    args.users = [int(u) for u in str(args.users).split(",") if u.strip()]
    args.queued_stores = [s for s in str(args.queued_stores).split(",") if s.strip()]
    args.pg_processes, args.sqlite_processes = _counts(args.pg_processes), _counts(args.sqlite_processes)
    if not args.pg_processes or not args.sqlite_processes or args.queued_batch < 1:
        print(
            "kneo_sweep: --pg-processes and --sqlite-processes take counts of 1 or more, --queued-batch 1 or more",
            file=sys.stderr,
        )
        return 2
    stores = [s for s in str(args.stores).split(",") if s.strip()]
    if not args.users or any(s not in ("sqlite", "postgres") for s in stores):
        print("kneo_sweep: --stores takes sqlite and/or postgres, --users a list of counts", file=sys.stderr)
        return 2
    from swarmgauge.targets.kneo import NoSuitablePython, find_python

    try:
        find_python()
    except NoSuitablePython as exc:
        print(f"kneo_sweep: skipped: {exc}", file=sys.stderr)
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    rows = [row for store in stores for row in sweep_store(store, args, out)]
    table = format_table(rows)
    print(table)
    doc = {
        "started_at": started,
        "ended_at": time.time(),
        "settings": {
            "stores": stores,
            "users": args.users,
            "step_time": args.step_time,
            "warmup": args.warmup,
            "queued_stores": args.queued_stores,
            "queued_users": args.queued_users,
            "queued_time": args.queued_time,
            "queued_batch": args.queued_batch,
            "pg_processes": args.pg_processes,
            "sqlite_processes": args.sqlite_processes,
            "worker_concurrency": args.worker_concurrency,
        },
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "rows": rows,
        "table": table,
    }
    print(f"written {write_json(out / 'kneo-sweep.json', doc)}", file=sys.stderr)
    return 0 if rows and all(row["reconciled"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
