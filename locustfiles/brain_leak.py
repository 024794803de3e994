"""The 2dph brain memory check: one user of sequential searches (the stress tool's ``--mix search:1 --c 1``) while
the target's RSS is sampled; the leak verdict prints at the end and ``rss_delta<50MiB`` is an SLO (exit 3 on a leak).

With no ``--host`` the brain stand-in (``targets/brain.py``) is started and sampled by pid; ``--brain-embedded-args``
passes its fault modes (``"--leak-per-search 2048"``, ``"--pool-exhaustion 50"``). Against a real brain, pass
``--host http://127.0.0.1:8630 --sample psutil:match=brain-serve``.

    locust -f locustfiles/brain_leak.py --headless -u 1 -t 60s --sample-interval 2 --run-dir runs/brain-leak
"""

from __future__ import annotations

from typing import Any

from locust import events
from locust.env import Environment

import swarmgauge.locust  # noqa: F401 - steps, SLOs, run directory, resources
from swarmgauge.core import hooks
from swarmgauge.targets.embedded import start_embedded_brain
from swarmgauge.users.brain_user import BrainUser, add_gates, parse_mix

LEAK_SLO = "rss_delta<50MiB"


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    parsed = environment.parsed_options
    if parsed is None:
        return
    start_embedded_brain(environment)
    add_gates(environment, parse_mix(SequentialSearchUser.mix))
    hooks.add_slos(environment, [LEAK_SLO])


class SequentialSearchUser(BrainUser):
    """Searches only, back to back: every search the target retains memory for shows in its RSS."""

    mix = "search:1"
