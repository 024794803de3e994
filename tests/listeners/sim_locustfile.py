"""Locustfile for the run-machinery tests: users of ``targets/sim_http.py`` measured through users/recording.

``SIM_USER_MODE=open`` makes the user take open-model tickets; ``SIM_STATUS`` makes every request ask for that
status (to test error exit codes). The shape is ``PlanShape``: the tests pass ``--plan`` or ``--steps``. Each
request carries the client's current step (``?step=N``), so the target's own record can be split by step.
"""

import itertools
import os

from geventhttpclient import HTTPClient
from locust import User, constant, task

import swarmgauge.listeners.master_loss
import swarmgauge.listeners.privacy
import swarmgauge.listeners.rundir
import swarmgauge.listeners.signals
import swarmgauge.listeners.slo
import swarmgauge.listeners.step_checkpoints
import swarmgauge.listeners.steps
import swarmgauge.reports.report  # noqa: F401 - the report at the end of a run
from swarmgauge.errors import SwarmgaugeError
from swarmgauge.listeners import step_state
from swarmgauge.shapes import PlanShape  # noqa: F401 - Locust picks the shape up from this module
from swarmgauge.shapes.open_model import OpenModel
from swarmgauge.users.recording import measure

_request_ids = itertools.count()


class SimHttpError(SwarmgaugeError):
    """The simulated target answered with an error status."""


class _SimUserBase(User):
    abstract = True
    status = os.environ.get("SIM_STATUS")

    def on_start(self) -> None:
        self.http = HTTPClient.from_url(self.host, concurrency=1, network_timeout=30, connection_timeout=5)
        self.http.get("/__health").read()  # connect now, unmeasured: the target's record starts after connect

    def on_stop(self) -> None:
        self.http.close()

    @task
    def item(self) -> None:
        info = step_state.current_step(self.environment)
        request_id = f"{os.getpid()}-{next(_request_ids)}"
        path = f"/item?step={info.index if info else ''}&id={request_id}"
        if self.status:
            path += f"&status={self.status}"
        with measure(self.environment.events, "GET", "/item", context={"id": request_id}) as outcome:
            response = self.http.get(path)
            body = response.read()
            outcome.response_length = len(body)
            if response.status_code >= 400:
                raise SimHttpError(f"status {response.status_code}")


if os.environ.get("SIM_USER_MODE") == "open":

    class SimUser(OpenModel, _SimUserBase):
        """Takes a ticket per iteration; its latency counts from the ticket's intended start."""
else:

    class SimUser(_SimUserBase):
        wait_time = constant(0.01)
