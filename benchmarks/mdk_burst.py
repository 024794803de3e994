"""The MDK page's action burst (1,000 submits/s for 3 s) on the stand-in at its fleet sizes, beside the page's figures.

Each run is ``locustfiles/mdk_fleet.py --mdk-scenario burst`` with a fresh embedded stand-in (``--mdk-profile``);
up to 1,000 submits may be in flight (the page's harness fires at its pace whatever the Kernel's); a profile runs
``--runs`` times because whether a Kernel health ping falls into the burst is chance, as the page's
one green and one red 5,000 / 5 run. Prints submits, acceptance p50 / p99 (every answered submit, as Locust saw
it), the Kernel's own acceptance p50 / p99 (arrival to answer inside the Kernel: on a loaded host the Gateway's and
generator's CPU lag adds to Locust's figure, not to this one), missed health pings and the
``ERR_WORKER_NOT_ROUTABLE`` rejections per run beside the page's, and writes the JSON. Figures only.

    python -m benchmarks.mdk_burst [--profiles 1000x2,5000x5] [--runs 2] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from swarmgauge.files import write_json
from swarmgauge.run_folders import resolve

ROOT = Path(__file__).resolve().parents[1]
# The page (2026-10-27, M3 Max): acceptance under 1,000 submits/s for 3 s, and the red 5,000 / 5 run's rejections.
PAGE = {
    "1000x2": "tens of ms at p50 (from 1,000 devices up)",
    "5000x5": "green: p50 423 ms; red: p50 951 ms, p99 2,591 ms, 2,105 of 2,524 submits ERR_WORKER_NOT_ROUTABLE",
}
NOT_ROUTABLE = "Rejected(ERR_WORKER_NOT_ROUTABLE)"
# The burst's first stage discovers the fleet with one summary that reads every device (the page's fleet summary
# tracks fleet size); 5,000 devices on a shared, loaded host took 11 s, over the client's default 10 s and past the
# scenario's 2 s discover stage, so the burst stage passed with its users still waiting and no submit was made.
# Set-up, not a measured figure: it gets room, and a discover stage that grows with the fleet.
DISCOVER_TIMEOUT_S = 60
DISCOVER_S_PER_1000_DEVICES = 4.0
PLAN = """name: mdk-burst-{profile}
description: the MDK page's action burst after a fleet discovery sized to the fleet (benchmarks/mdk_burst.py)
kind: stages
stages:
  - {{label: discover, users: 1, duration: {discover}s, user_classes: [MDKBurstUser]}}
  - {{label: action burst, rate: 1000, duration: 3s, max_users: 1000, drop_after: 1s, user_classes: [MDKBurstUser]}}
"""


def burst_plan(profile: str, directory: Path) -> Path:
    """The scenario's discover + burst stages as a plan file, the discover stage long enough for the fleet."""
    found = re.match(r"(?:cap-)?(\d+)", profile)  # a malformed profile is refused by the locustfile, in one line
    devices = int(found.group(1)) if found else 0
    discover = max(2.0, DISCOVER_S_PER_1000_DEVICES * devices / 1000.0)
    path = directory / f"{profile}-plan.yaml"
    path.write_text(PLAN.format(profile=profile, discover=f"{discover:g}"))
    return path


def run_burst(profile: str, run_dir: Path, timeout: float) -> dict[str, Any]:
    cmd = [
        sys.executable,
        "-m",
        "locust",
        "-f",
        "locustfiles/mdk_fleet.py",
        "--headless",
        "--only-summary",
        "--plan",
        str(burst_plan(profile, run_dir.parent)),
        "--mdk-profile",
        profile,
        "--sample-interval",
        "1",
        "--mdk-timeout",
        str(DISCOVER_TIMEOUT_S),
        "--run-dir",
        str(run_dir),
    ]
    started = time.time()
    with open(run_dir.parent / f"{run_dir.name}.log", "w") as log:
        code = subprocess.run(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, timeout=timeout).returncode
    folder = resolve(run_dir)
    summary = (
        json.loads((folder / "summary.json").read_text()).get("MDK fleet", {})
        if (folder / "summary.json").is_file()
        else {}
    )
    doc = json.loads((folder / "mdk.json").read_text()) if (folder / "mdk.json").is_file() else {}
    acceptance = ((summary.get("actions") or {}).get("acceptance") or [{}])[0]
    return {
        "profile": profile,
        "run_dir": str(run_dir),
        "locust_exit_code": code,
        "seconds": time.time() - started,
        "submits": acceptance.get("submits"),
        "p50_ms": acceptance.get("p50_ms"),
        "p99_ms": acceptance.get("p99_ms"),
        "not_routable": (doc.get("errors") or {}).get(NOT_ROUTABLE, 0),
        "queued": (doc.get("actions") or {}).get("queued"),
        "kernel": doc.get("kernel"),
        "kernel_p50_ms": ((doc.get("kernel") or {}).get("accept_ms") or {}).get("0.5"),
        "kernel_p99_ms": ((doc.get("kernel") or {}).get("accept_ms") or {}).get("0.99"),
        "missed_pings": (doc.get("kernel") or {}).get("missed_pings"),
    }


def _ms(value: Any) -> str:
    return "-" if value is None else f"{float(value):.0f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mdk_burst", description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", default="1000x2,5000x5", help="DEVICESxWORKERS, comma-separated")
    parser.add_argument("--runs", type=int, default=2, help="runs per profile")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one run may take")
    parser.add_argument("--out", default="runs/mdk-burst")
    args = parser.parse_args(argv)
    profiles = [p.strip() for p in args.profiles.split(",") if p.strip()]
    if not profiles or args.runs < 1:
        print("mdk_burst: --profiles takes DEVICESxWORKERS values, --runs 1 or more", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = [
        run_burst(profile, out / f"{profile}-run{i + 1}", args.timeout)
        for profile in profiles
        for i in range(args.runs)
    ]
    print(
        "| profile | run | submits | accepted | ERR_WORKER_NOT_ROUTABLE | missed pings | acceptance p50 | p99 | "
        "Kernel's own p50 | p99 | page |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for index, row in enumerate(rows):
        print(
            f"| {row['profile']} | {index % args.runs + 1} | {row['submits']} | {row['queued']} | "
            f"{row['not_routable']} | {row['missed_pings']} | {_ms(row['p50_ms'])} | {_ms(row['p99_ms'])} | "
            f"{_ms(row['kernel_p50_ms'])} | {_ms(row['kernel_p99_ms'])} | {PAGE.get(row['profile'], '')} |"
        )
    print(f"written {write_json(out / 'mdk-burst.json', {'settings': vars(args), 'page': PAGE, 'rows': rows})}")
    return 0 if all(row["submits"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
