"""Our side of kneo-serv's fork parent (``fork_parent_script.py``): launch it, ask it for processes, hear of exits.

Each ``kneo service serve`` used to import kneo-serv for itself: about 0.8 s of a 1 s boot, paid again by every
process of a workload (8 for the provider-delay one) and every restart of a drill. The fork parent imports it once,
while the caller does something else (the throwaway PostgreSQL's start-up), and forks the processes from there. A
forked process is the real kneo-serv, run by its own console script's code; see the script's docstring.

:class:`ForkedProcess` has the part of ``subprocess.Popen`` that :class:`KneoService` uses (``pid``, ``poll``,
``wait``, ``returncode``): the fork parent reaps its children and writes their exit codes, read here on demand (no
thread: Locust's gevent and the plain CLI both just call in). :meth:`ForkParent.connect` takes a fork parent of
its own from a template shared by many runs (``fork_template.py``) instead of launching one. Stdlib only.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from swarmgauge.core.forked_child import ForkedChildHandle
from swarmgauge.errors import SwarmgaugeError
from swarmgauge.targets.launch import die_with_parent

SCRIPT = Path(__file__).resolve().with_name("fork_parent_script.py")
#: how long the fork parent may take to import kneo-serv (about 1 s on a quiet machine)
READY_TIMEOUT_S = 60.0
#: how long a fork request may take to be answered
SPAWN_TIMEOUT_S = 10.0
#: the exit code of a process whose fork parent died before it: its real status went to the parent's parent
EXIT_UNKNOWN = -1


def _running(pid: int) -> bool:
    """Whether ``pid`` still runs: a zombie waiting for a reaper that is not ours counts as ended."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    except OSError:
        return True


class ForkParentUnavailable(SwarmgaugeError):
    """The fork parent could not start (no fork here, an import failed) or is gone; the message says which."""


class ForkedProcess(ForkedChildHandle):
    """A kneo-serv process forked by the fork parent, with the ``Popen`` surface :class:`KneoService` uses."""

    #: a wait blocks on the fork parent's pipe for up to this long between polls
    wait_step_s = 0.2

    def __init__(self, pid: int, parent: ForkParent) -> None:
        super().__init__(pid, [f"kneo-serv pid {pid}"])
        self._parent = parent

    def poll(self) -> int | None:
        if self.returncode is None:
            self._parent.pump(0.0)
        return self.returncode

    def idle(self, seconds: float) -> None:
        self._parent.pump(seconds)


def end_its_input(process: subprocess.Popen | ClonedForkParent, timeout: float) -> None:
    """Close a fork parent's (or the template's) input, its sign to exit, and wait for it; SIGKILL past ``timeout``."""
    if process.stdin is not None and not process.stdin.closed:
        try:
            process.stdin.close()
        except OSError:
            pass
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout)


class _ConnectionEnd:
    """One direction of a connection to a template's clone, with the part of a pipe file :class:`ForkParent` uses:
    closing the sending end shuts the connection for writing (the clone's end of input), the receiving end closes it."""

    def __init__(self, connection: socket.socket, sending: bool) -> None:
        self._connection = connection
        self._sending = sending
        self.closed = False

    def fileno(self) -> int:
        return self._connection.fileno()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self._connection.shutdown(socket.SHUT_WR) if self._sending else self._connection.close()
        except OSError:
            pass


