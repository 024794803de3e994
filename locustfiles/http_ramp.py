"""A step ramp of plain HTTP GETs, for the run machinery on any HTTP target (such as ``swarmgauge target sim-http``).

Run: ``locust -f locustfiles/http_ramp.py --headless --host http://127.0.0.1:PORT --steps 1,4,16 --step-time 5
--stop-timeout 5 --run-dir runs/x``. The shape comes from the plan options (``PlanShape``); every listener is on.
With ``--stop-timeout`` the requests in flight at the end finish and are counted (without it Locust kills them).
"""

from locust import FastHttpUser, constant, task

import swarmgauge.locust  # noqa: F401
from swarmgauge.shapes import PlanShape  # noqa: F401 - Locust picks the shape up from this module


class HttpGetUser(FastHttpUser):
    wait_time = constant(0)

    @task
    def get_root(self) -> None:
        self.client.get("/", name="GET /")
