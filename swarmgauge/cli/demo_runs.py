"""The Locust processes of ``swarmgauge demo``: each workload's started, let go and waited for, the next one started
while the one before it ends.

A workload's process spent seconds starting (the interpreter, Locust, its embedded targets) and seconds ending (its
files, its targets stopped), one workload after the other. Each process now runs with ``--handoff``
(``listeners/handoff.py``): it starts up and waits for its go before any load, and says when its own measurements are
over; the demo then starts the next workload's process, and lets it go once this one has exited. Start-up overlaps
the end before it, never a load or a measurement.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol

from swarmgauge.cli.demo_pages import Workload
from swarmgauge.cli.demo_phases import Phases
from swarmgauge.cli.demo_zygote import ForkedProcess, Zygote

#: start-up, teardown and the run's own report come on top of a workload's planned load time
OVERHEAD_S = 240.0
#: how often the demo looks at a running workload (its exit, its handoff): the next start-up waits for the look after
#: load-done and the next go for the look after the exit (0.05 s was 25 ms of each twice, 34 times); a look is a stat
#: and a poll, far under 1 % of a core at this rate
POLL_S = 0.01
GO, LOAD_DONE = "go", "load-done"  # the files of listeners/handoff.py
READY, LOAD_END = "ready", "load-end"  # its phases' marks: start-up done, users stopped


@dataclass
class StartedRun:
    """A workload's Locust process, started and waiting for its go (or already let go)."""

    workload: Workload
    process: subprocess.Popen | ForkedProcess
    handoff: Path
    output: IO[str] | None
    files: contextlib.ExitStack
    started: float = field(default_factory=time.monotonic)
    let_go: float | None = None
    started_at: float = field(default_factory=time.time)  # wall clock, as the handoff files' times
    let_go_at: float | None = None

    def load_done(self) -> bool:
        """Its measurements are over (it said so), or it has ended."""
        return (self.handoff / LOAD_DONE).exists() or self.process.poll() is not None

    def ready(self) -> bool:
        """Its start-up is done (it waits for its go), or it has ended."""
        return (self.handoff / READY).exists() or self.process.poll() is not None

    def turn(self) -> None:
        """The demo's turn has come to this run: from here its start-up adds to the demo's time ("waited")."""
        if self.let_go is None:
            self.let_go = time.monotonic()
            self.let_go_at = time.time()

    def go(self) -> None:
        self.turn()
        (self.handoff / GO).touch()

    def phases(self, exited: float | None = None) -> Phases:
        """Its phases so far, from the handoff files' times (``exited``: when its process was seen gone)."""

        def mark(name: str) -> float | None:
            try:
                return (self.handoff / name).stat().st_mtime
            except OSError:
                return None

        return Phases(self.started_at, mark(READY), self.let_go_at, mark(LOAD_END), mark(LOAD_DONE), exited)

    def close(self) -> None:
        self.files.close()
        if self.output:
            self.output.close()
        shutil.rmtree(self.handoff, ignore_errors=True)


def start_run(
    workload: Workload,
    run_dir: Path,
    log: Path | None,
    command: Callable[[Path, Path | None, Path], list[str]],
    zygote: Zygote | None = None,
) -> StartedRun:
    """Start the workload's Locust process in its own session (``command(locustfile, plan, handoff)`` builds its
    command line); it starts up and waits for :meth:`StartedRun.go`. With a ``zygote`` (``cli/demo_zygote.py``) the
    process is forked from one that has Locust imported already, as the same command with the same folder,
    environment and log.

    The scenario is package data of ``swarmgauge.locustfiles`` (the top-level ``locustfiles/`` of a clone, shipped
    in the package), so it runs wherever swarmgauge is installed. The run's own folder is Locust's working directory:
    a ``locust.conf`` or ``pyproject.toml`` where the demo was started does not change the pages' runs.
    """
    from importlib import resources

    import yaml

    from swarmgauge.targets.launch import child_env

    run_dir.mkdir(parents=True, exist_ok=True)
    plan_path = run_dir / "plan.yaml" if workload.plan is not None else None
    if plan_path:
        plan_path.write_text(yaml.safe_dump(workload.plan, sort_keys=False), encoding="utf-8")
    handoff = Path(tempfile.mkdtemp(prefix="swarmgauge-handoff-"))
    files = contextlib.ExitStack()
    output = open(log, "w", encoding="utf-8") if log and zygote is None else None
    try:
        scenario = resources.files("swarmgauge.locustfiles") / workload.locustfile
        locustfile = files.enter_context(resources.as_file(scenario))
        process: subprocess.Popen | ForkedProcess
        if zygote is not None:
            process = zygote.spawn(command(locustfile, plan_path, handoff), cwd=run_dir, env=child_env(), log=log)
        else:
            process = subprocess.Popen(
                command(locustfile, plan_path, handoff),
                cwd=run_dir,
                env=child_env(),
                stdout=output,
                stderr=output,
                start_new_session=True,
            )
    except BaseException:
        files.close()
        if output:
            output.close()
        shutil.rmtree(handoff, ignore_errors=True)
        raise
    return StartedRun(workload, process, handoff, output, files)


class BetweenLoads(Protocol):
    """Work the demo does only while no load runs (``cli/demo_reports.StartUpReports``)."""

    def resume(self) -> None: ...

    def tick(self) -> None: ...

    def pause(self) -> None: ...


def finish_run(
    run: StartedRun,
    *,
    when_load_done: Callable[[], None] | None = None,
    on_phases: Callable[[Phases], None] | None = None,
    between: BetweenLoads | None = None,
) -> int:
    """Let the run go and wait for its exit, bounded by its plan's time plus start-up (-1 when it ran past that and
    was stopped); ``when_load_done`` is called once, as soon as its measurements are over; ``on_phases`` is given
    its phases once it has ended. ``between``: resumed while the run starts up and once its load is over, paused
    before its go, so it never runs beside a measurement."""
    deadline = time.monotonic() + run.workload.planned_seconds() + OVERHEAD_S
    if between is None:
        run.go()
    else:
        run.turn()
        between.resume()
        while not run.ready() and time.monotonic() < deadline:
            between.tick()
            time.sleep(POLL_S)
        between.pause()
        run.go()
    over = False
    try:
        while (code := run.process.poll()) is None:
            if not over and run.load_done():
                over = True
                if when_load_done is not None:
                    when_load_done()
            if over and between is not None:
                between.resume()
                between.tick()
            if time.monotonic() >= deadline:
                _stop(run.process)
                return -1
            time.sleep(POLL_S)
        return code
    finally:
        if on_phases is not None:
            on_phases(run.phases(time.time()))
        run.close()


def abandon(run: StartedRun) -> None:
    """A run started ahead and never let go (the demo stopped first): its process group ended, its files removed."""
    if run.process.poll() is None:
        _stop(run.process)
    run.close()


def _stop(process: subprocess.Popen | ForkedProcess) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
