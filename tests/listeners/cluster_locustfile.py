"""Locustfile for the master-worker channel tests: every swarmgauge listener (as a user's own locustfile has), the
Mark User's options (``--mark-token`` is a declared secret) and the sim-http User that puts the load on."""

import swarmgauge.locust  # every listener, the cluster channel's included
import swarmgauge.users.mark_user  # noqa: F401 - declares --mark-token (is_secret=True)
from tests.listeners.sim_locustfile import PlanShape, SimUser  # noqa: F401 - the shape and the User this run spawns
