"""The Mark locustfiles' embedded default: the reference server, seeded with the deterministic corpus.

``--mark-embedded-args`` passes simulation knobs through (``"--read-delay-ms 10 --backend-rps 160"``); a write
token goes to the child in its environment, never on its command line. The dev certificate needs
``--mark-insecure``, which is switched on (and sent to the workers with the other options).
"""

from __future__ import annotations

import shlex
from typing import Any

from locust import events

from swarmgauge.targets.embedded import start_embedded
from swarmgauge.targets.launch import TargetProcess
from swarmgauge.targets.mark.cli import PUBLISH_TOKEN_ENV

CORPUS_SIZE = 300


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    parser.add_argument("--mark-embedded-args", default="", env_var="SWARMGAUGE_MARK_EMBEDDED_ARGS",
                        include_in_web_ui=False,
                        help="extra options for the embedded reference server started when --host is empty")
    parser.add_argument("--mark-corpus", type=int, default=CORPUS_SIZE, env_var="SWARMGAUGE_MARK_CORPUS",
                        include_in_web_ui=False, help="documents the embedded server is seeded with")


def start_embedded_default(environment: Any, *, publish_token: str | None = None) -> TargetProcess | None:
    """Start the reference Mark server when no host was given; None on workers and when a host is set."""
    parsed = environment.parsed_options
    extra = shlex.split(getattr(parsed, "mark_embedded_args", "") or "")
    corpus = int(getattr(parsed, "mark_corpus", CORPUS_SIZE))
    env = {PUBLISH_TOKEN_ENV: publish_token} if publish_token else None
    server = start_embedded(environment, "mark", ["--port", "0", "--seed-corpus", str(corpus), *extra], env=env,
                            describe=f"reference server, {corpus} documents")
    if server is not None and parsed is not None:
        parsed.mark_insecure = True
    return server
