"""``swarmgauge compare BASE NEW``: the reports' run comparison, where BASE may also be a plan's reference figures.

Reports do not import shapes, so this app-layer entry hands the plan loader to :func:`swarmgauge.reports.compare.main`.
"""

from __future__ import annotations

from swarmgauge.reports import compare
from swarmgauge.shapes.plan import load_plan_file


def main(argv: list[str]) -> int:
    return compare.main(argv, load_plan=load_plan_file)
