"""The run-machinery locustfile (``sim_locustfile``) with the push listener, for ``test_prom_push``."""

import swarmgauge.listeners.prom_push  # noqa: F401 - --prometheus-push, --prometheus-remote-write
from tests.listeners.sim_locustfile import *  # noqa: F403 - SimUser and PlanShape
