"""The Mark locustfiles' embedded default: the reference server, seeded with the deterministic corpus.

``--mark-embedded-args`` passes simulation knobs through (``"--read-delay-ms 10 --backend-rps 160"``); a write
token goes to the child in its environment, never on its command line. The dev certificate needs
``--mark-insecure``, which is switched on (and sent to the workers with the other options).
"""

from __future__ import annotations

import shlex
from typing import Any, NoReturn

from locust import events
from locust.env import Environment
from locust.runners import WorkerRunner

from swarmgauge.core import option_kinds
from swarmgauge.core.options import add_option
from swarmgauge.errors import UsageError, stop_on_usage_error
from swarmgauge.redaction import register_flag_values
from swarmgauge.targets.embedded import SECRET_FLAGS, start_embedded
from swarmgauge.targets.launch import TargetProcess
from swarmgauge.targets.mark.cli import PUBLISH_TOKEN_ENV, build_parser

CORPUS_SIZE = 300
MAX_CORPUS = 100_000


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    add_option(
        parser,
        "--mark-embedded-args",
        kind=option_kinds.embedded_args("mark"),
        default="",
        include_in_web_ui=False,
        help="extra options for the embedded reference server started when --host is empty",
    )
    add_option(
        parser,
        "--mark-corpus",
        kind=option_kinds.POSITIVE_COUNT,
        type=int,
        default=CORPUS_SIZE,
        include_in_web_ui=False,
        help="documents the embedded server is seeded with",
    )


def embedded_options(parsed: Any) -> tuple[list[str], int]:
    """``--mark-embedded-args`` as the server's own parser accepts them, and ``--mark-corpus`` in range.

    Checked before the server starts, so a typo is one line and exit 2, not a launch failure's traceback.
    """
    corpus = getattr(parsed, "mark_corpus", CORPUS_SIZE)
    if isinstance(corpus, bool) or not isinstance(corpus, int) or not 1 <= corpus <= MAX_CORPUS:
        raise UsageError(f"--mark-corpus {corpus!r}: must be a whole number of documents from 1 to {MAX_CORPUS}")
    raw = getattr(parsed, "mark_embedded_args", "") or ""
    try:
        extra = shlex.split(raw)
    except ValueError as exc:
        raise UsageError(f"--mark-embedded-args: cannot split it as a command line ({exc})") from None
    register_flag_values(extra, SECRET_FLAGS)  # run.json, logs and failures show *** for them from now on
    parser = build_parser()

    def refuse(message: str) -> NoReturn:
        head, _, rest = message.partition(": ")
        if head == "unrecognized arguments":  # name the options only: a value next to them may be a token
            message = f"{head}: {' '.join(word for word in rest.split() if word.startswith('-')) or '(values)'}"
        raise UsageError(f"--mark-embedded-args: {message}")

    parser.error = refuse  # type: ignore[method-assign]
    parser.parse_args(["--port", "0", *extra])
    return extra, corpus


def start_embedded_default(environment: Environment, *, publish_token: str | None = None) -> TargetProcess | None:
    """Start the reference Mark server when no host was given; None on workers and when a host is set."""
    parsed = environment.parsed_options
    if environment.host or isinstance(environment.runner, WorkerRunner):
        return None
    found: list[tuple[list[str], int]] = []
    stop_on_usage_error(lambda _environment: found.append(embedded_options(parsed)), environment)
    extra, corpus = found[0]
    env = {PUBLISH_TOKEN_ENV: publish_token} if publish_token else None
    server = start_embedded(
        environment,
        "mark",
        ["--port", "0", "--seed-corpus", str(corpus), *extra],
        env=env,
        describe=f"reference server, {corpus} documents",
    )
    if server is not None and parsed is not None:
        parsed.mark_insecure = True
    return server
