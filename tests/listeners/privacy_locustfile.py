"""Locustfile for the privacy tests: ``import swarmgauge.locust`` as a user's own locustfile does, the sim-http
User, and a file of its own written at ``test_start`` (``PRIVACY_OWN_FILE``); at ``quitting`` it writes the
process's umask as it then stands into ``PRIVACY_UMASK_FILE``."""

import os
from pathlib import Path

from locust import events

import swarmgauge.locust  # noqa: F401 - every listener, as in a user's locustfile
from swarmgauge.shapes import PlanShape  # noqa: F401 - Locust picks the shape up from this module
from tests.listeners.sim_locustfile import SimUser  # noqa: F401 - the User this run spawns


@events.test_start.add_listener
def _write_own_file(**_kwargs):
    Path(os.environ["PRIVACY_OWN_FILE"]).write_text("the locustfile's own output\n")


@events.quitting.add_listener
def _write_umask(**_kwargs):
    current = os.umask(0)
    os.umask(current)
    Path(os.environ["PRIVACY_UMASK_FILE"]).write_text(f"{current:o}\n")
