"""The demo's run reports: ``python -m swarmgauge.cli.demo_reports RUN...`` (or ``--one-by-one``, paths on stdin).

Each workload's Locust runs with ``--no-report``. Rendered in the workload's own process, a report paid the imports
of pandas, matplotlib and plotly again and took its seconds out of the demo's budget one workload at a time (0.8 to
4 s each over 32 workloads). Two ways share that work now, neither under a load:

- :class:`StartUpReports`: one niced process, fed a finished run at a time, that renders while the next workload
  starts up (its interpreter, its targets, a fleet's discovery: seconds of a core left idle) and is stopped
  (SIGSTOP) before that workload's go, so no report ever runs beside a measurement.
- :meth:`StartUpReports.render_rest`: once the last load is over, that process (its imports done) is handed every
  run not yet rendered, while the demo draws the index's pages beside it; a fresh process per core paid the imports
  again for the last few (4 reports took 5 s at the end of ``demo --all``, where one warm process renders one in
  0.5 to 1 s).
- :func:`render_reports`: what that process could not render, a process per core, each paying the imports once.

A report that fails is said in one line and the others go on.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from swarmgauge.targets.launch import child_env, die_with_parent

#: how long one process may take per report it renders (a 1-minute soak's report takes a few seconds on 2 cores)
SECONDS_PER_REPORT = 60.0
ONE_BY_ONE = "--one-by-one"
#: the start-up renderer's niceness: the start-ups it shares the machine with come first
NICENESS = 19
DONE, FAILED = "done: ", "failed: "


def render_reports(runs: list[Path]) -> tuple[float, int, list[str]]:
    """Every run's report, one process per core: (seconds taken, processes, a line per report not rendered)."""
    began = time.monotonic()
    if not runs:
        return 0.0, 0, []
    count = max(1, min(os.cpu_count() or 1, len(runs)))
    shares = [runs[i::count] for i in range(count)]
    children = [
        subprocess.Popen(
            [sys.executable, "-m", "swarmgauge.cli.demo_reports", *map(str, share)],
            env=child_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for share in shares
    ]
    failed: list[str] = []
    for child, share in zip(children, shares):
        said: list[str] = []
        try:
            out, _ = child.communicate(timeout=SECONDS_PER_REPORT * len(share))
        except subprocess.TimeoutExpired:
            child.kill()
            out, _ = child.communicate()
            said.append(f"{len(share)} reports: timed out after {SECONDS_PER_REPORT * len(share):.0f} s")
        said += [line.removeprefix(FAILED) for line in out.splitlines() if line.startswith(FAILED)]
        if child.returncode not in (0, None) and not said:  # this process's own end, whatever the others said
            said.append(f"a report process ended with {child.returncode}: {out[-300:]}")
        failed += said
    return time.monotonic() - began, count, failed


class StartUpReports:
    """Reports rendered between one workload's end of load and the next one's go, one run at a time.

    The demo calls :meth:`resume` once a load is over, :meth:`tick` while it waits (it hands the process its next
    run when the last one is done), and :meth:`pause` before it lets a workload go. After the last load,
    :meth:`render_rest` hands it every run left and :meth:`wait_rest` waits for them. :meth:`finish` stops the process
    and returns the runs it did not render (those it was given included), for :func:`render_reports`."""

    def __init__(self) -> None:
        self.queue: list[Path] = []
        self.rendered: list[Path] = []
        self.failed: list[str] = []
        self._given: list[Path] = []  # handed to the process, not yet answered, in order
        self._process: subprocess.Popen[str] | None = None
        self._running = False
        self._broken = False
        self._pending = ""

    def add(self, run: Path) -> None:
        self.queue.append(run)

    def unrendered(self) -> list[Path]:
        """The runs added and not yet rendered (or said failed), in order."""
        return [*self._given, *self.queue]

    @property
    def pending(self) -> int:
        """Runs added and not yet rendered (or said failed)."""
        return len(self._given) + len(self.queue)

    @property
    def pid(self) -> int | None:
        """The rendering process's pid (None before its first need and after :meth:`finish`)."""
        return self._process.pid if self._process is not None else None

    def resume(self) -> None:
        """Let the process render (started on first need)."""
        if self._broken or (not self.queue and not self._given):
            return
        if self._process is None:
            try:
                self._process = subprocess.Popen(
                    [sys.executable, "-m", "swarmgauge.cli.demo_reports", ONE_BY_ONE],
                    env=child_env(),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                    bufsize=1,
                    # a demo ended by a signal (no finally runs) must not leave it stopped forever
                    preexec_fn=die_with_parent(os.getpid(), signal.SIGKILL),
                )
            except OSError:
                self._broken = True
                return
        elif not self._running:
            self._signal(signal.SIGCONT)
        self._running = True
        self.tick()

    def tick(self) -> None:
        """Take what the process said it finished; hand it the next run when it is free."""
        if not self._running or self._process is None:
            return
        self._read_answers()
        if not self._given and self.queue and not self._broken:
            self._hand(self.queue[:1])

    def _hand(self, runs: list[Path]) -> None:
        """Give the process ``runs`` (taken off the queue); it renders them in turn."""
        del self.queue[: len(runs)]
        self._given += runs
        try:
            assert self._process is not None and self._process.stdin is not None
            self._process.stdin.write("".join(f"{run}\n" for run in runs))
            self._process.stdin.flush()
        except (BrokenPipeError, OSError):
            self._lose_process()

    def render_rest(self) -> None:
        """No load is left: let the process render every run not yet rendered, one after another, unpaused (started
        now if it never was)."""
        self.resume()
        if self._running and self.queue and not self._broken:
            self._hand(list(self.queue))

    def wait_rest(self, seconds_per_report: float = SECONDS_PER_REPORT) -> list[Path]:
        """Wait for what :meth:`render_rest` handed over (at most ``seconds_per_report`` a run), then :meth:`finish`:
        the runs not rendered."""
        deadline = time.monotonic() + seconds_per_report * len(self._given)
        while self._running and self._given and time.monotonic() < deadline:
            self._read_answers(wait=min(1.0, max(0.0, deadline - time.monotonic())))
        return self.finish()

    def pause(self) -> None:
        """Stop the process where it is (SIGSTOP): a workload is about to be let go."""
        if self._running and self._process is not None:
            self.tick()
            self._signal(signal.SIGSTOP)
        self._running = False

    def finish(self) -> list[Path]:
        """End the process (what it was rendering is given back) and return every run not rendered, in order."""
        if self._running:
            self._read_answers()
        left = self._given + self.queue
        if self._process is not None:
            with contextlib.suppress(OSError):
                self._process.kill()  # a stopped process too
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=10)
            for stream in filter(None, (self._process.stdin, self._process.stdout)):
                with contextlib.suppress(OSError):
                    stream.close()
        self._process, self._given, self.queue, self._running = None, [], [], False
        return left

    def _read_answers(self, wait: float = 0.0) -> None:
        """Take every answer the process has written (waiting up to ``wait`` seconds for the first)."""
        process = self._process
        if process is None or process.stdout is None:
            return
        while select.select([process.stdout], [], [], wait)[0]:
            wait = 0.0
            chunk = os.read(process.stdout.fileno(), 4096).decode("utf-8", "replace")
            if not chunk:  # the process has ended: what it was given goes to the final pass
                self._lose_process()
                return
            self._pending += chunk
            *lines, self._pending = self._pending.split("\n")
            for line in lines:
                if line.startswith((DONE, FAILED)) and self._given:
                    answered = self._given.pop(0)
                    if line.startswith(FAILED):
                        self.failed.append(line.removeprefix(FAILED))
                    else:
                        self.rendered.append(answered)

    def _lose_process(self) -> None:
        self.queue[:0] = self._given
        self._given = []
        self._broken = True
        self._running = False

    def _signal(self, number: int) -> None:
        if self._process is not None and self._process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._process.pid, number)


def _render(run: str) -> str:
    from swarmgauge.reports.report import render_report

    try:
        render_report(Path(run))
    except Exception as exc:  # noqa: BLE001 - one report lost must not lose the others
        return f"{FAILED}{run}: {type(exc).__name__}: {exc}"
    return f"{DONE}{run}"


def main(argv: list[str]) -> int:
    """Render each run folder's report (``--one-by-one``: each path read from stdin, niced); ``failed: RUN: why``
    for each that could not be rendered, ``done: RUN`` for each that was."""
    import logging

    logging.basicConfig(level=logging.ERROR)
    if argv == [ONE_BY_ONE]:
        os.nice(NICENESS)
        for line in sys.stdin:
            print(_render(line.strip()), flush=True)
        return 0
    said = [_render(run) for run in argv]
    for line in said:
        print(line, flush=True)
    return 1 if any(line.startswith(FAILED) for line in said) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
