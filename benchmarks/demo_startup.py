"""One demo workload's phases, run in a fresh Locust process and in one forked from the demo's zygote
(``cli/demo_zygote.py``), side by side: each repeat runs it both ways in turn, as ``swarmgauge demo`` does
(``--handoff``, no report), and keeps its start-up (to its ``ready`` mark: locustfile imported, targets started)
and its end (measurements over to process gone), with the load average beside each pair. Figures only; writes the
JSON.

    python -m benchmarks.demo_startup brain after-fix [--scale 0.25] [--repeats 5] [--out FILE]
"""

from __future__ import annotations

import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.demo_end import workload_arguments
from swarmgauge.cli.demo import run_workload, start_workload
from swarmgauge.cli.demo_pages import Workload
from swarmgauge.cli.demo_phases import Phases
from swarmgauge.cli.demo_zygote import Zygote
from swarmgauge.files import write_json

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "demo_startup.json"


def phases(workload: Workload, run_dir: Path, zygote: Zygote | None) -> dict[str, float]:
    """The run's phases (``cli/demo_phases.py``) and its exit code."""
    found: list[Phases] = []
    started = start_workload(workload, run_dir, run_dir.parent / f"{run_dir.name}.log", report=False, zygote=zygote)
    code = run_workload(workload, run_dir, None, started=started, on_phases=found.append)
    return {**(found[0].seconds() if found else {}), "exit": code}


def main() -> None:
    args, workload = workload_arguments(__doc__.splitlines()[0], DEFAULT_OUT)
    zygote = Zygote()
    pairs: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="demo-startup-") as scratch:
            for number in range(args.repeats):
                pair: dict[str, Any] = {}
                for kind, forking in (("fresh", None), ("forked", zygote)):
                    pair[kind] = phases(workload, Path(scratch) / f"{kind}-{number}", forking)
                pair["load_avg"] = round(os.getloadavg()[0], 1)
                print(f"{number + 1}/{args.repeats}: {pair}", flush=True)
                pairs.append(pair)
    finally:
        zygote.close()
    medians: dict[str, Any] = {"load_avg": statistics.median(p["load_avg"] for p in pairs)}
    for kind in ("fresh", "forked"):
        medians[kind] = {
            name: round(statistics.median(p[kind][name] for p in pairs if name in p[kind]), 2)
            for name in ("startup", "load", "end")
            if any(name in p[kind] for p in pairs)
        }
    print(f"median: {medians}")
    doc = {"page": args.page, "workload": args.workload, "scale": args.scale, "pairs": pairs, "median": medians}
    print(f"written {write_json(Path(args.out), doc)}")


if __name__ == "__main__":
    main()
