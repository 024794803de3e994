"""The run-machinery locustfile (``sim_locustfile``) with the worker-loss watcher on, for the worker-kill test."""

import swarmgauge.listeners.workers  # noqa: F401 - the listener under test
from tests.listeners.sim_locustfile import *  # noqa: F403 - SimUser and PlanShape
