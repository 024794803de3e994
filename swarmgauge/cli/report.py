"""``swarmgauge report DIR``: render report.md / report.html / summary.json from a run directory.

``DIR`` is a run's own folder or the ``--run-dir`` parent, whose ``latest`` run is then meant. A folder with neither
(no run in it) is exit 2 with one line, and nothing is written there. A run whose process was killed before it closed
(SIGKILL, the OOM killer) is marked so in its ``run.json`` and report (``reports/run_state.py``), and said here.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from swarmgauge.reports.context import load_run_json
from swarmgauge.reports.report import render_report
from swarmgauge.run_folders import CRASHED, resolve

#: A run folder has at least one of these (run.json from the start of the run, steps.csv from its end).
RUN_FILES = ("run.json", "steps.csv")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="swarmgauge report", description=__doc__)
    parser.add_argument("run_dir", help="a run folder, or a --run-dir parent (its latest run)")
    args = parser.parse_args(argv)
    run_dir = Path(args.run_dir)
    if not run_dir.is_dir():
        print(f"swarmgauge report: {run_dir} is not a directory", file=sys.stderr)
        return 2
    run_dir = resolve(run_dir)
    if not any((run_dir / name).is_file() for name in RUN_FILES):
        print(
            f"swarmgauge report: {args.run_dir} holds no run (no {' or '.join(RUN_FILES)} in it, and no latest run): "
            "give a run's folder or the --run-dir it was written to",
            file=sys.stderr,
        )
        return 2
    summary = render_report(run_dir)
    print(f"wrote {run_dir / 'report.md'} and {run_dir / 'report.html'}")
    info = load_run_json(run_dir)
    if info.get("ended_by") == CRASHED:
        kept = sum(1 for row in summary.get("steps") or [] if row.get("name") == "Aggregated")
        print(f"the run ended by {CRASHED} (its process never closed it): {kept} step(s) kept as each ended")
    return 0
