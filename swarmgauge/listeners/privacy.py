"""Every file of a run private to its owner: run folders 0700, files 0600, Locust's own ``--csv``/``--html`` too.

Result files can hold what a server echoed back (a token in a failure message), so nobody else on the machine
should read them. At ``init`` the process's umask becomes 077, so every file and folder it creates from then on
(the run folder, Locust's HTML report, the report) is private; Locust opens its ``--csv`` files before ``init``,
so those and an existing run folder are made private here too.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from locust import events
from locust.env import Environment

logger = logging.getLogger("swarmgauge.privacy")

PRIVATE_UMASK = 0o077
PRIVATE_FILE = 0o600
PRIVATE_FOLDER = 0o700
LOCUST_CSV_SUFFIXES = ("_stats.csv", "_stats_history.csv", "_failures.csv", "_exceptions.csv")


def make_private(path: Path) -> None:
    try:
        if path.is_dir():
            path.chmod(PRIVATE_FOLDER)
        elif path.is_file():
            path.chmod(PRIVATE_FILE)
    except OSError as exc:  # another owner's file: say so, the run goes on
        logger.warning("could not make %s private: %s", path, exc)


def make_run_private(options: Any) -> None:
    """The run folder and Locust's CSV files that already exist, made private."""
    run_dir = getattr(options, "run_dir", None)
    if run_dir and Path(run_dir).is_dir():
        make_private(Path(run_dir))
        for path in Path(run_dir).rglob("*"):
            make_private(path)
    prefix = getattr(options, "csv_prefix", None)
    if prefix:
        for suffix in LOCUST_CSV_SUFFIXES:
            make_private(Path(prefix + suffix))


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    os.umask(PRIVATE_UMASK)
    options = getattr(environment, "parsed_options", None)
    if options is not None:
        make_run_private(options)
