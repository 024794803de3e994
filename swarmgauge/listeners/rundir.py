"""The run directory: one folder per run that a report can be rendered from at any time later.

Layout: ``--run-dir DIR`` is the parent of every run's own folder. Each run (headless or one start -> stop in the web
UI) writes into ``DIR/<UTC start, YYYYmmddTHHMMSSZ>`` (``-2``, ``-3``... appended when two runs start in the same
second), and ``DIR/latest`` is a symlink to the newest run's folder, so nothing is ever overwritten.
:func:`resolve` turns ``DIR``, ``DIR/latest`` or a run folder into the run folder (``swarmgauge report`` takes
any). :func:`run_dir` is the current run's folder, created on the first write once the run started (``test_start``, or a
web UI START); it is ``None`` before that, once the run closed (until the next START), without ``--run-dir`` and on
workers. :func:`close_run` closes it (at ``quitting``, or at STOP / the plan's end in the web UI).

Each run folder collects Locust's CSVs, ``steps.csv`` (``listeners.steps``), ``slo.json`` (``listeners.slo``),
``resources.csv`` (``listeners.resources``) and ``run.json`` (options with secrets redacted, locustfile, shape and
plan, versions, the workers and User classes that took part (``listeners.participants``), start/end, exit code).
The run folder is 0700 and every file in it 0600, set where each is created (``listeners.privacy`` says how).
Only the master (or a local run) writes here: workers get the same options from the master, so :func:`run_dir` is
``None`` on a worker. Every file is written atomically, so a reader never sees half a file even when the run is
killed.

``--run-dir`` is checked at ``init``, before any user and any embedded target starts
(:func:`swarmgauge.run_folders.check_parent`: a folder, writable, room on its disk), so a run never measures for
minutes and then finds it cannot keep what it measured. ``run.json`` says ``state: running`` with this process's pid
from the start, and ``ended`` once the folder is closed: ``swarmgauge report`` on a run still "running" whose process
is gone marks it ended by SIGKILL or a crash (``reports/run_state.py``); ``steps.csv`` is rewritten as each step
ends (``listeners/step_checkpoints.py``), so such a run keeps the steps it finished.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import logging
import platform
import sys
import time
from pathlib import Path
from typing import Any

from locust import events, log
from locust import stats as locust_stats
from locust.env import Environment
from locust.runners import MasterRunner, WorkerRunner

from swarmgauge.core import hooks, run_context
from swarmgauge.core.lifecycle import at_end
from swarmgauge.core.options import add_option
from swarmgauge.core.run_context import PerEnvironment, RunContext
from swarmgauge.errors import stop_on_usage_error
from swarmgauge.files import write_atomic
from swarmgauge.listeners import participants
from swarmgauge.listeners.run_redaction import (
    initialised,
    keep_parser,
    note_initialised,
    redact,
    redact_argv,
    redact_tree,
    redacted_options,
)
from swarmgauge.run_folders import (  # noqa: F401 - resolve is part of this API
    ENDED,
    LATEST,
    RUNNING,
    check_parent,
    is_inside,
    new_run_folder,
    process_identity,
    resolve,
)

logger = logging.getLogger("swarmgauge.rundir")


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    group = parser  # argument groups drop Locust's include_in_web_ui/is_secret keywords
    add_option(
        group,
        "--run-dir",
        type=str,
        default=None,
        include_in_web_ui=True,
        help="Collect CSVs, steps.csv, slo.json, run.json and the report in this directory",
    )
    add_option(
        group,
        "--no-report",
        action="store_true",
        default=False,
        include_in_web_ui=True,
        help="Do not render report.md/report.html into the run directory at the end (default: render)",
    )
    group.add_argument(
        "--report",
        dest="no_report",
        action="store_false",
        include_in_web_ui=False,
        help="Render the report at the end of a run with a run directory (the default)",
    )
    keep_parser(parser)


class _RunFolder(PerEnvironment):
    """Owned by ``listeners/rundir.py``: which folder the current run writes to; ``closed`` until the next run opens once a run was closed."""

    def __init__(self) -> None:
        self.folder: Path | None = None
        self.started = False
        self.closed = False
        self.lasting_info: set[str] | None = None


def _run_folder(environment: Environment) -> _RunFolder:
    return _RunFolder.of(environment)


def parent_dir(environment: Environment) -> Path | None:
    """``--run-dir`` as given (the parent of the run folders), or None when not asked for or on a worker."""
    if isinstance(getattr(environment, "runner", None), WorkerRunner):
        return None
    options = getattr(environment, "parsed_options", None)
    value = getattr(options, "run_dir", None) if options is not None else None
    return Path(value) if value else None


def run_dir(environment: Environment) -> Path | None:
    """The current run's folder (created on first use), or None: no ``--run-dir``, a worker, no run started yet
    (a web UI before its first START), or the run closed."""
    parent = parent_dir(environment)
    state = _run_folder(environment)
    if parent is None or state.closed or not state.started:
        return None
    if state.folder is None or state.folder.parent != parent:
        state.folder = new_run_folder(parent)
    return state.folder


def open_new_run(environment: Environment) -> None:
    """Start a fresh run (a new web UI start): a new folder on first write, and only start-up facts kept in run.json."""
    state = _run_folder(environment)
    info = _info(environment)
    if state.lasting_info is not None:
        for key in [k for k in info if k not in state.lasting_info]:
            del info[key]
    state.folder, state.closed, state.started = None, False, True


def run_is_closed(environment: Environment) -> bool:
    return _run_folder(environment).closed


def _info(environment: Environment) -> dict[str, Any]:
    return RunContext.of(environment).run_info


def run_info(environment: Environment) -> dict[str, Any]:
    """What this run added to ``run.json`` so far (a copy)."""
    return dict(_info(environment))


def add_run_info(environment: Environment, key: str, value: Any) -> None:
    """Merge a JSON-able value into ``run.json``: dicts are merged key by key, anything else replaces."""
    info = _info(environment)
    if isinstance(value, dict) and isinstance(info.get(key), dict):
        info[key].update(value)
    else:
        info[key] = value


def exit_code_as_locust_decides(environment: Environment) -> int:
    """The exit code Locust's ``shutdown`` will pick: ours if set, then errors, then crashes, else 0."""
    if environment.process_exit_code is not None:
        return int(environment.process_exit_code)
    runner = environment.runner
    if runner is not None and (len(runner.errors) or len(runner.exceptions)):
        return int(getattr(environment.parsed_options, "exit_code_on_error", 1))
    if log.unhandled_greenlet_exception:
        return 2
    return 0


