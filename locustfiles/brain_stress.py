"""The 2dph brain stress tool as Locust load: ``BrainUser`` with ``--brain-mix`` and ``--brain-query``, its gates as SLOs.

    locust -f locustfiles/brain_stress.py --headless -u 8 -t 20s --host http://127.0.0.1:8630 --run-dir runs/brain

With no ``--host`` the brain stand-in is started (``--brain-embedded-args`` for its options).
"""

from __future__ import annotations

from typing import Any

from locust import events
from locust.env import Environment

import swarmgauge.locust  # noqa: F401
from swarmgauge.shapes import PlanShape  # noqa: F401 - --plan or --steps; without them -u/-t as one step
from swarmgauge.targets.embedded import start_embedded_brain
from swarmgauge.users.brain_user import BrainUser, add_gates, parse_mix


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    parsed = environment.parsed_options
    if parsed is None:
        return
    start_embedded_brain(environment)
    add_gates(environment, parse_mix(parsed.brain_mix))


class StressWorker(BrainUser):
    """One stress-tool worker (``--c N`` is ``-u N``)."""
