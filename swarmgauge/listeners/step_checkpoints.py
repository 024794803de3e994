"""``steps.csv`` written as each step ends, so a run killed without warning keeps the steps it finished.

SIGKILL (the OOM killer) runs no handler: a run that writes its steps only at the end loses them all. So when a step
ends (the next one is announced), the master (or the local runner) waits until that step's figures are in and then
rewrites ``steps.csv`` with the steps ended so far, and ``run.json`` (still ``state: running``) with their records:
``swarmgauge report`` renders them from those two files. "In" means: :data:`SETTLE_SECONDS` after the boundary (a
request in flight across it counts in the step it started in, and most finish within that), and on a master, one
report from every worker sent after that (Locust's workers report every 3 s); a worker that sends none within
:data:`WORKER_WAIT_SECONDS` is not waited for. A request slower than that lands in the next checkpoint, and every
figure in the final ``steps.csv``, which the run's end writes as before (``listeners.steps.finalize``); a checkpoint
never writes over it, nor into a later run's folder (the web UI's next START).

Only ended steps are written: the step under way is not a step's figures yet. Each step's rows are worked out once,
when it ended, and the files are written off the event loop (:func:`write_ended_steps`), so a checkpoint does not
hold the requests in flight; each file is replaced atomically.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import gevent
from locust import events
from locust.env import Environment
from locust.runners import MasterRunner, WorkerRunner

from swarmgauge.core import run_context
from swarmgauge.core.hooks import StepInfo, step_changed, step_counter_names
from swarmgauge.core.locust_compat import live_worker_ids
from swarmgauge.core.run_context import PerEnvironment
from swarmgauge.files import discard, stage
from swarmgauge.listeners import rundir, step_state, steps
from swarmgauge.listeners.steps_csv import step_rows, write_rows

logger = logging.getLogger("swarmgauge.step_checkpoints")

SETTLE_SECONDS = 1.0
WORKER_WAIT_SECONDS = 2 * step_state.WORKER_REPORT_SECONDS + SETTLE_SECONDS
POLL_SECONDS = 0.2


class _Checkpoint(PerEnvironment):
    """Owned by ``listeners/step_checkpoints.py``: the latest step boundary, the workers whose figures since it are
    not in yet, and the rows of the steps already written (each step's worked out once, when it ended)."""

    def __init__(self) -> None:
        self.boundary = 0.0
        self.waiting: set[str] = set()
        self.rows: dict[int, list[dict[str, Any]]] = {}


def write_ended_steps(environment: Environment, ended_before: int) -> bool:
    """Write ``steps.csv`` with the steps before index ``ended_before`` and ``run.json`` with their records, unless the
    run's final tables are written or its folder closed; returns whether it wrote.

    It runs while users are timing requests, so it holds the event loop as briefly as it can: only the steps not
    written yet are worked out (a percentile walks a histogram in Python), and the files are staged (written and
    fsynced) in gevent's thread pool, then put in place here, in one go, after the run is checked to be still open."""
    directory = rundir.run_dir(environment)
    if directory is None or steps.finalized(environment):
        return False
    state = _Checkpoint.of(environment)
    new = {index for index in range(ended_before) if index not in state.rows}
    infos = steps.step_infos(environment)
    fresh = step_rows(steps.merged(environment), infos, time.time(), step_counter_names(), only_steps=new)
    for row in fresh:
        state.rows.setdefault(int(row["step"]), []).append(row)
    rows = [row for index in sorted(state.rows) if index < ended_before for row in state.rows[index]]
    if not rows:
        return False
    rundir.add_run_info(environment, "steps", [asdict(info) for info in infos if info.index < ended_before])
    files = [  # run.json first: a steps.csv seen has its steps' records beside it
        (directory / "run.json", rundir.run_json_text(environment, final=False)),
        (directory / "steps.csv", write_rows(rows)),
    ]
    staged = gevent.get_hub().threadpool.apply(_stage_all, (files,))
    if rundir.run_dir(environment) != directory or steps.finalized(environment):
        for tmp, _path in staged:  # the run's end wrote the final files meanwhile: never put older ones over them
            discard(tmp)
        return False
    for tmp, path in staged:
        os.replace(tmp, path)
    return True


def _stage_all(files: list[tuple[Path, str]]) -> list[tuple[str, Path]]:
    staged: list[tuple[str, Path]] = []
    try:
        for path, text in files:
            staged.append((stage(path, text), path))
    except BaseException:
        for tmp, _path in staged:
            discard(tmp)
        raise
    return staged


def _write_when_in(environment: Environment, ended_before: int, folder: Any) -> None:
    state = _Checkpoint.of(environment)
    gevent.sleep(SETTLE_SECONDS)
    deadline = time.monotonic() + WORKER_WAIT_SECONDS
    while state.waiting and time.monotonic() < deadline:
        gevent.sleep(POLL_SECONDS)
    steps.merge_local_now(environment)
    if rundir.run_dir(environment) != folder:
        return  # the run closed meanwhile (its final tables are written), or a new one started
    try:
        write_ended_steps(environment, ended_before)
    except OSError as exc:  # the final write at the run's end tries again
        logger.warning("could not write the ended steps into %s: %s", folder, exc)


def _on_step_changed(environment: Environment, step: StepInfo, **_kwargs: Any) -> None:
    runner = environment.runner
    if isinstance(runner, WorkerRunner):
        return
    if step.index == 0:
        _Checkpoint.renew(environment)  # a new run (the web UI's next START): no step of it written yet
        return
    folder = rundir.run_dir(environment)
    if folder is None:
        return
    state = _Checkpoint.of(environment)
    state.boundary = time.time()
    state.waiting = set(live_worker_ids(runner)) if isinstance(runner, MasterRunner) else set()
    gevent.spawn(_write_when_in, environment, step.index, folder)


def _on_worker_report(environment: Environment, client_id: str, data: dict[str, Any], **_kwargs: Any) -> None:
    """A worker's figures sent after the boundary has settled: it has reported the ended step's requests."""
    state = _Checkpoint.of(environment)
    if state.waiting and time.time() >= state.boundary + SETTLE_SECONDS:
        state.waiting.discard(str(client_id))


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    if isinstance(environment.runner, MasterRunner):
        run_context.listen(environment, environment.events.worker_report, _on_worker_report)


step_changed.add_listener(_on_step_changed)
