"""``--feeder FILE``: test data for any User, one row per iteration (``hooks.next_row(user)``).

Modes (``--feeder-mode``):

- ``shared``: every load-generating process reads the file and hands its rows to its users round robin, in file
  order; two workers may use the same row (k6's SharedArray, Gatling's ``circular``).
- ``unique``: each row is used once across the whole run. On a distributed run only the master reads the file; a
  worker asks it for ``--feeder-batch`` rows when its users have drawn what it holds, and the master answers with the
  next rows of the file (custom messages ``swarmgauge_feeder_want`` / ``swarmgauge_feeder_rows``): no row is sent
  twice. Workers never need the file.

When the rows run out (``--feeder-exhausted``): ``recycle`` starts a new pass (in ``unique`` mode every row is used
once more before any is used a third time), ``stop`` stops each user that asks for more (Locust's ``StopUser``) and
ends the run cleanly through the plan's own end (``hooks.end_plan``), once every worker
has drawn the rows it holds (at most :data:`DRAIN_SECONDS` after the first ran out). The reason is logged and
written to ``run.json`` (``feeder.stopped``). Defaults: ``recycle`` for ``shared``, ``stop`` for ``unique``.

A worker that is lost keeps the rows it was sent: they are never reissued (that could use a row twice). The master
counts rows sent per worker and each worker reports how many it used; ``run.json`` ``feeder.workers`` lists both, and
``feeder.lost`` names a lost worker with the rows it held unused at its last report.

A ``--plan`` file's ``feeder:`` key sets the options the run was not given (``listeners/feeder_plan.py``).

Bad input stops the run before any load (exit 2, one line with the file and the line): a missing file, a malformed
row, or a column a User needs (its ``feeder_columns``) that the file lacks.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

import gevent
import gevent.event
from locust import events
from locust.env import Environment
from locust.exception import StopUser
from locust.runners import MasterRunner, WorkerRunner

from swarmgauge.core import feeder_settings, hooks, option_kinds
from swarmgauge.core.feeder_rows import RowDealer, check_columns, check_json_objects, read_rows
from swarmgauge.core.feeder_settings import EXHAUSTED, MAX_BATCH, MODES, needed_columns, settings_from
from swarmgauge.core.locust_compat import default_stop_timeout, has_message_handler, live_worker_ids
from swarmgauge.core.options import add_option
from swarmgauge.errors import UsageError, stop_on_usage_error
from swarmgauge.listeners import feeder_plan
from swarmgauge.listeners.feeder_state import Feeder, FeederState, state_of, summary

logger = logging.getLogger("swarmgauge.feeder")

WANT_MESSAGE = "swarmgauge_feeder_want"
ROWS_MESSAGE = "swarmgauge_feeder_rows"
OUT_MESSAGE = "swarmgauge_feeder_out"
REPORT_KEY = "swarmgauge_feeder"
ASK_SECONDS = 30.0  # a worker waits this long for the master's answer before its users stop
DRAIN_SECONDS = 15.0  # after the first worker ran out, the others have this long to draw what they hold
POLL_SECONDS = 0.1
FINAL_REPORT_SECONDS = 10.0
DEFAULT_STOP_TIMEOUT = 10.0  # stop mode: an iteration that drew a row finishes before the users stop


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    add_option(parser, "--feeder", default="", include_in_web_ui=True, help="CSV or JSON Lines file of test data")
    add_option(
        parser,
        "--feeder-mode",
        default="",
        choices=["", *MODES],
        include_in_web_ui=True,
        help="shared (every process round robin over all rows) or unique (each row once across the whole run); "
        "default shared",
    )
    add_option(
        parser,
        "--feeder-exhausted",
        default="",
        choices=["", *EXHAUSTED],
        include_in_web_ui=True,
        help="when the rows run out: recycle (a new pass) or stop (end the run); default recycle if shared, else stop",
    )
    add_option(
        parser,
        "--feeder-batch",
        type=int,
        kind=option_kinds.POSITIVE_COUNT,
        default=None,
        include_in_web_ui=True,
        help=f"unique mode: rows a worker asks the master for at a time (1..{MAX_BATCH}; default {feeder_settings.DEFAULT_BATCH})",
    )


def load(environment: Environment) -> None:
    """At init: read and check the file where it is needed, before any user spawns (UsageError on bad input)."""
    settings = settings_from(getattr(environment, "parsed_options", None))
    if settings is None:
        return
    state = FeederState(settings)
    runner = environment.runner
    distributed_unique_worker = isinstance(runner, WorkerRunner) and settings.mode == "unique"
    if not distributed_unique_worker:
        state.rows = read_rows(settings.path)
        user_classes = list(environment.user_classes)
        for column, who in needed_columns(user_classes).items():
            check_columns(state.rows, [column], who)
        for column, who in needed_columns(user_classes, "feeder_json_columns").items():
            check_json_objects(state.rows, [column], who)
        state.dealer = RowDealer(len(state.rows), recycle=not settings.stops)
    if settings.stops:
        default_stop_timeout(environment, DEFAULT_STOP_TIMEOUT)
    Feeder.of(environment).state = state


def next_row(user: Any) -> dict[str, Any] | None:
    """The row for this iteration of ``user``; None without a feeder; StopUser once rows ran out in stop mode."""
    environment = user.environment
    state = state_of(environment)
    if state is None:
        return None
    if state.held or state.dealer is None:
        row = _from_master(environment, state)
    else:
        numbers = state.dealer.deal(1)
        if not numbers:
            _ran_out(environment, state)
            raise StopUser()
        assert state.rows is not None
        row = state.rows.rows[numbers[0]]
    state.used += 1
    return dict(row)


def _from_master(environment: Environment, state: FeederState) -> dict[str, Any]:
    """A worker's next row in unique mode: from what it holds, else from a batch it asks the master for."""
    deadline = time.monotonic() + ASK_SECONDS
    while not state.held:
        if state.out or time.monotonic() >= deadline:
            if not state.out:
                logger.error("no feeder rows from the master in %.0f s: this worker's users stop", ASK_SECONDS)
                state.out = True
            raise StopUser()
        if state.asking is None:
            state.asking = gevent.event.Event()
            environment.runner.send_message(WANT_MESSAGE, {"wanted": state.settings.batch})  # type: ignore[union-attr]
        state.asking.wait(timeout=max(0.0, deadline - time.monotonic()))
    return state.held.popleft()


