"""The load generator's own memory over a long run: locust's RSS while users read the embedded Mark target.

Issue 21 point 4: a generator that keeps per-second data for the whole run grows without bound. This runs
``locust -f locustfiles/demarkus_reads.py FetchUser --headless`` for ``--minutes`` (60 by default) at ``--users``
users, samples the locust process's RSS (its own, not the embedded target child's) every ``--interval`` seconds,
and prints the growth from the end of the first minute to the end. The figures go to JSON.

    python -m benchmarks.generator_soak --minutes 30
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from swarmgauge.files import write_json
from swarmgauge.targets.launch import REPO_ROOT, child_env, stop_processes

DEFAULT_OUT = REPO_ROOT / "benchmarks" / "results" / "generator_soak.json"
LOCUSTFILE = REPO_ROOT / "locustfiles" / "demarkus_reads.py"
SETTLE_SECONDS = 60.0  # growth is measured after the first minute: imports, pools and caches fill in that time
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
    """RSS at the end of the first minute, at the end, and the growth between them in MiB and percent."""
    after = [rss for at, rss in samples if at >= settle]
    if len(after) < 2:
        return {"rss_after_settle_mib": None, "rss_end_mib": None, "growth_mib": None, "growth_percent": None}
    start, end = after[0], after[-1]
    return {
        "rss_after_settle_mib": round(start / 2**20, 2),
        "rss_end_mib": round(end / 2**20, 2),
        "rss_max_mib": round(max(after) / 2**20, 2),
        "growth_mib": round((end - start) / 2**20, 2),
        "growth_percent": round(100.0 * (end - start) / start, 2),
    }


def run(minutes: float, users: int, interval: float) -> dict:
    seconds = minutes * 60.0
    with tempfile.TemporaryDirectory(prefix="generator-soak-") as run_dir:
        command = [
            sys.executable,
            "-m",
            "locust",
            "-f",
            str(LOCUSTFILE),
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
            command, cwd=str(REPO_ROOT), env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        try:
            samples = sample_rss(process.pid, seconds, interval)
            _out, stderr = process.communicate(timeout=END_GRACE_SECONDS)
        finally:
            stop_processes([process], grace=15)
        steps_csv = (Path(run_dir) / "steps.csv").read_text() if (Path(run_dir) / "steps.csv").is_file() else ""
    return {
        "minutes": minutes,
        "users": users,
        "interval_s": interval,
        "exit_code": process.returncode,
        "requests": _aggregated_requests(steps_csv),
        "stderr_tail": stderr[-1500:] if process.returncode not in (0, None) else "",
        **growth(samples, SETTLE_SECONDS),
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
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    if not (args.minutes > 0 and args.users > 0 and args.interval > 0):
        parser.error("--minutes, --users and --interval must be positive")
    result = run(args.minutes, args.users, args.interval)
    path = write_json(args.out, result)
    print(
        f"generator soak: {args.users} users, {args.minutes:g} min, {result['requests']} requests, "
        f"exit {result['exit_code']}"
    )
    print(
        f"locust RSS after the first minute {result['rss_after_settle_mib']} MiB, at the end "
        f"{result['rss_end_mib']} MiB (max {result.get('rss_max_mib')}): growth {result['growth_mib']} MiB = "
        f"{result['growth_percent']} %"
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
