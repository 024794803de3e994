"""A run's files private to its owner (folders 0700, files 0600), and nothing else touched.

Result files can hold what a server echoed back (a token in a failure message), so nobody else on the machine
should read them. Each is made private where it is created: run folders by
:func:`swarmgauge.run_folders.new_run_folder`, every file a listener or the report writes by
:func:`swarmgauge.files.write_atomic`. Locust's own files take no mode, so they are made private here, wherever
they are (under ``--run-dir`` or not): ``--csv`` and ``--logfile`` at ``init`` (Locust opened them just before, and
has written only the CSVs' header and the log's first line); ``--html`` and ``--json-file`` created empty and
private at ``init`` (Locust's ``open(..., "w")`` keeps that mode), the HTML report checked again at ``quitting``
(its name can take ``{u}``, known only then). The process's umask is never changed: the locustfile's own files get
the mode any file of the process gets; a folder created for Locust's files is 0700 (``--csv``'s before Locust makes it,
at the runner's creation), one that exists (``--run-dir``'s parent) keeps its mode.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from locust import events
from locust.env import Environment

from swarmgauge.core import worker_channel
from swarmgauge.files import PRIVATE_FILE, make_private, make_private_folder

logger = logging.getLogger("swarmgauge.privacy")

LOCUST_CSV_SUFFIXES = ("_stats.csv", "_stats_history.csv", "_failures.csv", "_exceptions.csv")
HTML_PLACEHOLDERS = ("{u}", "{r}", "{t}")  # Locust fills these in when it writes the report


def locust_csv_files(options: Any) -> list[Path]:
    prefix = getattr(options, "csv_prefix", None)
    return [Path(prefix + suffix) for suffix in LOCUST_CSV_SUFFIXES] if prefix else []


def _make_private(path: Path) -> None:
    try:
        if path.exists():
            make_private(path)
    except OSError as exc:  # another owner's file: say so, the run goes on
        logger.warning("could not make %s private: %s", path, exc)


def _create_private_folders(folder: Path) -> None:
    """``folder`` and any missing parent, each one created here 0700 (an existing folder keeps its mode)."""
    missing = [folder, *folder.parents]
    missing = [f for f in missing if not f.exists()]
    for each in reversed(missing):
        try:
            make_private_folder(each)
        except FileExistsError:  # made meanwhile by another process: its mode is its own
            continue


def _create_private(path: Path) -> None:
    """An empty file with mode 0600 (an existing one keeps its contents) for Locust to write into later."""
    try:
        _create_private_folders(path.parent)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, PRIVATE_FILE))
        make_private(path)
    except OSError as exc:
        logger.warning("could not create %s private: %s", path, exc)


def protect_locust_outputs(options: Any, *, before_run: bool) -> None:
    """Locust's ``--csv``, ``--logfile``, ``--html`` and ``--json-file`` files made (or created) private, wherever
    they are."""
    logfile = getattr(options, "logfile", None)
    for path in [*locust_csv_files(options), *([Path(logfile)] if logfile else [])]:
        _make_private(path)
    json_file = getattr(options, "json_file", None)
    written_at_exit = [f"{json_file}.json"] if json_file else []  # Locust adds the suffix, after quitting
    html = getattr(options, "html_file", None)
    if html and not (before_run and any(mark in html for mark in HTML_PLACEHOLDERS)):
        written_at_exit.append(html)
    for name in written_at_exit:
        (_create_private if before_run else _make_private)(Path(name))


def _private_csv_folder(environment: Environment, _role: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The ``--csv`` folder, when missing, created 0700 before Locust makes it with the umask's mode."""
    prefix = getattr(environment.parsed_options, "csv_prefix", None)
    folder = os.path.dirname(prefix) if isinstance(prefix, str) else ""
    if folder:
        try:
            _create_private_folders(Path(folder))
        except OSError as exc:  # Locust's own makedirs then says what is wrong
            logger.warning("could not create %s private: %s", folder, exc)
    return kwargs


worker_channel.before_runner_creation(_private_csv_folder)


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    options = getattr(environment, "parsed_options", None)
    if options is not None:
        protect_locust_outputs(options, before_run=True)


@events.quitting.add_listener
def _on_quitting(environment: Environment, **_kwargs: Any) -> None:
    options = getattr(environment, "parsed_options", None)
    if options is not None:
        protect_locust_outputs(options, before_run=False)
