"""Start an embedded target as a child process and wait for the line(s) it prints when it is ready.

Every ``swarmgauge target NAME`` prints ``ready URL`` on stdout once it accepts connections; locustfiles, the
demo and tests start targets through :func:`launch_target` so they all wait, time out and clean up the same way.

A target leads a session (and process group) of its own: Ctrl-C in a terminal signals the whole foreground group,
and a target that got it too would stop while the users still ran, recording failures that never happened. Locust
stops its users, then its embedded targets (``targets.embedded`` at ``quitting``); a target whose parent dies is
still ended by the parent-death signal (:func:`die_with_parent`).
The child's stderr goes to a temp file, kept for the error message if it fails to start.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import IO, cast

from swarmgauge.errors import SwarmgaugeError


class TargetStartError(SwarmgaugeError):
    """The target exited or stayed silent instead of printing its ready line."""


class TargetProcess:
    """A running target child: ``url`` from its ready line, ``lines`` keyed by first word; stop() ends it."""

    base_url: str  # set by targets.mcp_gateway.launch only
    mark_url: str  # set by targets.mcp_gateway.launch only

    def __init__(self, name: str, process: subprocess.Popen, lines: dict[str, str], log) -> None:
        self.name = name
        self.process = process
        self.lines = lines
        self.url = lines["ready"]
        self._log = log

    def __enter__(self) -> TargetProcess:
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def stderr_tail(self, limit: int = 2000) -> str:
        if self._log.closed:
            return ""
        self._log.flush()
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")[-limit:]

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout``; returns the exit status."""
        stop_processes([self.process], grace=timeout, kill_wait=timeout)
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._log.close()
        return self.process.returncode


def stop_processes(processes: list[subprocess.Popen], *, grace: float = 15.0, kill_wait: float = 10.0) -> None:
    """Stop the children still running: SIGTERM to all, then up to ``grace`` s each before SIGKILL.

    ``grace=0`` kills at once, for a caller that has already read what it needs from them.
    """
    running = [process for process in processes if process.poll() is None]
    for process in running:
        process.terminate() if grace > 0 else process.kill()
    for process in running:
        try:
            process.wait(timeout=grace if grace > 0 else kill_wait)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=kill_wait)


PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int, number: int = signal.SIGTERM) -> Callable[[], None]:
    """A ``preexec_fn``: the child gets SIGTERM (or ``number``) when its parent dies, even by SIGKILL (Linux
    ``prctl``).

    A target left behind by a killed locust would keep its port and go on serving whatever still sends load.
    Elsewhere it does nothing; the parent's own stop path (``stop_processes`` at ``quitting``) still applies. A child
    its parent may leave stopped (SIGSTOP) needs SIGKILL: any other signal waits for a SIGCONT that never comes.
    """

    def preexec() -> None:
        if not sys.platform.startswith("linux"):
            return
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, number, 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os.kill(os.getpid(), number)

    return preexec


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a child of ours: this one plus ``extra``, unbuffered. The child runs this interpreter, so
    it imports the same installed swarmgauge (a wheel or an editable install): no path of ours is added."""
    env = {**os.environ, **(extra or {})}
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def launch_target(
    name: str,
    args: list[str] | None = None,
    *,
    timeout: float = 30.0,
    wait_for: tuple[str, ...] = ("ready",),
    env: dict[str, str] | None = None,
) -> TargetProcess:
    """Run ``swarmgauge target NAME ARGS`` and return once it printed a line starting with each of ``wait_for``.

    Secrets go in ``env``, never in ``args``: a command line is visible to every local user and ends up in logs.
    """
    return start_target(name, args, env=env).ready(timeout=timeout, wait_for=wait_for)


def start_target(
    name: str, args: list[str] | None = None, *, env: dict[str, str] | None = None, stdin_pipe: bool = False
) -> StartingTarget:
    """Start ``swarmgauge target NAME ARGS`` without waiting: :meth:`StartingTarget.ready` waits for its lines. With
    ``stdin_pipe`` the caller can :meth:`StartingTarget.tell` it a line (what it learns only once it runs)."""
    command = [sys.executable, "-m", "swarmgauge.cli", "target", name, *(args or [])]
    log = tempfile.TemporaryFile()
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE if stdin_pipe else None,
        stdout=subprocess.PIPE,
        stderr=log,
        env=child_env(env),
        preexec_fn=die_with_parent(os.getpid()),
        start_new_session=True,  # a terminal's Ctrl-C reaches us, not the target: we stop it after the users
    )
    return StartingTarget(name, process, log)


class StartingTarget:
    """A target process started and not yet ready."""

    def __init__(self, name: str, process: subprocess.Popen, log: IO[bytes]) -> None:
        self.name, self.process, self._log = name, process, log

    def tell(self, line: str) -> None:
        """Write ``line`` to its stdin and close it (it reads one line, then runs as it would have)."""
        stdin = cast(IO[bytes], self.process.stdin)
        try:
            stdin.write(line.encode() + b"\n")
            stdin.close()
        except BrokenPipeError:  # it exited already: ready() reports how
            pass

    def abandon(self) -> None:
        """A start given up (the target it waited for failed): kill it, keep nothing."""
        stop_processes([self.process], grace=0)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        self._log.close()

    def ready(self, *, timeout: float = 30.0, wait_for: tuple[str, ...] = ("ready",)) -> TargetProcess:
        """Return once it printed a line starting with each of ``wait_for``; a TargetStartError if it exits or stays
        silent ``timeout`` s."""
        name, process, log = self.name, self.process, self._log
        stdout = cast(IO[bytes], process.stdout)  # stdout=PIPE: never None
        lines: dict[str, str] = {}
        buffer = b""
        deadline = time.monotonic() + timeout
        selector = selectors.DefaultSelector()
        selector.register(stdout, selectors.EVENT_READ)
        try:
            while time.monotonic() < deadline and not all(k in lines for k in wait_for):
                if not selector.select(timeout=min(0.5, max(0.0, deadline - time.monotonic()))):
                    if process.poll() is not None:
                        break
                    continue
                chunk = os.read(stdout.fileno(), 4096)
                if not chunk:
                    break
                buffer += chunk
                *complete, buffer = buffer.split(b"\n")
                for raw in complete:
                    word, _, rest = raw.decode("utf-8", "replace").strip().partition(" ")
                    lines.setdefault(word, rest.strip())
        finally:
            selector.close()
        if not all(k in lines for k in wait_for):
            try:
                process.wait(2)  # stdout closed or silence: give an exiting child a moment to report its status
                exited = True
            except subprocess.TimeoutExpired:
                exited = False
                process.kill()
                process.wait(10)
            log.seek(0)
            tail = log.read().decode("utf-8", "replace").strip()[-800:]
            log.close()
            stdout.close()
            why = f"exited with status {process.returncode}" if exited else f"no ready line within {timeout:.0f}s"
            raise TargetStartError(f"target {name} did not get ready ({why}): {tail or 'no output'}")
        return TargetProcess(name, process, lines, log)
