"""Locustfile for the secret tests: a user sends ``--echo-token`` as its bearer token to a server that echoes it
back in every error answer, and records the answer through ``users/recording`` (the seam under test)."""

from __future__ import annotations

from geventhttpclient import HTTPClient
from locust import User, constant, events, task

import swarmgauge.listeners.all  # noqa: F401 - run directory, steps, SLOs, signals, privacy
from swarmgauge.errors import SwarmgaugeError
from swarmgauge.shapes import PlanShape  # noqa: F401 - Locust picks the shape up from this module
from swarmgauge.users.recording import measure


class EchoedError(SwarmgaugeError):
    """The server refused the request; its answer is the message."""


@events.init_command_line_parser.add_listener
def _add_options(parser):
    parser.add_argument(
        "--echo-token",
        default="",
        env_var="ECHO_TOKEN",
        is_secret=True,
        include_in_web_ui=True,
        help="bearer token the echo server sends back",
    )


class EchoUser(User):
    wait_time = constant(0.05)

    def on_start(self) -> None:
        self.http = HTTPClient.from_url(self.host, concurrency=1, network_timeout=10, connection_timeout=5)

    def on_stop(self) -> None:
        self.http.close()

    @task
    def call(self) -> None:
        token = self.environment.parsed_options.echo_token
        with measure(self.environment.events, "GET", "/call"):
            response = self.http.get("/call", headers={"Authorization": f"Bearer {token}"})
            body = response.read().decode()
            if response.status_code >= 400:
                raise EchoedError(f"status {response.status_code}: {body}")
