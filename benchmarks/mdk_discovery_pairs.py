"""The MDK demo's workloads at a short scale, each run with its ids from the stand-in Kernel's worker list
(``--mdk-discover kernel``) and with the fleet summary, in pairs that alternate their order per round: the start-up
each waited and the figures the index compares (saturation reads/s, one-at-a-time read and summary p50, the burst's
accept p50), with the load average, so the two are read side by side. Figures only; writes the JSON.

    python -m benchmarks.mdk_discovery_pairs [--workloads fleet-2000x4,worker-restart] [--scale 0.25] [--rounds 2]
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import tempfile
from pathlib import Path
from typing import Any

from swarmgauge.cli.demo import run_pages
from swarmgauge.cli.demo_pages import Workload, pages
from swarmgauge.files import write_json

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "mdk_discovery_pairs.json"
FLAG = "--mdk-discover"
#: (step label, request name, steps.csv column) -> the figure's name in the JSON
FIGURES = {
    ("saturation reads", "telemetry", "rps"): "saturation_rps",
    ("one at a time", "telemetry", "p50_ms"): "read_p50_ms",
    ("one at a time", "summary", "p50_ms"): "summary_p50_ms",
    ("action burst", "action", "p50_ms"): "burst_accept_p50_ms",
}


def _by(workload: Workload, by: str, tag: str) -> Workload:
    options = list(workload.options)
    if FLAG in options:
        del options[options.index(FLAG) : options.index(FLAG) + 2]
    if by == "kernel":
        options += [FLAG, "kernel"]
    return dataclasses.replace(workload, name=f"{workload.name}-{by}-{tag}", options=tuple(options))


def _figures(run: Path) -> dict[str, float]:
    found: dict[str, float] = {}
    with open(run / "steps.csv", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            for (label, name, column), key in FIGURES.items():
                if row["label"] == label and row["name"] == name and row.get(column):
                    found[key] = round(float(row[column]), 1)
    return found


def measure(names: list[str], scale: float, rounds: int) -> list[dict[str, Any]]:
    (page,) = pages(["mdk"], scale)
    chosen: list[Workload] = []
    for number in range(rounds):
        for workload in (w for w in page.workloads if w.name in names):
            pair = [_by(workload, "kernel", str(number)), _by(workload, "summary", str(number))]
            chosen += pair if number % 2 == 0 else pair[::-1]
    parent = Path(tempfile.mkdtemp(prefix="mdk-discovery-pairs-"))
    run_pages([dataclasses.replace(page, workloads=tuple(chosen))], parent, scale)
    manifest = json.loads(next(parent.glob("*/demo.json")).read_text())
    folder = next(parent.glob("*/demo.json")).parent
    rows = []
    for entry in manifest["pages"][0]["workloads"]:
        run = folder / entry["run_folder"] if entry.get("run_folder") else None
        rows.append(
            {
                "run": entry["name"],
                "exit": entry.get("exit_code"),
                "load_avg": entry.get("load_avg"),
                "startup_waited_s": (entry.get("phases_s") or {}).get("waited"),
                **(_figures(run) if run is not None else {}),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workloads", default="fleet-2000x4,worker-restart", help="MDK demo workloads, comma separated"
    )
    parser.add_argument("--scale", type=float, default=0.25)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    args = parser.parse_args()
    rows = measure(args.workloads.split(","), args.scale, args.rounds)
    for row in rows:
        print(row, flush=True)
    print(f"written {write_json(Path(args.out), {'scale': args.scale, 'runs': rows})}")


if __name__ == "__main__":
    main()
