"""The kind page's read ramp (1, 4, 16, 64, 256 users) on the Mark stand-in's bottleneck simulation, shape beside page.

``python -m benchmarks.reads_ramp [--step-time 60s] [--warmup 5s] [--embedded-args "..."] [--out DIR]``

One headless run of ``locustfiles/demarkus_reads.py`` with the stages of ``swarmgauge/plans/demarkus-reads.yaml`` (given
as options, so a shorter ``--step-time`` can be tried) and the embedded server's pacing (``--read-delay-ms 10 --reads-stat-head --backend-rps 160``). Per step it prints req/s,
p50, p99, the measured p99 / p50 beside the page's (the page's latency *shape*, which a loaded host cannot change
the way it changes absolute figures), the step's in-step timeline p99 (the median of its per-interval p99, first and
last interval left out: what the step's own load gives, free of anything at its edges), the generator's CPU and
stall flags, and the machine's load average before and after, and writes ``DIR/reads-ramp.json``. Figures only.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from swarmgauge.core.numbers import number
from swarmgauge.files import write_json
from swarmgauge.run_folders import resolve

ROOT = Path(__file__).resolve().parents[1]
EMBEDDED_ARGS = "--read-delay-ms 10 --reads-stat-head --backend-rps 160"
# The page's Reads table (QUIC FETCH, pooled connections): users -> (req/s, p50 ms, p99 ms).
PAGE = {1: (53, 20.0, 26.0), 4: (160, 21.0, 45.0), 16: (159, 100.0, 166.0), 64: (158, 423.0, 486.0)}
PAGE[256] = (151, 1770.0, 1790.0)
SHAPE_TOLERANCE = 0.15  # the must-show: each step's p99 / p50 within 15 % of the page's


def in_step_p99(timeline: list[dict[str, str]], step: str) -> float | None:
    """Median per-interval p99 of one step, its first and last interval (ramp, partial bucket) left out."""
    values = [number(row["p99_ms"]) for row in timeline if row["step"] == step]
    inner = [v for v in values[1:-1] if v is not None]
    return statistics.median(inner) if inner else None


def step_table(run_dir: Path) -> list[dict[str, Any]]:
    folder = resolve(run_dir)
    with open(folder / "steps.csv", newline="") as handle:
        steps = [r for r in csv.DictReader(handle) if r["request_type"] == "FETCH"]
    with open(folder / "timeline.csv", newline="") as handle:
        timeline = list(csv.DictReader(handle))
    rows = []
    for row in steps:
        users = int(float(row["users"]))
        p50, p99 = number(row["p50_ms"]), number(row["p99_ms"])
        page = PAGE.get(users)
        ratio = p99 / p50 if p50 and p99 else None
        page_ratio = page[2] / page[1] if page else None
        rows.append(
            {
                "users": users,
                "rps": number(row["rps"]),
                "p50_ms": p50,
                "p99_ms": p99,
                "p99_over_p50": ratio,
                "page": page,
                "page_p99_over_p50": page_ratio,
                "shape_within_15pct": (
                    abs(ratio / page_ratio - 1.0) <= SHAPE_TOLERANCE if ratio and page_ratio else None
                ),
                "in_step_p99_ms": in_step_p99(timeline, row["step"]),
                "generator_cpu_max": number(row.get("generator_cpu_max")),
                "generator_stall_ms": number(row.get("generator_stall_ms")),
                "stalled_requests": int(number(row.get("stalled_requests")) or 0),
                "generator_stalled": row.get("generator_stalled") == "True",
            }
        )
    return rows


def _cell(value: float | None, unit: str = " ms", digits: int = 0) -> str:
    return "-" if value is None else f"{value:.{digits}f}{unit}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.reads_ramp", description=__doc__.splitlines()[0])
    parser.add_argument("--step-time", default="60s", help="hold per step (the plan's 60s)")
    parser.add_argument("--warmup", default="5s", help="start of each step left out (the plan's 5s)")
    parser.add_argument("--steps", default="1,4,16,64,256")
    parser.add_argument("--embedded-args", default=EMBEDDED_ARGS, help="the embedded server's simulation knobs")
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds the run may take")
    parser.add_argument("--out", default="runs/reads-ramp")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "locust", "-f", "locustfiles/demarkus_reads.py", "--headless", "--only-summary"]
    # the demarkus-reads plan's stages as options (a --plan file would win over them): FetchUser, steps, hold, warm-up
    cmd += ["FetchUser", "--steps", args.steps, "--step-time", args.step_time, "--warmup", args.warmup]
    cmd += ["--mark-embedded-args", args.embedded_args, "--run-dir", str(out / "run")]
    load_before = os.getloadavg()
    started = time.time()
    with open(out / "run.log", "w") as log:
        code = subprocess.run(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, timeout=args.timeout).returncode
    load_after = os.getloadavg()
    rows = step_table(out / "run")
    print(f"load average (1, 5, 15 min) on {os.cpu_count()} cores: before {load_before}, after {load_after}")
    print("| Users | req/s | p50 | p99 | p99/p50 | page p99/p50 | shape ±15 % | in-step p99 | gen CPU | stall |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        stall = (
            f"{_cell(row['generator_stall_ms'])}, {row['stalled_requests']} req"
            + (" (stalled)" if row["generator_stalled"] else "")
            if row["generator_stall_ms"]
            else "-"
        )
        print(
            f"| {row['users']} | {_cell(row['rps'], '', 1)} | {_cell(row['p50_ms'])} | {_cell(row['p99_ms'])} | "
            f"{_cell(row['p99_over_p50'], '', 2)} | {_cell(row['page_p99_over_p50'], '', 2)} | "
            f"{'yes' if row['shape_within_15pct'] else 'no'} | {_cell(row['in_step_p99_ms'])} | "
            f"{_cell(row['generator_cpu_max'], ' %')} | {stall} |"
        )
    doc = {
        "settings": vars(args),
        "command": cmd,
        "locust_exit_code": code,
        "seconds": time.time() - started,
        "load_average_before": load_before,
        "load_average_after": load_after,
        "cores": os.cpu_count(),
        "rows": rows,
    }
    print(f"written {write_json(out / 'reads-ramp.json', doc)}")
    return 0 if code == 0 and rows else 1


if __name__ == "__main__":
    sys.exit(main())
