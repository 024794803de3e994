"""The one import for a user's own locustfile: ``import swarmgauge.locust``.

It registers every swarmgauge listener and its options (``--run-dir``, ``--slo``, ``--sample``, ...), the
shapes' options (``--steps``, ``--plan``, ...), and the report written into the run directory at the end. The Users
and shapes to subclass or use are re-exported by :mod:`swarmgauge.api`.

Nothing here imports pandas, numpy or matplotlib: every Locust process imports this module, and a worker renders no
report, so the report (and its pandas) is imported only when a run renders one (the master, the local runner).

It also turns off gevent's documented ``track_greenlet_tree`` setting (unless ``GEVENT_TRACK_GREENLET_TREE`` is set):
see :data:`GREENLET_TREE_ENV`.
"""

import os
from pathlib import Path

import gevent

import swarmgauge.shapes
import swarmgauge.summary  # noqa: F401 - the end-of-run console summary, after the listeners
from swarmgauge.core import hooks
from swarmgauge.listeners import all as listeners_all

LISTENER_MODULES = listeners_all.LISTENER_MODULES

#: gevent's environment variable for ``gevent.config.track_greenlet_tree``. On (gevent's default), every ``Greenlet``
#: records who spawned it: up to 10 frame records of the spawning stack, a weak reference and a dict, ~340 B per
#: Locust user for the run (``benchmarks/mark_user_memory.py``), read only by gevent's debugging dumps
#: (``gevent.util.format_run_info``). Off unless the variable is set, which then decides as gevent documents.
GREENLET_TREE_ENV = "GEVENT_TRACK_GREENLET_TREE"
if GREENLET_TREE_ENV not in os.environ:
    gevent.config.track_greenlet_tree = False


@hooks.render_report.implement
def render_report(run_dir: Path | str) -> None:
    """The end-of-run report of ``run_dir``; imports the report (pandas, matplotlib) on this first call."""
    from swarmgauge.reports import report

    report.render_report(run_dir)
