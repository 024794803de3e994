"""Locustfile for the gate tests: a task that raises after a successful request, and a second User class with a
request name of its own that only a plan's later stage runs, so ``-t`` can cut the plan before that request runs.

``GATES_RAISE_EVERY=N`` makes every N-th iteration of ``RaisingUser`` raise ``KeyError`` after its request
succeeded (0: never).
"""

import itertools
import os

from locust import HttpUser, constant, task

import swarmgauge.locust  # noqa: F401 - every listener, the summary and the report
from swarmgauge.shapes import PlanShape  # noqa: F401 - Locust picks the shape up from this module

_iterations = itertools.count(1)
RAISE_EVERY = int(os.environ.get("GATES_RAISE_EVERY", "0"))


class RaisingUser(HttpUser):
    wait_time = constant(0.02)

    @task
    def item(self) -> None:
        self.client.get("/item")
        if RAISE_EVERY and next(_iterations) % RAISE_EVERY == 0:
            {}["missing"]  # user code's own bug, after a request that succeeded


class LaterUser(HttpUser):
    wait_time = constant(0.02)

    @task
    def later(self) -> None:
        self.client.get("/later")
