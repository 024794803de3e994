"""Every swarmgauge listener, imported for its event handlers and options; ``swarmgauge.locust`` imports this.

A listener module that is missing is an ImportError here, never a silent skip: a run without its SLO checks or
run directory would look like a passing run. A new listener module goes into :data:`LISTENER_MODULES`.
"""

import importlib

#: Every listener module, in the order their handlers register (the run folder first; the run's end is
#: ``core/lifecycle.py``, imported by the first of them).
LISTENER_MODULES = (
    "swarmgauge.listeners.cluster",
    "swarmgauge.listeners.rundir",
    "swarmgauge.listeners.steps",
    "swarmgauge.listeners.step_checkpoints",
    "swarmgauge.listeners.user_errors",
    "swarmgauge.listeners.slo",
    "swarmgauge.listeners.resources",
    "swarmgauge.listeners.live",
    "swarmgauge.listeners.slo_abort",
    "swarmgauge.listeners.prom_export",
    "swarmgauge.listeners.prom_push",
    "swarmgauge.listeners.webui",
    "swarmgauge.listeners.repeat_command",
    "swarmgauge.listeners.workers",
    "swarmgauge.listeners.master_loss",
    "swarmgauge.listeners.quiet",
    "swarmgauge.listeners.signals",
    "swarmgauge.listeners.privacy",
    "swarmgauge.listeners.feeder",
    "swarmgauge.listeners.handoff",
)

for _name in LISTENER_MODULES:
    importlib.import_module(_name)