def _on_rows(environment: Environment, msg: Any, **_kwargs: Any) -> None:
    """Worker: the master's answer; an empty one means no row is left for this run."""
    state = state_of(environment)
    if state is None:
        return
    rows = list(msg.data.get("rows") or [])
    state.held.extend(rows)
    if not rows:
        state.out = True
    asking, state.asking = state.asking, None
    if asking is not None:
        asking.set()


def _on_want(environment: Environment, msg: Any, **_kwargs: Any) -> None:
    """Master: deal the next rows to the worker that asked; none left means that worker is out."""
    state = state_of(environment)
    if state is None or state.dealer is None or state.rows is None:
        return
    worker = str(msg.node_id)
    wanted = min(int((msg.data or {}).get("wanted", 1)), MAX_BATCH)
    numbers = state.dealer.deal(wanted)
    rows = [state.rows.rows[n] for n in numbers]
    state.sent[worker] = state.sent.get(worker, 0) + len(rows)
    environment.runner.send_message(ROWS_MESSAGE, {"rows": rows}, client_id=worker)  # type: ignore[union-attr]
    if not rows:
        _worker_out(environment, state, worker)


def _on_out(environment: Environment, msg: Any, **_kwargs: Any) -> None:
    """Master: a worker in shared stop mode finished its pass over the file."""
    state = state_of(environment)
    if state is not None:
        _worker_out(environment, state, str(msg.node_id))


def _ran_out(environment: Environment, state: FeederState) -> None:
    """This process's own rows ran out (stop mode): a worker tells the master, a local run ends itself."""
    if state.out:
        return
    state.out = True
    if isinstance(environment.runner, WorkerRunner):
        environment.runner.send_message(OUT_MESSAGE, {"used": state.used})
    else:
        gevent.spawn(stop_run, environment, _reason(state))


def _worker_out(environment: Environment, state: FeederState, worker: str) -> None:
    first = not state.out_workers
    state.out_workers.add(worker)
    if first:
        gevent.spawn(_end_when_drained, environment, state)


def _end_when_drained(environment: Environment, state: FeederState) -> None:
    """Master: once every live worker is out of rows (bounded by DRAIN_SECONDS), end the run."""
    deadline = time.monotonic() + DRAIN_SECONDS
    while time.monotonic() < deadline:
        if set(live_worker_ids(environment.runner)) <= state.out_workers:
            break
        gevent.sleep(POLL_SECONDS)
    stop_run(environment, _reason(state))


