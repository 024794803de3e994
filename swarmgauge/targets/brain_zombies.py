"""The 2dph brain PERF page's zombie subprocesses, as a fault of the stand-in (``--zombies-per-search``).

Before the fix, serve.go re-executed itself (``os.Executable`` with a ``serve`` subcommand it could not handle) and
never waited for the children: about 20 ``[serve]`` zombies. Here each search starts a child that exits at once and
is never waited for, until ``limit`` have been started; :func:`count_zombies` reads the kernel's own view of this
process's children (``/proc``), so the figure is the operating system's, not a counter of ours.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

PROC = Path("/proc")


class ZombieSpawner:
    """Starts up to ``limit`` children that exit at once and keeps them un-reaped (the ``Popen`` objects are held,
    so nothing waits for them)."""

    def __init__(self, limit: int) -> None:
        self.limit = max(0, limit)
        self.children: list[subprocess.Popen] = []
        self.lock = threading.Lock()

    def spawn(self) -> None:
        with self.lock:
            if len(self.children) >= self.limit:
                return
            child = subprocess.Popen([sys.executable, "-c", ""], stdin=subprocess.DEVNULL)  # exits at once
            self.children.append(child)


def count_zombies(pid: int | None = None) -> int:
    """Children of ``pid`` (this process by default) in state Z, from ``/proc/*/stat``; 0 where there is no /proc."""
    parent = os.getpid() if pid is None else pid
    found = 0
    for stat in PROC.glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text[text.rfind(")") + 2 :].split()  # after "pid (comm) ": state, ppid, ...
        if len(fields) > 1 and fields[0] == "Z" and fields[1] == str(parent):
            found += 1
    return found