class ClonedForkParent:
    """A template's clone seen through its connection, with the part of ``subprocess.Popen`` :class:`ForkParent`
    uses: it is the template's child, not ours, so its end is watched in ``/proc`` (an exit code of
    :data:`EXIT_UNKNOWN`) and its pid is known from its ready message."""

    wait_step_s = 0.02

    def __init__(self, connection: socket.socket) -> None:
        os.set_blocking(connection.fileno(), True)  # gevent's socket is non-blocking; our reads follow a select
        self.stdin = _ConnectionEnd(connection, sending=True)
        self.stdout = _ConnectionEnd(connection, sending=False)
        self.pid: int | None = None

    def wait(self, timeout: float | None = None) -> int:
        deadline = time.monotonic() + (timeout if timeout is not None else SPAWN_TIMEOUT_S)
        while self.pid is not None and _running(self.pid):
            if time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"fork parent pid {self.pid}", timeout or 0.0)
            time.sleep(self.wait_step_s)
        return EXIT_UNKNOWN

    def kill(self) -> None:
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class ForkParent:
    """The fork parent process: :meth:`launch` starts its imports (or :meth:`connect` takes one from a shared
    template); :meth:`spawn` forks one kneo-serv process."""

    def __init__(
        self, venv_python: Path, process: subprocess.Popen | ClonedForkParent | None, stderr: Any, error: str | None
    ) -> None:
        self.venv_python = venv_python
        self._process = process
        self._stderr = stderr
        self._pending = b""
        self._ready: dict[str, Any] | None = None
        self._error = error
        self._spawned: dict[int, dict[str, Any]] = {}
        self._children: dict[int, ForkedProcess] = {}
        self._next_key = 0

    @classmethod
    def launch(cls, venv_python: Path, env: dict[str, str]) -> ForkParent:
        """Start the fork parent under ``venv_python`` without waiting for it: its imports run from here on. One that
        cannot start says why at :meth:`wait_ready` (the first :meth:`spawn`), where the caller can fall back."""
        if not hasattr(os, "fork"):
            return cls(venv_python, None, None, "this platform has no fork()")
        stderr = tempfile.TemporaryFile()
        try:
            process = subprocess.Popen(
                [str(venv_python), "-u", str(SCRIPT)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=env,
                preexec_fn=die_with_parent(os.getpid()),  # it dies with us, and its children with it
                start_new_session=True,  # a terminal's Ctrl-C reaches us, not it: we stop kneo-serv after the users
            )
        except OSError as exc:
            stderr.close()
            return cls(venv_python, None, None, f"could not run {venv_python}: {exc}")
        return cls(venv_python, process, stderr, None)

    @classmethod
    def connect(cls, venv_python: Path, path: Path) -> ForkParent:
        """A fork parent of our own, forked by the template listening at ``path`` (kneo-serv imported there once for
        many runs); raises ``OSError`` when none listens there, so the caller can :meth:`launch` one instead."""
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connection.connect(str(path))
        except OSError:
            connection.close()
            raise
        return cls(venv_python, ClonedForkParent(connection), None, None)

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> dict[str, Any]:
        """Block until kneo-serv is imported (its report: modules, seconds); raise why not otherwise."""
        deadline = time.monotonic() + timeout
        while self._ready is None:
            if self._error is not None:
                raise ForkParentUnavailable(self._error)
            left = deadline - time.monotonic()
            if left <= 0:
                raise ForkParentUnavailable(f"kneo-serv not imported within {timeout:.0f}s")
            self.pump(min(0.2, left))
        return self._ready

    def spawn(self, argv: list[str], *, cwd: Path, env: dict[str, str], log: Path) -> ForkedProcess:
        """Fork ``argv`` (the ``kneo service serve`` command line) with this folder, environment and log file."""
        self.wait_ready()
        key, self._next_key = self._next_key, self._next_key + 1
        request = {"spawn": key, "argv": argv, "cwd": str(cwd), "env": env, "log": str(log)}
        try:
            os.write(self._stdin_fd(), (json.dumps(request) + "\n").encode())
        except OSError as exc:
            self._gone(f"it stopped taking requests: {exc}")
            raise ForkParentUnavailable(self._error or "") from None
        deadline = time.monotonic() + SPAWN_TIMEOUT_S
        while key not in self._spawned:
            if self._error is not None:
                raise ForkParentUnavailable(self._error)
            if time.monotonic() >= deadline:
                raise ForkParentUnavailable(f"no answer to a fork request within {SPAWN_TIMEOUT_S:.0f}s")
            self.pump(0.2)
        answer = self._spawned.pop(key)
        if "error" in answer:
            raise ForkParentUnavailable(str(answer["error"]))
        child = ForkedProcess(int(answer["pid"]), self)
        self._children[child.pid] = child
        return child

    def pump(self, timeout: float) -> None:
        """Read what the fork parent said, waiting up to ``timeout`` s for the first of it."""
        stdout = self._process.stdout if self._process is not None else None
        if self._process is None or stdout is None or stdout.closed:
            self._settle_orphans()
            if self._children and timeout > 0:
                time.sleep(timeout)  # nothing to wait on but time: the orphans end on their own
            return
        fd = stdout.fileno()
        while True:
            readable, _, _ = select.select([fd], [], [], timeout)
            if not readable:
                return
            try:
                chunk = os.read(fd, 65536)
            except ConnectionResetError:  # a template that died with our connection still in its backlog
                chunk = b""
            if not chunk:
                if isinstance(self._process, ClonedForkParent):
                    self._gone("its connection to the shared template closed")
                try:
                    code: int | str | None = self._process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    code = "its output closed"
                self._gone(f"it exited with {code}: {self._stderr_tail()}")
                stdout.close()
                self._settle_orphans()
                return
            *lines, self._pending = (self._pending + chunk).split(b"\n")
            for line in lines:
                self._take(json.loads(line))
            timeout = 0.0

    def _take(self, message: dict[str, Any]) -> None:
        if "exited" in message:
            child = self._children.pop(int(message["exited"]), None)
            if child is not None:
                child.returncode = int(message["code"])
        elif "spawned" in message:
            self._spawned[int(message["spawned"])] = message
        elif "ready" in message:
            self._ready = message
            if isinstance(self._process, ClonedForkParent):
                self._process.pid = int(message["pid"])
        elif "error" in message:
            self._error = f"importing kneo-serv failed: {message['error']}"

    def _gone(self, why: str) -> None:
        if self._error is None:
            self._error = f"the fork parent is gone ({why})"

    def _settle_orphans(self) -> None:
        """Children of a dead fork parent got its death signal; once one is gone its status is not ours to read."""
        for pid, child in list(self._children.items()):
            if not _running(pid):
                child.returncode = EXIT_UNKNOWN
                del self._children[pid]

    def _stdin_fd(self) -> int:
        if self._process is None or self._process.stdin is None or self._process.stdin.closed:
            raise OSError("its stdin is closed")
        return self._process.stdin.fileno()

    def _stderr_tail(self) -> str:
        if self._stderr is None or self._stderr.closed:
            return ""
        self._stderr.seek(0)
        lines = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
        return " | ".join(lines[-5:]) or "no output"

    def close(self, timeout: float = 10.0) -> None:
        """End the fork parent (its children have been stopped; any left get its death signal)."""
        if self._process is None:
            return
        end_its_input(self._process, timeout)
        if self._process.stdout is not None and not self._process.stdout.closed:
            self._process.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
