"""How long a run that ends on an open-model step waits after that step: its tail ended once no ticket is left
(``shapes/base.py``) against the whole ``min(drop_after, 1 s)`` it always waited before.

Each round runs the MDK page's burst (200 users, 1,000 submits/s for 3 s, ``drop_after`` 1 s, as a demo fleet's last
two stages) on a fresh embedded stand-in, once each way, side by side: "full" adds a locustfile that says a ticket
is always left (``hooks.tickets_left``), which is the tail before the change. The tail is read from the run's log:
the burst stage's end (``steps.csv``) to the stop tick ("Shape test updating to 0 users"). Prints each run's tail,
its accepts and dropped tickets (the same on both sides when the tail only stopped waiting for nothing), the load
average, and writes the JSON. Figures only.

    python -m benchmarks.open_model_tail [--profile 10x1] [--rounds 3] [--out DIR]
"""

from __future__ import annotations

import argparse
import csv
import datetime
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from swarmgauge.files import write_json
from swarmgauge.run_folders import resolve

ROOT = Path(__file__).resolve().parents[1]
PLAN = """name: open-model-tail
kind: stages
stages:
  - {label: discover, users: 200, duration: 2s, user_classes: [MDKBurstUser]}
  - {label: action burst, rate: 1000, duration: 3s, max_users: 200, drop_after: 1s, user_classes: [MDKBurstUser]}
"""
FULL_TAIL = """from swarmgauge.core import hooks

hooks.tickets_left.implement(lambda _environment: True)  # the tail before: waited out whatever is left
"""
STOP_TICK = re.compile(r"^\[(\S+ \S+)\] .*Shape test updating to 0 users at 10000")


def run_once(mode: str, profile: str, directory: Path) -> dict[str, Any]:
    """One burst run; its tail (seconds from the burst's end to the stop tick), accepts and dropped tickets."""
    files = [str(ROOT / "locustfiles" / "mdk_fleet.py")] + ([str(directory / "full_tail.py")] if mode == "full" else [])
    run_dir = directory / f"{mode}-{len(list(directory.glob(mode + '-*')))}"
    log = run_dir.with_suffix(".log")
    command = [sys.executable, "-m", "locust", "-f", ",".join(files), "--headless", "--only-summary"]
    command += ["--plan", str(directory / "plan.yaml"), "--mdk-profile", profile, "--run-dir", str(run_dir)]
    with open(log, "w") as out:
        code = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, timeout=180, cwd=ROOT).returncode
    rows = list(csv.DictReader(open(resolve(run_dir) / "steps.csv", newline="")))
    burst = next(r for r in rows if r["label"] == "action burst" and r["name"] == "Aggregated")
    burst_end = float(burst["started_at"]) + float(burst["duration_s"])
    stop = next(m.group(1) for line in log.read_text().splitlines() if (m := STOP_TICK.match(line)))
    stopped_at = datetime.datetime.strptime(stop, "%Y-%m-%d %H:%M:%S,%f").timestamp()
    return {
        "mode": mode,
        "exit": code,
        "tail_s": round(stopped_at - burst_end, 3),
        "accepts": int(burst["requests"]),
        "dropped": int(burst["dropped"]),
        "tickets": int(burst["tickets"]),
        "load_avg": round(os.getloadavg()[0], 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="10x1", help="the stand-in's DEVICESxWORKERS (default 10x1)")
    parser.add_argument("--rounds", type=int, default=3, help="runs each way, alternating (default 3)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        print("open_model_tail: --rounds must be at least 1", file=sys.stderr)
        return 2
    results = []
    with tempfile.TemporaryDirectory(prefix="open-model-tail-") as temp:
        directory = Path(temp)
        (directory / "plan.yaml").write_text(PLAN)
        (directory / "full_tail.py").write_text(FULL_TAIL)
        for _round in range(args.rounds):
            for mode in ("ended", "full"):
                result = run_once(mode, args.profile, directory)
                results.append(result)
                print(
                    f"{mode:5}: tail {result['tail_s']:.3f} s, {result['accepts']} accepts, {result['dropped']} "
                    f"dropped of {result['tickets']} tickets, exit {result['exit']}, load {result['load_avg']}",
                    flush=True,
                )
    for mode in ("ended", "full"):
        tails = sorted(r["tail_s"] for r in results if r["mode"] == mode)
        print(f"{mode}: median tail {tails[len(tails) // 2]:.3f} s over {len(tails)} runs")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "open_model_tail.json"
    write_json(path, {"profile": args.profile, "runs": results})
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
