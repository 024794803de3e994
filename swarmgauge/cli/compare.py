"""``swarmgauge compare BASE NEW``: the command line of the run comparison in :mod:`swarmgauge.reports.compare`.

BASE is a run folder or a plan with a reference page's figures (read by the reports themselves: the plan format is
in ``swarmgauge.plans``, below every layer). Writes ``compare.md`` and ``compare.html`` into NEW (or ``--out``),
prints the Markdown, and exits 3 when NEW regressed, 2 on a bad argument.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from swarmgauge.files import write_atomic
from swarmgauge.reports import compare

REGRESSION_EXIT = 3
USAGE_EXIT = 2


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="swarmgauge compare", description=(compare.__doc__ or "").splitlines()[0])
    parser.add_argument("base", help="run folder, or a plan with reference: figures (e.g. demarkus-reads)")
    parser.add_argument("new", help="run folder")
    parser.add_argument("--tolerance", default="10%", help="allowed change before it is a regression (default 10%%)")
    parser.add_argument("--out", default=None, help="folder for compare.md/compare.html (default: NEW)")
    args = parser.parse_args(argv)
    try:
        tolerance = compare.parse_tolerance(args.tolerance)
        base, new = compare.load_side(args.base), compare.load_run(Path(args.new))
    except compare.CompareError as exc:
        print(f"swarmgauge compare: {exc}", file=sys.stderr)
        return USAGE_EXIT
    markdown, page, regressions = compare.render(base, new, tolerance)
    out = Path(args.out) if args.out else compare.resolve_run_dir(Path(args.new))
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "compare.md", markdown)
    write_atomic(out / "compare.html", page)
    sys.stdout.write(markdown)
    return REGRESSION_EXIT if regressions else 0
