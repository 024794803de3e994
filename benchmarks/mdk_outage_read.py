"""The MDK page's device-outage drill as the demo runs it (under 20 readers), ``--runs`` times: "reads again after
devices back" per run beside the page's "about 0.35 s", with the load average, so a change of how the drill times
that read can be read over more than the index's one sample. Figures only.

    python -m benchmarks.mdk_outage_read [--runs 5] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from swarmgauge.cli.demo import run_workload
from swarmgauge.cli.demo_mdk import drill_workload
from swarmgauge.files import write_json

ROOT = Path(__file__).resolve().parents[1]
PAGE_S = 0.35  # "After devices return, reads succeed again within about 350 ms"


def outage_figures(drills_file: Path) -> list[dict[str, Any]]:
    """Each device-outage row of an ``mdk_drills.json``: devices back to the first good read, and whether the
    readers had left the timed device to the drill."""
    rows = json.loads(drills_file.read_text())["drills"]
    out = []
    for row in rows:
        if row.get("drill") != "device-outage":
            continue
        back, read = row.get("restored_s"), row.get("restored_read_s")
        out.append(
            {
                "reads_again_s": None if back is None or read is None else round(read - back, 3),
                "device_set_aside": row.get("device_set_aside"),
                "failed_reads": row.get("failed_reads"),
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mdk_outage_read", description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="device-outage workloads, one after another")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results", help="where the JSON goes")
    args = parser.parse_args(argv)
    if not 1 <= args.runs <= 50:
        print("mdk_outage_read: --runs must be 1 to 50", file=sys.stderr)
        return 2
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    work = args.out / f"mdk_outage_read-{stamp}"
    runs: list[dict[str, Any]] = []
    for number in range(args.runs):
        run_dir = work / str(number) / "device-outage"
        run_dir.mkdir(parents=True, exist_ok=True)
        code = run_workload(drill_workload("device-outage", 1.0), run_dir, work / str(number) / "device-outage.log")
        figures = [f for path in sorted(run_dir.rglob("mdk_drills.json")) for f in outage_figures(path)]
        load = round(os.getloadavg()[0], 1)
        runs.append({"run": number, "exit_code": code, "load_avg": load, "drills": figures})
        shown = ", ".join(f"{f['reads_again_s']} s (set aside: {f['device_set_aside']})" for f in figures) or "none"
        print(f"run {number}: reads again after devices back {shown}; page about {PAGE_S} s; load {load}", flush=True)
    write_json(args.out / f"mdk_outage_read-{stamp}.json", {"page_s": PAGE_S, "runs": runs})
    return 0


if __name__ == "__main__":
    sys.exit(main())