def _versions() -> dict[str, str]:
    return dict(_installed_versions())


@functools.cache
def _installed_versions() -> tuple[tuple[str, str], ...]:
    """Looked up once per process: each lookup scans the installed distributions, and run.json is rewritten as each
    step ends, while users are timing requests."""
    from importlib import metadata

    found = [("python", platform.python_version())]
    for dist in ("locust", "swarmgauge", "hdrhistogram", "gevent", "aioquic", "qh3", "mcp"):
        try:
            found.append((dist, metadata.version(dist)))
        except metadata.PackageNotFoundError:
            continue
    return tuple(found)


def _locustfile_classes(environment: Environment) -> list[str]:
    """Every User class the locustfile offers (a ``--class`` selection or a plan may run fewer)."""
    available = getattr(environment, "available_user_classes", None) or {}
    return sorted(available) if available else sorted(u.__name__ for u in environment.user_classes)


def _workers(runner: Any, environment: Environment) -> int:
    """A master's workers that took part (its count at the end is 0: they quit first); Locust's 1 when local."""
    if isinstance(runner, MasterRunner):
        return participants.peak_workers(environment)
    return int(getattr(runner, "worker_count", 0) or 0)


def build_run_json(environment: Environment, *, final: bool) -> dict[str, Any]:
    runner = environment.runner
    shape = environment.shape_class
    doc: dict[str, Any] = {
        "locustfile": getattr(environment.parsed_options, "locustfile", None),
        "user_classes": participants.classes_that_ran(environment),
        "locustfile_user_classes": _locustfile_classes(environment),
        "shape": type(shape).__name__ if shape is not None else None,
        "plan": getattr(shape, "plan_summary", lambda: None)() if shape is not None else None,
        "host": redact(environment.host or "", environment),
        "options": redacted_options(environment),
        "versions": _versions(),
        "runner": type(runner).__name__ if runner is not None else None,
        "workers": _workers(runner, environment) if runner is not None else 0,
        "argv": [redact(a, environment) for a in redact_argv(sys.argv)],
    }
    doc.update(_info(environment))
    if final:
        doc["exit_code"] = exit_code_as_locust_decides(environment)
    return doc


