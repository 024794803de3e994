"""The demo's workload processes forked from one that has Locust imported already: ``python -m
swarmgauge.cli.demo_zygote MODULE...``.

Every demo workload's Locust process paid the interpreter and ``import locust.main`` (gevent, Flask, requests: about
0.45 s of CPU, 0.5 to 0.6 s of a quiet machine) before its locustfile and its targets, and the next workload's go
waited for it: 34 times in ``demo --all``. Here one process imports the modules once, then forks a child per
command it is sent; the child becomes that command as a fresh process would (its own session, working directory,
environment and log; Python's ``random`` reseeded; ``sys.argv`` and ``sys.path[0]`` as ``python -m`` sets them) and
runs it with ``runpy``, so Locust's own ``__main__`` runs as before. Only imports happen before the fork: no target
started, no greenlet run, no option parsed. Locust forks its own ``--processes`` workers the same way (``gevent.fork``
after its imports, ``gc.freeze`` before). The demo preloads ``swarmgauge.locust`` too (:data:`DEMO_PRELOAD`): every
demo locustfile imports it before anything of its own, so its listeners are registered as a fresh process would
register them (a test checks each locustfile), and the child's import of it finds it done.

The parent (:class:`Zygote`) speaks to it one line a message: a JSON job in; ``ready``, ``started PID`` and
``exited PID CODE`` out. The forking process ends at the end of its input (the demo's close, or the demo gone).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from swarmgauge.core.forked_child import ForkedChildHandle

# the forking process imports nothing more before the preloaded modules (subprocess and selectors, which import
# threading, are the driver's side's, imported there): ``python -m locust`` has gevent patch a bare interpreter

#: what the demo's forking process imports: Locust (0.45 s of CPU) and the framework every demo locustfile imports
#: first (its steps, SLOs, run folder and resources listeners: 0.2 to 0.4 s more)
DEMO_PRELOAD = ("locust.main", "swarmgauge.locust")
#: how long the parent waits for the forking process's imports, and for a fork to be said started
READY_TIMEOUT_S = 60.0
START_TIMEOUT_S = 10.0
#: how often the forking process looks for exited children while no job comes in
REAP_POLL_S = 0.01


class ZygoteError(RuntimeError):
    """The forking process did not start, or stopped answering."""


class ForkedProcess(ForkedChildHandle):
    """A workload process forked by the :class:`Zygote`."""

    wait_step_s = REAP_POLL_S

    def __init__(self, zygote: Zygote, pid: int, args: list[str]) -> None:
        super().__init__(pid, args)
        self.zygote = zygote

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.zygote.exit_code(self.pid)
        return self.returncode


class Zygote:
    """The forking process, started with ``preload`` imported; :meth:`spawn` runs a ``python -m MODULE ARGS`` command
    as its child."""

    def __init__(
        self, preload: tuple[str, ...] = DEMO_PRELOAD, env: dict[str, str] | None = None, *, wait: bool = True
    ) -> None:
        """Start it; ``wait=False`` returns at once (its imports go on beside the caller's work: :meth:`wait_ready`
        or the first :meth:`spawn` waits for them)."""
        import selectors
        import subprocess

        from swarmgauge.targets.launch import child_env, die_with_parent

        self.process = subprocess.Popen(
            [sys.executable, "-m", __name__, *preload],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env or child_env(),
            preexec_fn=die_with_parent(os.getpid()),
        )
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.process.stdout, selectors.EVENT_READ)  # type: ignore[arg-type]
        self._buffer = b""
        self._started: list[int] = []
        self._exited: dict[int, int] = {}
        self._ready = False
        self._closed = False
        if wait:
            self.wait_ready()

    def wait_ready(self) -> None:
        """Return once its imports are done; ZygoteError (and it closed) when it ended or took too long."""
        try:
            self._wait(lambda: self._ready, READY_TIMEOUT_S, "its imports")
        except ZygoteError:
            self.close()
            raise

    def _read(self) -> bool:
        """Take in what it has said (blocks until it says something); False once its output has ended."""
        chunk = os.read(self.process.stdout.fileno(), 65536)  # type: ignore[union-attr]
        *lines, self._buffer = (self._buffer + chunk).split(b"\n")
        for line in lines:
            word, *rest = line.decode().split()
            if word == "ready":
                self._ready = True
            elif word == "started":
                self._started.append(int(rest[0]))
            elif word == "exited":
                self._exited[int(rest[0])] = int(rest[1])
        return bool(chunk)

    def _wait(self, done: Callable[[], bool], seconds: float, what: str) -> None:
        """Read until ``done()``; ZygoteError when it ends or ``seconds`` pass first."""
        deadline = time.monotonic() + seconds
        while not done():
            left = deadline - time.monotonic()
            if left <= 0:
                raise ZygoteError(f"the forking process said nothing within {seconds:.0f} s ({what})")
            if self._selector.select(timeout=left) and not self._read():
                raise ZygoteError(f"the forking process ended (status {self.process.wait(5)}) before {what}")

    def spawn(self, command: list[str], *, cwd: Path, env: dict[str, str], log: Path | None) -> ForkedProcess:
        """Run ``command`` (``[python, "-m", MODULE, *ARGS]``) as a child in its own session, in ``cwd``, with ``env``,
        its output to ``log`` (nowhere when None)."""
        if len(command) < 3 or command[1] != "-m":
            raise ValueError(f"the forking process runs python -m commands only, not {command[:3]}")
        self.wait_ready()
        job = {"module": command[2], "args": command[3:], "cwd": str(cwd), "env": env, "log": str(log or os.devnull)}
        try:
            self.process.stdin.write(json.dumps(job).encode() + b"\n")  # type: ignore[union-attr]
            self.process.stdin.flush()  # type: ignore[union-attr]
        except OSError as exc:
            raise ZygoteError(f"the forking process took no job: {exc}") from exc
        self._wait(lambda: bool(self._started), START_TIMEOUT_S, "a fork said started")
        return ForkedProcess(self, self._started.pop(0), command)

    def exit_code(self, pid: int) -> int | None:
        """The child's exit code once the forking process reaped it; -1 when the forking process is gone and so is
        the child (reaped elsewhere, its code unknown)."""
        while pid not in self._exited and self._selector.select(timeout=0):
            if not self._read():
                break
        if pid in self._exited:
            return self._exited.pop(pid)
        if self.process.poll() is not None:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return -1
        return None

    def close(self) -> None:
        """End the forking process (its children go on: the demo stops or waits for them itself); once."""
        import subprocess

        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError):
            self.process.stdin.close()  # type: ignore[union-attr]
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)
        self._selector.close()
        self.process.stdout.close()  # type: ignore[union-attr]


def _say(fd: int, line: str) -> None:
    os.write(fd, line.encode() + b"\n")


def serve(job_fd: int, reply_fd: int) -> dict[str, Any] | None:
    """Fork a child per job line until the input ends; the child returns its job, the forking process None."""
    import select as select_module

    waitpid, read, select, sleep = os.waitpid, os.read, select_module.select, time.sleep
    if "gevent" in sys.modules:  # the blocking originals: this process runs no hub
        from gevent.monkey import get_original

        waitpid, read = get_original("os", "waitpid"), get_original("os", "read")
        select, sleep = get_original("select", "select"), get_original("time", "sleep")
    fork = _fork()
    children: set[int] = set()
    buffer = b""
    while True:
        for pid in list(children):
            done, status = waitpid(pid, os.WNOHANG)
            if done:
                children.discard(pid)
                _say(reply_fd, f"exited {pid} {os.waitstatus_to_exitcode(status)}")
        readable, _, _ = select([job_fd], [], [], REAP_POLL_S)
        if not readable:
            continue
        chunk = read(job_fd, 65536)
        if not chunk:
            return None
        *lines, buffer = (buffer + chunk).split(b"\n")
        for line in lines:
            job = json.loads(line)
            pid = fork()
            if pid == 0:
                os.setsid()
                return job
            # said started once it leads its session, as Popen(start_new_session=True) returns: a killpg of its pid
            # reaches it from then on
            made = time.monotonic() + START_TIMEOUT_S
            while _outside_session(pid) and time.monotonic() < made and not waitpid(pid, os.WNOHANG)[0]:
                sleep(0.001)
            children.add(pid)
            _say(reply_fd, f"started {pid}")


def _outside_session(pid: int) -> bool:
    try:
        return os.getsid(pid) != pid
    except ProcessLookupError:
        return False


def _fork() -> Any:
    """gevent's fork (the child's hub made anew) when gevent is imported, else the plain one."""
    if "gevent" in sys.modules:
        from gevent.os import fork_gevent

        return fork_gevent
    return os.fork


def become(job: dict[str, Any]) -> None:
    """In the child (its own session already): what ``subprocess.Popen(start_new_session=True, cwd=..., env=...,
    stdout=log, stderr=log)`` of ``python -m MODULE ARGS`` would have made of a fresh process, then the module run
    as ``__main__``."""
    import random
    import runpy

    output = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)
    os.dup2(output, 1)
    os.dup2(output, 2)
    os.close(output)
    os.close(nothing)
    os.chdir(job["cwd"])
    os.environ.clear()
    os.environ.update(job["env"])
    random.seed()
    sys.path[0] = os.getcwd()  # python -m puts its working directory first
    sys.argv = [job["module"], *job["args"]]  # run_module sets argv[0] to the module's file, as python -m does
    runpy.run_module(job["module"], run_name="__main__", alter_sys=True)


def main(preload: list[str]) -> None:
    for module in preload:
        importlib.import_module(module)
    # as Locust before forking its --processes: the imports' objects leave the cyclic collector, so no child's
    # collection (nor its teardown's) touches, and copies, the pages it shares with this process
    gc.collect()
    gc.freeze()
    _say(1, "ready")
    job = serve(0, 1)
    if job is not None:
        become(job)


if __name__ == "__main__":
    main(sys.argv[1:])
