"""The embedded default: with no ``--host``, a Mark locustfile starts the reference server itself.

On the master (or a local run) the server is started on a free loopback port, seeded with the deterministic
corpus, and ``environment.host`` is set so Locust sends it to the workers with every spawn. It stops when Locust
quits. ``--mark-embedded-args`` passes simulation knobs through (``"--read-delay-ms 10 --backend-rps 160"``).
"""

from __future__ import annotations

import atexit
import logging
import shlex
from typing import Any

from locust import events
from locust.runners import WorkerRunner

from targets.launch import TargetProcess, launch_target
from targets.mark.cli import PUBLISH_TOKEN_ENV

log = logging.getLogger(__name__)

CORPUS_SIZE = 300
_running: list[TargetProcess] = []


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    parser.add_argument("--mark-embedded-args", default="", env_var="SWARMGAUGE_MARK_EMBEDDED_ARGS",
                        include_in_web_ui=False,
                        help="extra options for the embedded reference server started when --host is empty")
    parser.add_argument("--mark-corpus", type=int, default=CORPUS_SIZE, env_var="SWARMGAUGE_MARK_CORPUS",
                        include_in_web_ui=False, help="documents the embedded server is seeded with")


def redact_args(args: list[str]) -> list[str]:
    """The embedded server's options as logged: the value after ``--publish-token`` shown as ``***``."""
    shown, hide_next = [], False
    for arg in args:
        shown.append("***" if hide_next else ("--publish-token=***" if arg.startswith("--publish-token=") else arg))
        hide_next = arg == "--publish-token"
    return shown


def start_embedded_default(environment: Any, *, publish_token: str | None = None) -> TargetProcess | None:
    """Start the reference server when no host was given; None on workers and when a host is set.

    ``publish_token`` (raw) is handed to the child in its environment, never on its command line.
    """
    if environment.host or isinstance(environment.runner, WorkerRunner):
        return None
    parsed = environment.parsed_options
    extra = shlex.split(getattr(parsed, "mark_embedded_args", "") or "")
    corpus = int(getattr(parsed, "mark_corpus", CORPUS_SIZE))
    env = {PUBLISH_TOKEN_ENV: publish_token} if publish_token else None
    server = launch_target("mark", ["--port", "0", "--seed-corpus", str(corpus), *extra], env=env)
    _running.append(server)
    environment.host = server.url
    if parsed is not None:
        parsed.host = server.url
        parsed.mark_insecure = True
    log.info("no --host given: started the embedded reference server at %s (pid %d, %d documents%s)", server.url,
             server.pid, corpus, f", {' '.join(redact_args(extra))}" if extra else "")
    return server


def stop_embedded() -> None:
    while _running:
        server = _running.pop()
        status = server.stop()
        log.info("stopped the embedded reference server (exit %s)", status)


@events.quitting.add_listener
def _on_quitting(**_kwargs: Any) -> None:
    stop_embedded()


atexit.register(stop_embedded)
