"""The 2dph brain stress tool as Locust load: ``BrainUser`` with ``--brain-mix`` and ``--brain-query``, its gates as SLOs.

    locust -f locustfiles/brain_stress.py --headless -u 8 -t 20s --host http://127.0.0.1:8630 --run-dir runs/brain

With no ``--host`` the brain stand-in is started (``--brain-embedded-args`` for its options).
"""

from __future__ import annotations

import shlex
from typing import Any

from locust import events

import listeners.all  # noqa: F401
from listeners.resources import add_sample_source
from targets.embedded import start_embedded
from users.brain import BrainUser, add_gates, parse_mix


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    parser.add_argument("--brain-embedded-args", default="", env_var="SWARMGAUGE_BRAIN_EMBEDDED_ARGS",
                        include_in_web_ui=False, help="options for the brain stand-in started when --host is empty")


@events.init.add_listener
def _on_init(environment: Any, **_kwargs: Any) -> None:
    parsed = environment.parsed_options
    if parsed is None:
        return
    target = start_embedded(environment, "brain", ["--port", "0", *shlex.split(parsed.brain_embedded_args or "")],
                            describe="2dph brain stand-in")
    if target is not None:
        add_sample_source(environment, f"psutil:pid={target.pid}")
    add_gates(environment, parse_mix(parsed.brain_mix))


class StressWorker(BrainUser):
    """One stress-tool worker (``--c N`` is ``-u N``)."""
