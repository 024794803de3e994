"""The one import for a user's own locustfile: ``import swarmgauge.locust``.

It registers every swarmgauge listener and its options (``--run-dir``, ``--slo``, ``--sample``, ...), the
shapes' options (``--steps``, ``--plan``, ...), and the report written into the run directory at the end. The Users
and shapes to subclass or use are re-exported by :mod:`swarmgauge.api`.

Nothing here imports pandas, numpy or matplotlib: every Locust process imports this module, and a worker renders no
report, so the report (and its pandas) is imported only when a run renders one (the master, the local runner).
"""

from pathlib import Path

import swarmgauge.shapes
import swarmgauge.summary  # noqa: F401 - the end-of-run console summary, after the listeners
from swarmgauge.core import hooks
from swarmgauge.listeners import all as listeners_all

LISTENER_MODULES = listeners_all.LISTENER_MODULES


@hooks.render_report.implement
def render_report(run_dir: Path | str) -> None:
    """The end-of-run report of ``run_dir``; imports the report (pandas, matplotlib) on this first call."""
    from swarmgauge.reports import report

    report.render_report(run_dir)
