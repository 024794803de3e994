"""The kneo-serv capacity page's sweep as HTTP load: sync at 1, 4, 8, 16 users per store, then the queue row.

``python -m benchmarks.kneo_sweep [--stores sqlite,postgres] [--users 1,4,8,16] [--step-time 15s] [--out DIR]``

Each store gets a fresh real kneo-serv (PostgreSQL on a throwaway cluster) and one headless Locust step ramp of
``locustfiles/kneo_dispatch.py`` into ``DIR/<store>-sync``; the queue row is a ``--kneo-mode queued`` run. The
table is printed in the page's layout (with p90 where the page has p95: ``steps.csv`` carries p50/p90/p99) beside
the page's figure, with the service's peak RSS per step from the resource sampler, and written to
``DIR/kneo-sweep.json``. Every run is reconciled against its store. Figures only: nothing here asserts on time.
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

ROOT = Path(__file__).resolve().parents[1]
LOCUSTFILE = "locustfiles/kneo_dispatch.py"
# The page's reference rows (echo agent, zero provider delay, Threadripper 3975WX): runs/s by (store, mode, users).
PAGE_RUNS_PER_S = {("sqlite", "sync", 1): 51, ("sqlite", "sync", 4): 51, ("sqlite", "sync", 8): 50,
                   ("sqlite", "sync", 16): 51, ("postgres", "sync", 1): 79, ("postgres", "sync", 8): 77,
                   ("postgres", "sync", 16): 76, ("postgres", "sync", 32): 75, ("postgres", "queue", 8): 44}
HEADER = ("Store / mode", "Concurrency", "Throughput (runs/s)", "p50", "p90", "p99", "Peak RSS", "page runs/s",
          "reconciled")


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


def rows_from_run(run_dir: Path, store: str, mode: str) -> list[dict[str, Any]]:
    """One table row per step of the run: the end-to-end request type (``run sync`` or ``run queued``)."""
    from swarmgauge.run_folders import resolve

    run_dir = resolve(run_dir)
    request_type = "run sync" if mode == "sync" else "run queued"
    peaks = peak_rss_by_step(_read_csv(run_dir / "resources.csv"))
    kneo = json.loads((run_dir / "kneo.json").read_text()) if (run_dir / "kneo.json").is_file() else {}
    rows = []
    for step in _read_csv(run_dir / "steps.csv"):
        if step["request_type"] != request_type:
            continue
        users = int(float(step["users"]))
        rows.append({
            "store": store, "mode": mode, "users": users, "requests": int(step["requests"]),
            "failures": int(step["failures"]), "runs_per_s": float(step["rps"] or 0.0),
            "p50_ms": float(step["p50_ms"] or 0.0), "p90_ms": float(step["p90_ms"] or 0.0),
            "p99_ms": float(step["p99_ms"] or 0.0), "peak_rss_mib": peaks.get(int(step["step"])),
            "generator_cpu_max": float(step.get("generator_cpu_max") or 0.0),
            "generator_bound": step.get("generator_bound") == "True",
            "page_runs_per_s": PAGE_RUNS_PER_S.get((store, "queue" if mode == "queued" else mode, users)),
            "reconciled": kneo.get("mismatches") == 0, "run_dir": str(run_dir)})
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    """The page's Markdown table layout, one line per store, mode and concurrency."""
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for row in rows:
        rss = "" if row["peak_rss_mib"] is None else f"{row['peak_rss_mib']:.0f} MiB"
        mode = "queue" if row["mode"] == "queued" else row["mode"]
        cells = [f"{row['store']} / {mode}", str(row["users"]), f"{row['runs_per_s']:.1f}",
                 _latency(row["p50_ms"]), _latency(row["p90_ms"]), _latency(row["p99_ms"]), rss,
                 "" if row["page_runs_per_s"] is None else str(row["page_runs_per_s"]),
                 "yes" if row["reconciled"] else "NO"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run_point(service: Any, run_dir: Path, mode: str, users: list[int], step_time: str, warmup: str,
              timeout: float) -> int:
    """One headless Locust step ramp against ``service``; returns Locust's exit code."""
    samples = [arg for spec in service.gauge_sources() if spec.startswith("psutil:") for arg in ("--sample", spec)]
    cmd = [str(Path(sys.executable).parent / "locust"), "-f", LOCUSTFILE, "--headless", "--only-summary",
           "--host", service.url, "--kneo-store", service.store_locator, "--kneo-mode", mode,
           "--steps", ",".join(map(str, users)), "--step-time", step_time, "--warmup", warmup,
           "--sample-interval", "1", "--run-dir", str(run_dir), *samples]
    with open(run_dir.parent / f"{run_dir.name}.log", "w") as log:
        return subprocess.run(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, timeout=timeout).returncode


def sweep_store(store: str, args: argparse.Namespace, out: Path) -> list[dict[str, Any]]:
    from swarmgauge.targets.kneo import KneoService
    from swarmgauge.targets.postgres import PostgresCluster

    cluster = PostgresCluster().start() if store == "postgres" else None
    rows: list[dict[str, Any]] = []
    try:
        plan = [("sync", args.users, args.step_time)]
        if store in args.queued_stores:
            plan.append(("queued", [args.queued_users], args.queued_time))
        for mode, users, step_time in plan:
            with KneoService(store=store, dsn=cluster.dsn if cluster else None,
                             worker_concurrency=args.worker_concurrency) as service:
                run_dir = out / f"{store}-{mode}"
                steps = len(users)
                limit = steps * (_seconds(step_time) + 30) + 120
                code = run_point(service, run_dir, mode, users, step_time, args.warmup, limit)
                found = rows_from_run(run_dir, store, mode)
                for row in found:
                    row["locust_exit_code"] = code
                rows += found
                print(f"{store} / {mode}: Locust exit {code}, {len(found)} step(s) in {run_dir}", file=sys.stderr)
    finally:
        if cluster is not None:
            cluster.stop()
    return rows


def _seconds(value: str) -> float:
    from swarmgauge.shapes.plan import parse_duration

    return parse_duration(value, "--step-time")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.kneo_sweep", description=__doc__.splitlines()[0])
    parser.add_argument("--stores", default="sqlite,postgres", help="stores to sweep, in order")
    parser.add_argument("--users", default="1,4,8,16", help="sync concurrency steps")
    parser.add_argument("--step-time", default="15s", help="hold per step")
    parser.add_argument("--warmup", default="2s", help="start of each step left out")
    parser.add_argument("--queued-stores", default="postgres", help="stores that also get the queue row ('' none)")
    parser.add_argument("--queued-users", type=int, default=8, help="concurrent submitters of the queue row")
    parser.add_argument("--queued-time", default="20s", help="length of the queue row")
    parser.add_argument("--worker-concurrency", type=int, default=1, help="KNEO_SERV_WORKER_CONCURRENCY")
    parser.add_argument("--out", default="runs/kneo-sweep", help="directory for run directories and the JSON")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    args.users = [int(u) for u in str(args.users).split(",") if u.strip()]
    args.queued_stores = [s for s in str(args.queued_stores).split(",") if s.strip()]
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
    doc = {"started_at": started, "ended_at": time.time(), "settings": {
        "stores": stores, "users": args.users, "step_time": args.step_time, "warmup": args.warmup,
        "queued_stores": args.queued_stores, "queued_users": args.queued_users, "queued_time": args.queued_time,
        "worker_concurrency": args.worker_concurrency},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "rows": rows, "table": table}
    print(f"written {write_json(out / 'kneo-sweep.json', doc)}", file=sys.stderr)
    return 0 if rows and all(row["reconciled"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
