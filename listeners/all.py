"""Every swarmgauge listener, imported for its event handlers and options; ``swarmgauge.locust`` imports this.

A listener module that is missing is an ImportError here, never a silent skip: a run without its SLO checks or
run directory would look like a passing run. Add a new listener module to :data:`LISTENER_MODULES` and the import
list below.
"""

from swarmgauge.listeners import resources, rundir, slo, steps, workers

LISTENER_MODULES = (rundir, steps, slo, resources, workers)
