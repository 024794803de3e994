"""A swarmgauge locustfile with two User classes against sim-http, for the class picker and the start form's tests:
``HttpGetUser`` (locustfiles/http_ramp.py) and ``SecondUser``, whose requests are named apart."""

from locust import FastHttpUser, constant, task

import swarmgauge.locust  # noqa: F401 - every listener, the web UI's included
from locustfiles.http_ramp import HttpGetUser  # noqa: F401 - offered in the picker
from swarmgauge.shapes import PlanShape  # noqa: F401 - Locust picks the shape up from this module


class SecondUser(FastHttpUser):
    """GET / named "second /", so its requests are told apart from HttpGetUser's in steps.csv."""

    wait_time = constant(0.05)

    @task
    def second(self) -> None:
        self.client.get("/", name="second /")
