"""``swarmgauge report DIR``: render report.md / report.html / summary.json from a run directory.

``DIR`` is a run's own folder or the ``--run-dir`` parent, whose ``latest`` run is then meant.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from swarmgauge.reports.report import render_report
from swarmgauge.run_folders import resolve


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="swarmgauge report", description=__doc__)
    parser.add_argument("run_dir", help="a run folder, or a --run-dir parent (its latest run)")
    args = parser.parse_args(argv)
    run_dir = Path(args.run_dir)
    if not run_dir.is_dir():
        print(f"swarmgauge report: {run_dir} is not a directory", file=sys.stderr)
        return 2
    run_dir = resolve(run_dir)
    render_report(run_dir)
    print(f"wrote {run_dir / 'report.md'} and {run_dir / 'report.html'}")
    return 0
