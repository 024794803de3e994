"""``swarmgauge demo``: the main job, end to end: a headless Mark read ramp over QUIC against the embedded default.

It runs ``locustfiles/demarkus_reads.py`` (``FetchUser``) with no ``--host``, so the locustfile starts the reference
Mark server on a free loopback port, seeded with the deterministic corpus, and stops it at the end. The ramp goes
through every swarmgauge listener into a run directory with Locust's ``--csv`` files; the report is rendered from it
and the command prints where the results are.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCUSTFILE = ROOT / "locustfiles" / "demarkus_reads.py"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="swarmgauge demo", description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", default="runs/demo", help="where the results go (default runs/demo)")
    parser.add_argument("--steps", default="1,4,16", help="users per step (default 1,4,16)")
    parser.add_argument("--step-time", default="5", help="seconds per step (default 5)")
    parser.add_argument("--warmup", default="1", help="seconds at the start of each step left out of its statistics")
    args = parser.parse_args(argv)
    run_dir = Path(args.run_dir).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "FetchUser", "--headless",
               "--steps", args.steps, "--step-time", args.step_time, "--warmup", args.warmup,
               "--run-dir", str(run_dir), "--csv", str(run_dir / "locust"), "--only-summary"]
    print("running:", " ".join(command[2:]), flush=True)
    result = subprocess.run(command, cwd=ROOT, timeout=1800)
    print(f"results: {run_dir} (steps.csv, run.json, slo.json, locust_*.csv, report.md, report.html)")
    return result.returncode
