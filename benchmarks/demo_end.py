"""Where one demo workload's time goes, phase by phase, over a few repeats: start-up, load, drain and end (the end
is its measurements over to its process gone, which the next workload's go waits for, unless the next start-up is
longer). Runs the workload as ``swarmgauge demo`` does (``--handoff``, no report) and prints each repeat's phases
(``cli/demo_phases.py``) with the load average beside them, then the medians; writes the JSON. Figures only.

    python -m benchmarks.demo_end brain pool-after-fix [--scale 0.25] [--repeats 5] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

from swarmgauge.cli.demo import run_workload
from swarmgauge.cli.demo_pages import Workload, pages
from swarmgauge.cli.demo_phases import Phases
from swarmgauge.files import write_json

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "demo_end.json"


def workload_arguments(description: str, default_out: Path) -> tuple[argparse.Namespace, Workload]:
    """The command line of a benchmark that runs one demo workload again and again: PAGE WORKLOAD, --scale,
    --repeats, --out; an unknown workload is refused in one line (exit 2)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("page")
    parser.add_argument("workload")
    parser.add_argument("--scale", type=float, default=0.25)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=str(default_out))
    args = parser.parse_args()
    chosen = [w for w in pages([args.page], args.scale)[0].workloads if w.name == args.workload]
    if not chosen:
        parser.error(f"no workload {args.workload!r} on page {args.page!r} (see swarmgauge demo --list)")
    return args, chosen[0]


def main() -> None:
    args, workload = workload_arguments(__doc__.splitlines()[0], DEFAULT_OUT)
    repeats: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="demo-end-") as scratch:
        for number in range(args.repeats):
            found: list[Phases] = []
            run_dir = Path(scratch) / str(number)
            code = run_workload(
                workload, run_dir, run_dir.parent / f"{number}.log", report=False, on_phases=found.append
            )
            seconds = {**(found[0].seconds() if found else {}), "load_avg": round(os.getloadavg()[0], 1)}
            print(f"{number + 1}/{args.repeats}: exit {code}, {seconds}", flush=True)
            repeats.append(seconds)
    medians = {
        name: round(statistics.median(r[name] for r in repeats if name in r), 2)
        for name in ("startup", "waited", "load", "drain", "end", "load_avg")
        if any(name in r for r in repeats)
    }
    print(f"median: {medians}")
    doc = {"page": args.page, "workload": args.workload, "scale": args.scale, "repeats": repeats, "median": medians}
    print(f"written {write_json(Path(args.out), doc)}")


if __name__ == "__main__":
    main()
