"""``swarmgauge demo``: the main job, end to end: a headless Mark read ramp over QUIC against the embedded default.

It runs ``locustfiles/demarkus_reads.py`` (``FetchUser``) with no ``--host``, so the locustfile starts the reference
Mark server on a free loopback port, seeded with the deterministic corpus, and stops it at the end. The ramp goes
through every swarmgauge listener into a run directory with Locust's ``--csv`` files; the report is rendered from it
and the command prints where the results are. The ramp is the demarkus reads plan at the demo's steps, so the report
shows the reference page's figures beside the measured rows.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCUSTFILE = ROOT / "locustfiles" / "demarkus_reads.py"
PLAN = ROOT / "shapes" / "plans" / "demarkus-reads.yaml"


def demo_plan(steps: str, step_time: str, warmup: str) -> dict:
    """The demarkus reads plan at the demo's steps and times, keeping its SLOs and the page's reference figures."""
    import yaml

    base = yaml.safe_load(PLAN.read_text(encoding="utf-8"))
    users = [int(part) for part in steps.split(",") if part.strip()]
    return {
        **base,
        "name": "demo",
        "description": f"swarmgauge demo: {base['description']}",
        "steps": users,
        "step_time": f"{float(step_time):g}s",
        "warmup": f"{float(warmup):g}s",
    }


def main(argv: list[str]) -> int:
    import tempfile

    import yaml

    parser = argparse.ArgumentParser(prog="swarmgauge demo", description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", default="runs/demo", help="where the results go (default runs/demo)")
    parser.add_argument("--steps", default="1,4,16", help="users per step (default 1,4,16)")
    parser.add_argument("--step-time", default="10", help="seconds per step (default 10)")
    parser.add_argument("--warmup", default="2", help="seconds at the start of each step left out of its statistics")
    args = parser.parse_args(argv)
    run_dir = Path(args.run_dir).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="swarmgauge-demo-") as scratch:
        plan = Path(scratch) / "demo.yaml"
        plan.write_text(yaml.safe_dump(demo_plan(args.steps, args.step_time, args.warmup), sort_keys=False))
        command = [
            sys.executable,
            "-m",
            "locust",
            "-f",
            str(LOCUSTFILE),
            "FetchUser",
            "--headless",
            "--plan",
            str(plan),
            "--run-dir",
            str(run_dir),
            "--csv",
            str(run_dir / "locust"),
            "--only-summary",
        ]
        print("running:", " ".join(command[2:]), flush=True)
        result = subprocess.run(command, cwd=ROOT, timeout=1800)
    print(f"results: {run_dir} (steps.csv, run.json, slo.json, locust_*.csv, report.md, report.html)")
    return result.returncode
