"""Import this from a locustfile to get every swarmgauge listener and its options.

Each listener module registers its own event handlers when imported; a module not yet present is skipped, so a
locustfile works with whatever this installation ships.
"""

import importlib
import importlib.util

LISTENER_MODULES = (
    "swarmgauge.listeners.rundir",
    "swarmgauge.listeners.steps",
    "swarmgauge.listeners.slo",
    "swarmgauge.listeners.resources",
    "swarmgauge.listeners.webui",
    "swarmgauge.listeners.workers",
    "swarmgauge.listeners.signals",
    "swarmgauge.listeners.privacy",
)

for _name in LISTENER_MODULES:
    if importlib.util.find_spec(_name) is not None:
        importlib.import_module(_name)
