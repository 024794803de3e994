"""Locustfile for the feeder tests: each iteration GETs ``/item?id=<row_id>@<pid>`` from ``targets/sim_http.py``.

The target records the ``id`` of every request it served, so a test reads from the target's own record which rows
were used and how often. The shape is ``PlanShape`` (the tests pass ``--steps``), or none with ``FEEDER_NO_SHAPE=1``.
"""

import os

from geventhttpclient import HTTPClient
from locust import User, constant, task

import swarmgauge.listeners.feeder
import swarmgauge.listeners.rundir
import swarmgauge.listeners.signals
import swarmgauge.listeners.steps  # noqa: F401 - the run folder, the steps and the end of a plan
from swarmgauge.core import hooks
from swarmgauge.users.recording import measure

if not os.environ.get("FEEDER_NO_SHAPE"):
    from swarmgauge.shapes import PlanShape  # noqa: F401 - Locust picks the shape up from this module


class FedUser(User):
    """One GET per row; the request's ``id`` is the row's ``row_id`` and the process that sent it."""

    wait_time = constant(0.01)
    feeder_columns = ("row_id",)

    def on_start(self) -> None:
        self.http = HTTPClient.from_url(self.host, concurrency=1, network_timeout=30, connection_timeout=5)

    def on_stop(self) -> None:
        self.http.close()

    @task
    def item(self) -> None:
        row = hooks.next_row(self)
        row_id = row["row_id"] if row is not None else "none"
        with measure(self.environment.events, "GET", "/item") as outcome:
            response = self.http.get(f"/item?id={row_id}@{os.getpid()}")
            outcome.response_length = len(response.read())
