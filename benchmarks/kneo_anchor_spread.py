"""What a kneo sync sweep's steps read against each anchor (issue 30): the c=1 steps just before and after a step
(interleaved, the index's since the sweeps interleave them), every c=1 step pooled, and the sweep's two ends (the
bracket before), from demo folders already run; and each c=1 step's runs and per-second spread.

``python -m benchmarks.kneo_anchor_spread DEMO_FOLDER [DEMO_FOLDER ...] [--out FILE]``

A DEMO_FOLDER is ``swarmgauge demo kneo --run-dir D``'s ``D/latest`` (or ``demo --all``'s). Per sweep it prints each
step's runs/s over each anchor (the page's flat is ~1.0, the index's tolerance 10 %), and per c=1 step its runs over
its measured seconds and the sd of its runs a second (``timeline.csv``, the measured seconds only), beside the load
average the demo recorded as the sweep ended. Reads files only, runs nothing. Figures only; writes JSON (``--out``,
default ``benchmarks/results/kneo_anchor_spread.json``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from swarmgauge.files import write_json
from swarmgauge.reports.index_kneo_anchor import anchor_at, anchor_blocks, fold_anchor
from swarmgauge.reports.index_kneo_rows import load_average_of

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "kneo_anchor_spread.json"
SWEEPS = ("sqlite-sync", "postgres-sync")


class NoSweep(ValueError):
    """A folder with no kneo sync sweep run in it."""


def sweep_run(demo: Path, name: str) -> Path:
    run = demo / "kneo" / name / "latest"
    if not (run / "steps.csv").is_file():
        raise NoSweep(f"{demo}: no kneo/{name}/latest/steps.csv (a `swarmgauge demo kneo` folder?)")
    return run


def per_second(run: Path, step: pd.Series, warmup: float) -> list[int]:
    """Runs completed in each whole second of ``step``'s measured time (``timeline.csv``; a step's ``started_at`` is
    its stage's start, its warm-up before the measured seconds)."""
    timeline = pd.read_csv(run / "timeline.csv")
    start = float(step["started_at"]) + warmup
    end = start + float(step["duration_s"])
    inside = timeline[(timeline["time"] >= start - 0.01) & (timeline["time"] + 1 <= end + 0.01)]
    return [int(v) for v in inside["requests"]]


def warmup_of(rows: pd.DataFrame) -> float:
    """The warm-up every stage had: a step's start to the next one's, less its measured seconds."""
    starts = pd.to_numeric(rows["started_at"]).tolist()
    gaps = [b - a - float(d) for a, b, d in zip(starts, starts[1:], rows["duration_s"], strict=False)]
    return statistics.median(gaps) if gaps else 0.0


def one_sweep(run: Path) -> dict[str, Any]:
    steps = pd.read_csv(run / "steps.csv")
    rows = steps[steps["name"] != "Aggregated"].sort_values("step")
    blocks = anchor_blocks(rows)
    pooled_all = float(fold_anchor(rows).pipe(lambda r: r[pd.to_numeric(r["users"]) == 1]).iloc[0]["rps"])
    ends = (float(blocks.iloc[0]["rps"]) * float(blocks.iloc[0]["duration_s"])) + (
        float(blocks.iloc[-1]["rps"]) * float(blocks.iloc[-1]["duration_s"])
    )
    bracket = ends / (float(blocks.iloc[0]["duration_s"]) + float(blocks.iloc[-1]["duration_s"]))
    anchors, warmup = [], warmup_of(rows)
    for _, step in blocks.iterrows():
        seconds = per_second(run, step, warmup)
        anchors.append(
            {
                "step": int(step["step"]),
                "runs": int(step["requests"]),
                "seconds": float(step["duration_s"]),
                "rps": float(step["rps"]),
                "per_second": seconds,
                "sd_per_second": statistics.stdev(seconds) if len(seconds) > 1 else None,
            }
        )
    steps_out = []
    for _, step in rows[pd.to_numeric(rows["users"]) != 1].iterrows():
        anchor = anchor_at(rows, {}, int(step["step"]))
        rps = float(step["rps"])
        steps_out.append(
            {
                "step": int(step["step"]),
                "users": int(step["users"]),
                "rps": rps,
                "neighbours": list(anchor.steps) if anchor else [],
                "over_neighbours": rps / anchor.rps if anchor and anchor.rps > 0 else None,
                "over_all_c1": rps / pooled_all if pooled_all > 0 else None,
                "over_ends": rps / bracket if bracket > 0 else None,
            }
        )
    return {"run": str(run), "load_avg": load_average_of(run), "anchors": anchors, "steps": steps_out}


def shown(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("demos", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    try:
        runs = [(demo, name, sweep_run(demo, name)) for demo in args.demos for name in SWEEPS]
    except NoSweep as exc:
        print(f"kneo_anchor_spread: {exc}", file=sys.stderr)
        return 2
    results = []
    for demo, name, run in runs:
        result = {"demo": str(demo), "sweep": name, **one_sweep(run)}
        results.append(result)
        print(f"{demo} {name} (load average {result['load_avg']}):")
        for anchor in result["anchors"]:
            print(
                f"  c=1 step {anchor['step']}: {anchor['runs']} runs over {anchor['seconds']:.0f} s, "
                f"{anchor['rps']:.1f} runs/s, sd a second {shown(anchor['sd_per_second'])} {anchor['per_second']}"
            )
        for step in result["steps"]:
            print(
                f"  c={step['users']} (step {step['step']}) {step['rps']:.1f} runs/s over: its neighbours "
                f"{step['neighbours']} {shown(step['over_neighbours'])}, every c=1 {shown(step['over_all_c1'])}, "
                f"the two ends {shown(step['over_ends'])}"
            )
    write_json(args.out, {"sweeps": results})
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
