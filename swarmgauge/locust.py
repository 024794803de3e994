"""The one import for a user's own locustfile: ``import swarmgauge.locust``.

It registers every swarmgauge listener and its options (``--run-dir``, ``--slo``, ``--sample``, ...), the
shapes' options (``--steps``, ``--plan``, ...), and the report written into the run directory at the end. The Users and shapes to subclass or
use are re-exported by :mod:`swarmgauge.api`.
"""

import swarmgauge.shapes  # noqa: F401 - the shapes' options and the open-model ticket scheduler
from swarmgauge.core import hooks
from swarmgauge.listeners import all as listeners_all
from swarmgauge.reports.report import render_report

LISTENER_MODULES = listeners_all.LISTENER_MODULES

hooks.render_report.implement(render_report)
