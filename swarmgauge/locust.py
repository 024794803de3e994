"""The one import for a user's own locustfile: ``import swarmgauge.locust``.

It registers every swarmgauge listener and its options (``--run-dir``, ``--slo``, ``--sample``, ...), the
shapes' options (``--steps``, ``--plan``, ...), and the report written into the run directory at the end. The Users
and shapes to subclass or use are re-exported by :mod:`swarmgauge.api`.
"""

import swarmgauge.reports.report  # installs the end-of-run report
import swarmgauge.shapes
import swarmgauge.summary  # noqa: F401 - the end-of-run console summary, after the listeners
from swarmgauge.listeners import all as listeners_all

LISTENER_MODULES = listeners_all.LISTENER_MODULES
