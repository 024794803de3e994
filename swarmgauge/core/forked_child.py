"""A handle on a child process forked without ``subprocess.Popen``, with the part of Popen's surface its owner uses.

Three places fork their children from a process that imported their code once: the demo's workload processes
(``cli/demo_zygote.py``), the MDK stand-in's components (``targets/mdk/forked.py``) and kneo-serv's processes
(``targets/kneo/fork_parent.py``). Each learns of an exit its own way (``waitpid``, a message from the forking
process) in :meth:`ForkedChildHandle.poll`; the wait with its deadline is written once, here. Only ``time`` is
imported at the top: the demo's forking process imports nothing before its preload.
"""

from __future__ import annotations

import time


class ForkedChildHandle:
    """``pid``, ``returncode``, ``poll()`` and ``wait(timeout)`` as a ``subprocess.Popen``'s (a negative code for a
    signal); a subclass gives :meth:`poll`, and :meth:`idle` when it can block on its news instead of sleeping."""

    #: the longest one idle between two polls while :meth:`wait` waits
    wait_step_s = 0.01

    def __init__(self, pid: int, args: list[str]) -> None:
        self.pid = pid
        self.args = args
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """The exit code once the child has exited, else None."""
        raise NotImplementedError

    def idle(self, seconds: float) -> None:
        """Wait up to ``seconds`` for news of the child between two polls."""
        time.sleep(seconds)

    def wait(self, timeout: float | None = None) -> int:
        """The exit code once the child has exited; ``subprocess.TimeoutExpired`` after ``timeout`` s, as Popen's."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                import subprocess  # here: subprocess imports threading, which the demo's forking process must not

                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
            self.idle(self.wait_step_s if left is None else min(self.wait_step_s, left))
        return code
