"""A step ramp of plain HTTP GETs, for the run machinery on any HTTP target (the demo uses ``targets/sim_http.py``).

Run: ``locust -f locustfiles/http_ramp.py --headless --host http://127.0.0.1:PORT --steps 1,4,16 --step-time 5
--run-dir runs/x``. The shape comes from the plan options (``PlanShape``); every listener is on.
"""

from locust import FastHttpUser, constant, task

import listeners.all  # noqa: F401
from shapes import PlanShape  # noqa: F401 - Locust picks the shape up from this module


class HttpGetUser(FastHttpUser):
    wait_time = constant(0)

    @task
    def get_root(self) -> None:
        self.client.get("/", name="GET /")