def _reason(state: FeederState) -> str:
    settings = state.settings
    count = len(state.rows) if state.rows is not None else "its"
    if settings.mode == "unique":
        return f"feeder rows ran out: {settings.path}: {count} rows, each used once (--feeder-exhausted stop)"
    return f"feeder rows ran out: {settings.path}: one pass over {count} rows (--feeder-exhausted stop)"


def stop_run(environment: Environment, reason: str) -> None:
    """End the run the way the end of its plan does, saying why in the log and ``run.json``."""
    state = state_of(environment)
    if state is None or state.stopping:
        return
    state.stopping, state.stopped = True, {"reason": reason, "at": time.time()}
    hooks.add_run_info(environment, "feeder", {"stopped": state.stopped})
    logger.info("swarmgauge: run stopped: %s", reason)
    sys.stderr.write(f"swarmgauge: run stopped: {reason}\n")
    if hooks.end_plan(environment):
        return
    hooks.end_run(environment)
    hooks.collect_final_reports(environment, FINAL_REPORT_SECONDS, POLL_SECONDS)
    hooks.stop_locust(environment)


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    stop_on_usage_error(feeder_plan.take_plan_feeder, environment)
    stop_on_usage_error(load, environment)
    runner = environment.runner
    handlers = {}
    if isinstance(runner, WorkerRunner):
        handlers[ROWS_MESSAGE] = _on_rows
    elif isinstance(runner, MasterRunner):
        handlers[WANT_MESSAGE], handlers[OUT_MESSAGE] = _on_want, _on_out
    for message_type, handler in handlers.items():
        if runner is not None and not has_message_handler(runner, message_type):
            runner.register_message(message_type, handler)
    _envs.append(environment)


_envs: list[Environment] = []


@events.test_start.add_listener
def _on_test_start(environment: Environment, **_kwargs: Any) -> None:
    begin_run(environment)


def begin_run(environment: Environment) -> None:
    """Each run starts with every row unused (a web UI's second START is a new run).

    A worker gets the master's ``--feeder`` options with its first spawn, after init, so it loads its part here.
    The master checked the file before any load; a process that cannot read it now (a worker in shared mode without
    the file, a file changed since) says so in its log and its users stop at their first draw.
    """
    state = state_of(environment)
    if state is not None and not _touched(state) and _same_settings(state, environment):
        return
    Feeder.of(environment).state = None
    try:
        load(environment)
    except UsageError as exc:
        logger.error("swarmgauge: %s: this process's users stop", exc)
        settings = settings_from(environment.parsed_options)
        if settings is not None:
            Feeder.of(environment).state = FeederState(settings, out=True)


def _same_settings(state: FeederState, environment: Environment) -> bool:
    """The options still name the feeder the state was loaded for (a web START may name another plan's rows)."""
    try:
        return state.settings == settings_from(environment.parsed_options)
    except UsageError:
        return False


def _touched(state: FeederState) -> bool:
    dealt = state.dealer.dealt if state.dealer is not None else 0
    return bool(state.used or state.out or state.sent or state.held or dealt or state.stopping)


@events.report_to_master.add_listener
def _on_report_to_master(client_id: str, data: dict[str, Any]) -> None:
    for environment in _envs[-1:]:
        state = state_of(environment)
        if state is not None:
            data[REPORT_KEY] = {"used": state.used, "held": len(state.held)}


@events.worker_report.add_listener
def _on_worker_report(client_id: str, data: dict[str, Any]) -> None:
    report = data.get(REPORT_KEY)
    for environment in _envs[-1:]:
        state = state_of(environment)
        if state is not None and report:
            state.reported[str(client_id)] = dict(report)


@events.test_stop.add_listener
def _on_test_stop(environment: Environment, **_kwargs: Any) -> None:
    _record_summary(environment)


@events.quitting.add_listener
def _on_quitting(environment: Environment, **_kwargs: Any) -> None:
    _record_summary(environment)


def _record_summary(environment: Environment) -> None:
    """Into ``run.json`` at ``test_stop`` and again at ``quitting`` (whichever the run folder closes after)."""
    if isinstance(environment.runner, WorkerRunner):
        return
    info = summary(environment)
    if info is None:
        return
    hooks.add_run_info(environment, "feeder", info)
    state = state_of(environment)
    if info.get("lost") and state is not None and not state.lost_said:
        state.lost_said = True
        logger.warning("feeder rows held by lost workers are not reissued: %s", info["lost"])


hooks.next_row.implement(next_row)