def run_json_text(environment: Environment, *, final: bool) -> str:
    """``run.json`` as written: the run's record made JSON-safe and redacted."""
    doc = redact_tree(json.loads(json.dumps(build_run_json(environment, final=final), default=str)), environment)
    return json.dumps(doc, indent=2, sort_keys=True)


def write_run_json(environment: Environment, *, final: bool) -> None:
    directory = run_dir(environment)
    if directory is None:
        return
    write_atomic(directory / "run.json", run_json_text(environment, final=final))


def _write_locust_csvs(environment: Environment, stats: Path, failures: Path, exceptions: Path) -> None:
    """Locust's three CSV tables as they stand now, redacted, each written whole (a reader never sees half), mode
    0600 wherever they are."""
    writer = locust_stats.StatsCSV(environment, locust_stats.PERCENTILES_TO_REPORT)
    for path, method in (
        (stats, writer.requests_csv),
        (failures, writer.failures_csv),
        (exceptions, writer.exceptions_csv),
    ):
        buffer = io.StringIO()
        method(csv.writer(buffer))
        write_atomic(path, redact(buffer.getvalue(), environment))


def _locust_csvs(environment: Environment, directory: Path) -> None:
    _write_locust_csvs(
        environment,
        directory / "locust_stats.csv",
        directory / "locust_failures.csv",
        directory / "locust_exceptions.csv",
    )


@events.quit.add_listener
def _final_csv_prefix_files(**_kwargs: Any) -> None:
    """Locust rewrites its ``--csv`` tables once a second and not at the end, so they miss up to a second of the
    run's last requests; after the runner has quit (nothing is measured any more) they get the final figures."""
    for environment in initialised():
        options = run_context.options(environment)
        prefix = getattr(options, "csv_prefix", None)
        if not prefix or isinstance(getattr(environment, "runner", None), WorkerRunner):
            continue
        try:
            _write_locust_csvs(
                environment,
                Path(f"{prefix}_stats.csv"),
                Path(f"{prefix}_failures.csv"),
                Path(f"{prefix}_exceptions.csv"),
            )
        except OSError as exc:
            logger.warning("could not write the final --csv tables: %s", exc)


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    note_initialised(environment)
    add_run_info(environment, "started_at", None)
    parent = parent_dir(environment)
    if parent is not None:  # before any user and any embedded target (a locustfile's init listeners come later)
        stop_on_usage_error(lambda _env: check_parent(parent), environment)


@events.test_start.add_listener
def _on_test_start(environment: Environment, **_kwargs: Any) -> None:
    state = _run_folder(environment)
    if state.lasting_info is None:
        state.lasting_info = set(_info(environment))  # what init put there (targets, ...) outlives one UI run
    state.started = True
    participants.begin(environment)
    if run_dir(environment) is None:
        return
    add_run_info(environment, "started_at", time.time())
    add_run_info(environment, "state", RUNNING)  # a report that finds the process gone says it was killed
    for key, value in process_identity().items():
        add_run_info(environment, key, value)
    write_run_json(environment, final=False)


@at_end("run folder closed")
def close_run(environment: Environment) -> Path | None:
    """Write this run's closing files (Locust's CSVs, the final run.json, the report) and close its folder."""
    directory = run_dir(environment)
    if directory is None:
        return None
    add_run_info(environment, "ended_at", time.time())
    add_run_info(environment, "state", ENDED)
    _info(environment).setdefault("ended_by", None)  # listeners.signals names the signal that ended it
    try:
        _locust_csvs(environment, directory)
    except Exception as exc:  # noqa: BLE001 - a CSV problem must not lose run.json
        logger.warning("could not write Locust's CSVs into %s: %s", directory, exc)
    write_run_json(environment, final=True)
    if not getattr(environment.parsed_options, "no_report", False):
        try:
            hooks.render_report(directory)
            logger.info("report written to %s", directory / "report.md")
        except Exception as exc:  # noqa: BLE001 - the run's data is already safe on disk
            logger.warning("could not render the report in %s: %s", directory, exc)
    state = _run_folder(environment)
    state.closed = True
    return directory


hooks.add_run_info.implement(add_run_info)
hooks.run_dir.implement(run_dir)
