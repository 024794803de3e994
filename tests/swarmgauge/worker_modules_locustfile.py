"""A user's own locustfile (``import swarmgauge.locust`` and the api) that records which of pandas, numpy and
matplotlib its process loaded, as the process's last act (Locust's ``quit`` event, after every swarmgauge listener,
the summary included): ``tests/swarmgauge/test_locust.py`` reads the record of the master and of the worker.

``MODULES_RECORD_DIR`` names the folder; each process writes ``<runner class>-<pid>.json`` there.
"""

import json
import os
import sys
from pathlib import Path
from typing import Any

from locust import FastHttpUser, constant, events, task
from locust.env import Environment

import swarmgauge.locust  # noqa: F401 - steps.csv, --run-dir, the report
from swarmgauge import api as sg

HEAVY = {"pandas", "numpy", "matplotlib", "plotly"}
_environments: list[Environment] = []


class Ramp(sg.PlanShape):
    """The plan comes from the test's ``--steps``."""


class ItemUser(FastHttpUser):
    wait_time = constant(0.01)

    @task
    def item(self) -> None:
        self.client.get("/item")


@events.init.add_listener
def _remember(environment: Environment, **_kwargs: Any) -> None:
    _environments.append(environment)


@events.quit.add_listener
def _record_loaded_modules(**_kwargs: Any) -> None:
    folder = os.environ.get("MODULES_RECORD_DIR")
    if not folder or not _environments:
        return
    role = type(_environments[-1].runner).__name__
    loaded = sorted(name for name in sys.modules if name.split(".")[0] in HEAVY)
    (Path(folder) / f"{role}-{os.getpid()}.json").write_text(json.dumps(loaded))
