"""The run-machinery locustfile (``sim_locustfile``) with the end-of-run console summary, for tests that read it."""

import swarmgauge.summary  # noqa: F401 - the summary under test
from tests.listeners.sim_locustfile import *  # noqa: F403 - SimUser and PlanShape
