"""``swarmgauge demo``: the main job, end to end, against an embedded target on loopback.

It starts the HTTP delay simulator (``targets/sim_http.py``, delays uniform 5-15 ms), runs a headless step ramp of
1, 4 and 16 users through every swarmgauge listener into a run directory with Locust's CSVs, renders the report,
stops the target and prints where the results are. (The Mark-over-QUIC read ramp takes this place once the
reference Mark server lands; see the README.)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
READY_TIMEOUT_S = 30.0


def start_target() -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "targets.sim_http", "--port", "0", "--delay", "uniform:5:15", "--max-seconds", "600"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if line.startswith("listening on "):
            return process, line.split()[-1]
        if not line and process.poll() is not None:
            break
    process.kill()
    raise SystemExit("swarmgauge demo: the embedded target did not start")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="swarmgauge demo", description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", default="runs/demo", help="where the results go (default runs/demo)")
    parser.add_argument("--steps", default="1,4,16")
    parser.add_argument("--step-time", default="4")
    args = parser.parse_args(argv)
    run_dir = Path(args.run_dir).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    target, url = start_target()
    print(f"embedded target: {url} (targets/sim_http.py, pid {target.pid})", flush=True)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "locust", "-f", str(ROOT / "locustfiles" / "http_ramp.py"), "--headless",
             "--host", url, "--steps", args.steps, "--step-time", args.step_time,
             "--run-dir", str(run_dir), "--csv", str(run_dir / "locust"), "--only-summary"],
            cwd=ROOT, timeout=600,
        )
    finally:
        target.terminate()
        target.wait(timeout=10)
    print(f"results: {run_dir} (steps.csv, run.json, slo.json, locust_*.csv, report.md, report.html)")
    return result.returncode
