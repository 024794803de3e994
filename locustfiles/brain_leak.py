"""The 2dph brain memory check: one user of sequential searches (the stress tool's ``--mix search:1 --c 1``) while
the target's RSS is sampled; the leak verdict prints at the end and ``rss_delta<50MiB`` is an SLO (exit 3 on a leak).

With no ``--host`` the brain stand-in (``targets/brain.py``) is started and sampled by pid; ``--brain-embedded-args``
passes its fault modes (``"--leak-per-search 2048"``, ``"--pool-exhaustion 50"``). Against a real brain, pass
``--host http://127.0.0.1:8630 --sample psutil:match=brain-serve``.

    locust -f locustfiles/brain_leak.py --headless -u 1 -t 60s --sample-interval 2 --run-dir runs/brain-leak
"""

from __future__ import annotations

import shlex
from typing import Any

from locust import events

import listeners.all  # noqa: F401 - steps, SLOs, run directory, resources
from listeners.resources import add_sample_source
from targets.embedded import start_embedded
from users.brain import BrainUser, add_gates, parse_mix

LEAK_SLO = "rss_delta<50MiB"


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    parser.add_argument("--brain-embedded-args", default="", env_var="SWARMGAUGE_BRAIN_EMBEDDED_ARGS",
                        include_in_web_ui=False, help="options for the brain stand-in started when --host is empty")


@events.init.add_listener
def _on_init(environment: Any, **_kwargs: Any) -> None:
    parsed = environment.parsed_options
    if parsed is None:
        return
    extra = shlex.split(parsed.brain_embedded_args or "")
    target = start_embedded(environment, "brain", ["--port", "0", *extra], describe="2dph brain stand-in")
    if target is not None:
        add_sample_source(environment, f"psutil:pid={target.pid}")
    add_gates(environment, parse_mix(SequentialSearchUser.mix))
    try:
        from listeners.slo import add_default_slos
    except ImportError:
        return
    add_default_slos(environment, [LEAK_SLO])


class SequentialSearchUser(BrainUser):
    """Searches only, back to back: every search the target retains memory for shows in its RSS."""

    mix = "search:1"
