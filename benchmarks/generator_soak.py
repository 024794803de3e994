"""The load generator's own memory over a long run: locust's RSS while users read the embedded Mark target.

Issue 21 point 4: a generator that keeps per-second data for the whole run grows without bound. This runs
``locust -f locustfiles/demarkus_reads.py FetchUser --headless`` for ``--minutes`` (60 by default) at ``--users``
users, samples the locust process's RSS (its own, not the embedded target child's) every ``--interval`` seconds,
and prints the growth from the end of the settle time (``--settle``, one minute by default: imports, pools and
caches fill in it) to the end, and the settle time's own growth beside it. The figures go to JSON.

Beside it, the growth after every pooled connection has filled its native stream state: qh3 keeps the last
1,024 finished streams of each connection (~83 KiB), so a generator grows by that much per user until each user has
made 1,024 requests and is flat from there. At 16 users that is the first seconds; at 1,000 users sharing ~1,600
requests a second it is ten minutes or more, past any one-minute settle. The run's ``timeline.csv`` says when the
requests reached ``users x 1024``; the figures from that sample on are ``after_stream_state_filled``.
``--tracemalloc`` adds ``benchmarks/soak_probe.py`` to the run: the top growths by file and line and by object type
after the settle time land in the JSON (tracing slows locust down, so use it to find growth, not to measure it).

    python -m benchmarks.generator_soak --minutes 30
    python -m benchmarks.generator_soak --minutes 5 --tracemalloc
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from benchmarks import soak_probe
from swarmgauge.files import write_json
from swarmgauge.quic.engine import QH3_FINISHED_STREAMS_KEPT
from swarmgauge.run_folders import resolve
from swarmgauge.targets.launch import child_env, stop_processes

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO_ROOT / "benchmarks" / "results" / "generator_soak.json"
LOCUSTFILE = REPO_ROOT / "locustfiles" / "demarkus_reads.py"
PROBE = REPO_ROOT / "benchmarks" / "soak_probe.py"
PROBE_TAIL_SECONDS = 15.0  # the probe's last snapshot is this long before the plan ends, while users still run
END_GRACE_SECONDS = 120.0


def sample_rss(pid: int, seconds: float, interval: float) -> list[tuple[float, int]]:
    """(seconds since start, RSS bytes) of ``pid`` every ``interval`` for ``seconds`` or until it exits."""
    process = psutil.Process(pid)
    began = time.monotonic()
    samples: list[tuple[float, int]] = []
    for _ in range(int(seconds / interval) + 2):
        try:
            samples.append((time.monotonic() - began, process.memory_info().rss))
        except psutil.NoSuchProcess:
            break
        if time.monotonic() - began >= seconds:
            break
        time.sleep(max(0.0, min(interval, seconds - (time.monotonic() - began))))
    return samples


def growth(samples: list[tuple[float, int]], settle: float) -> dict[str, float | None]:
    """RSS at the end of the settle time, at the end, and the growth between them in MiB and percent.

    The settle time's own growth (first sample to the end of settle) is reported beside it, never dropped.
    """
    after = [rss for at, rss in samples if at >= settle]
    if len(after) < 2:
        return {"rss_after_settle_mib": None, "rss_end_mib": None, "growth_mib": None, "growth_percent": None}
    start, end = after[0], after[-1]
    first = samples[0][1]
    return {
        "rss_first_sample_mib": round(first / 2**20, 2),
        "settle_growth_mib": round((start - first) / 2**20, 2),
        "rss_after_settle_mib": round(start / 2**20, 2),
        "rss_end_mib": round(end / 2**20, 2),
        "rss_max_mib": round(max(after) / 2**20, 2),
        "growth_mib": round((end - start) / 2**20, 2),
        "growth_percent": round(100.0 * (end - start) / start, 2),
    }


def cumulative_requests(timeline_csv: str, began_wall: float) -> list[tuple[float, int]]:
    """(seconds since ``began_wall``, requests so far) for each ``timeline.csv`` row, in time order."""
    import csv
    import io

    rows = sorted((float(row["time"]), int(row["requests"])) for row in csv.DictReader(io.StringIO(timeline_csv)))
    total, points = 0, []
    for at, requests in rows:
        total += requests
        points.append((round(at - began_wall, 1), total))
    return points


def filled_at(points: list[tuple[float, int]], requests_needed: int) -> float | None:
    """The first time the requests so far reached ``requests_needed``, None if they never did."""
    return next((at for at, total in points if total >= requests_needed), None)


def run(minutes: float, users: int, interval: float, settle: float = 60.0, trace: bool = False) -> dict:
    seconds = minutes * 60.0
    with tempfile.TemporaryDirectory(prefix="generator-soak-") as run_dir:
        probe_out = Path(run_dir) / "probe.json"
        extra = {}
        if trace:
            extra = {
                soak_probe.PROBE_PATH_ENV: str(probe_out),
                soak_probe.PROBE_START_ENV: str(settle),
                soak_probe.PROBE_END_ENV: str(max(settle, seconds - PROBE_TAIL_SECONDS)),
            }
        command = [
            sys.executable,
            "-m",
            "locust",
            "-f",
            f"{LOCUSTFILE},{PROBE}" if trace else str(LOCUSTFILE),
            "FetchUser",
            "--headless",
            "--only-summary",
            "--steps",
            str(users),
            "--step-time",
            f"{seconds:.0f}s",
            "--run-dir",
            run_dir,
        ]
        process = subprocess.Popen(
            command,
            cwd=str(REPO_ROOT),
            env=child_env(extra),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        began_wall = time.time()
        load_start = os.getloadavg()[0]
        try:
            samples = sample_rss(process.pid, seconds, interval)
            _out, stderr = process.communicate(timeout=END_GRACE_SECONDS)
        finally:
            stop_processes([process], grace=15)
        steps_path = resolve(run_dir) / "steps.csv"
        steps_csv = steps_path.read_text() if steps_path.is_file() else ""
        timeline_path = resolve(run_dir) / "timeline.csv"
        points = cumulative_requests(timeline_path.read_text(), began_wall) if timeline_path.is_file() else []
        probe = json.loads(probe_out.read_text()) if probe_out.is_file() else None
    filled = filled_at(points, users * QH3_FINISHED_STREAMS_KEPT)
    return {
        "minutes": minutes,
        "users": users,
        "interval_s": interval,
        "settle_s": settle,
        "load_average_start": round(load_start, 2),
        "load_average_end": round(os.getloadavg()[0], 2),
        "cpu_count": os.cpu_count(),
        "traced": trace,
        "probe": probe,
        "exit_code": process.returncode,
        "requests": _aggregated_requests(steps_csv),
        "stderr_tail": stderr[-1500:] if process.returncode not in (0, None) else "",
        **growth(samples, settle),
        "stream_state_requests": users * QH3_FINISHED_STREAMS_KEPT,
        "stream_state_filled_at_s": filled,
        "after_stream_state_filled": growth(samples, filled) if filled is not None else None,
        "requests_so_far": points[::10],
        "samples": [[round(at, 1), rss] for at, rss in samples],
    }


def _aggregated_requests(steps_csv: str) -> int | None:
    import csv
    import io

    rows = [row for row in csv.DictReader(io.StringIO(steps_csv)) if row.get("name") == "Aggregated"]
    return sum(int(row["requests"]) for row in rows) if rows else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--users", type=int, default=16)
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between RSS samples")
    parser.add_argument("--settle", type=float, default=1.0, help="minutes of warm-up before growth is measured")
    parser.add_argument("--tracemalloc", action="store_true", help="write the top growths after settling to the JSON")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    if not (args.minutes > 0 and args.users > 0 and args.interval > 0):
        parser.error("--minutes, --users and --interval must be positive")
    if not 0 <= args.settle < args.minutes:
        parser.error("--settle must be at least 0 and shorter than --minutes")
    result = run(args.minutes, args.users, args.interval, args.settle * 60.0, args.tracemalloc)
    path = write_json(args.out, result)
    print(
        f"generator soak: {args.users} users, {args.minutes:g} min, {result['requests']} requests, "
        f"exit {result['exit_code']}"
    )
    print(
        f"locust RSS at the first sample {result.get('rss_first_sample_mib')} MiB, after {args.settle:g} min of "
        f"settling {result['rss_after_settle_mib']} MiB (settle growth {result.get('settle_growth_mib')} MiB)"
    )
    print(
        f"locust RSS at the end {result['rss_end_mib']} MiB (max {result.get('rss_max_mib')}): growth after settling "
        f"{result['growth_mib']} MiB = {result['growth_percent']} %"
    )
    filled = result["after_stream_state_filled"]
    if filled is None:
        print(
            f"the connections' stream state never filled: {result['requests']} requests, "
            f"{result['stream_state_requests']} needed ({QH3_FINISHED_STREAMS_KEPT} per user)"
        )
    else:
        print(
            f"after the connections' stream state filled at {result['stream_state_filled_at_s']:.0f} s "
            f"({QH3_FINISHED_STREAMS_KEPT} requests per user): RSS {filled['rss_after_settle_mib']} -> "
            f"{filled['rss_end_mib']} MiB (max {filled['rss_max_mib']}), growth {filled['growth_mib']} MiB = "
            f"{filled['growth_percent']} %"
        )
    for row in (result["probe"] or {}).get("top_growths", [])[:10]:
        print(f"  traced growth {row['growth_kib']:>9} KiB  {row['count_growth']:>7} blocks  {row['site']}")
    print(
        f"machine load average {result['load_average_start']} at the start, {result['load_average_end']} at the end, "
        f"on {result['cpu_count']} cores"
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
