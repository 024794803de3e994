"""Our side of kneo-serv's fork parent (``fork_parent_script.py``): launch it, ask it for processes, hear of exits.

Each ``kneo service serve`` used to import kneo-serv for itself: about 0.8 s of a 1 s boot, paid again by every
process of a workload (8 for the provider-delay one) and every restart of a drill. The fork parent imports it once,
while the caller does something else (the throwaway PostgreSQL's start-up), and forks the processes from there. A
forked process is the real kneo-serv, run by its own console script's code; see the script's docstring.

:class:`ForkedProcess` has the part of ``subprocess.Popen`` that :class:`KneoService` uses (``pid``, ``poll``,
``wait``, ``returncode``): the fork parent reaps its children and writes their exit codes, read here on demand (no
thread: Locust's gevent and the plain CLI both just call in). Stdlib only.
"""

from __future__ import annotations

import json
import os
import select
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


class ForkParent:
    """The fork parent process: :meth:`launch` starts its imports; :meth:`spawn` forks one kneo-serv process."""

    def __init__(self, venv_python: Path, process: subprocess.Popen | None, stderr: Any, error: str | None) -> None:
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
            chunk = os.read(fd, 65536)
            if not chunk:
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
        if self._process.stdin is not None and not self._process.stdin.closed:
            try:
                self._process.stdin.close()
            except OSError:
                pass
        try:
            self._process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(timeout=timeout)
        if self._process.stdout is not None and not self._process.stdout.closed:
            self._process.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
