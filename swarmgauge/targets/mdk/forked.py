"""The stand-in's components forked from the launcher once it has imported them, instead of a fresh interpreter each.

A fresh ``python -m swarmgauge.targets.mdk.process ROLE`` pays the interpreter, asyncio and its role's modules (with
no bytecode cache written, compiled from source) before it listens: 0.1 s of CPU a component, 3 + N of them on two
cores at every fleet start. ``swarmgauge target mdk`` (a plain process, no thread, no event loop) imports the role
modules once (:func:`preload`), then each component is a fork that becomes what the fresh process would be: its own
session, stdin from ``/dev/null``, stdout and stderr appended to its log, no other descriptor of the launcher's, the
default SIGTERM and SIGINT, ``random`` reseeded, then the same :func:`process.main` with the same arguments. What a
component does once it is up (ports, READY line, pid file, owner watch) is that code's. A drill's restart still starts
a fresh interpreter (``MDKStack.spawn``): its modelled boot is a whole process start.
"""

from __future__ import annotations

import importlib
import io
import os
import random
import signal
import sys
import traceback
from pathlib import Path

from swarmgauge.core.forked_child import ForkedChildHandle

ROLE_MODULES = (
    "swarmgauge.targets.mdk.process",
    "swarmgauge.targets.mdk.mock",
    "swarmgauge.targets.mdk.kernel",
    "swarmgauge.targets.mdk.worker",
    "swarmgauge.targets.mdk.gateway",
)


def preload() -> None:
    """Import every role's modules here, once, so a forked component starts with them."""
    for name in ROLE_MODULES:
        importlib.import_module(name)


class ForkedChild(ForkedChildHandle):
    """The parent's handle on a forked component: the part of ``subprocess.Popen`` the stack uses."""

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: it is gone, its status unknown
                self.returncode = -1
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def fork_component(component: str, root: Path, log: Path) -> ForkedChild:
    """Fork ``component`` of the stack at ``root``, its output appended to ``log``; returns at once in the parent."""
    args = [component, "--root", str(root), "--boot-s", "0"]
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    log_fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    pid = os.fork()
    if pid:
        os.close(log_fd)
        return ForkedChild(pid, args)
    os._exit(_become(args, log_fd))  # pragma: no cover - the child's side, seen through its log and exit status


def _become(args: list[str], log_fd: int) -> int:  # pragma: no cover - runs in the forked child
    """The child: detach from the launcher, then run the component as ``python -m ...process ARGS`` would."""
    try:
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        # a fresh interpreter's streams on the log, written through as the launcher's children run unbuffered
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        random.seed()
        from swarmgauge.targets.mdk import process

        return process.main(args)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    except BaseException:  # noqa: BLE001 - as an interpreter dies of any exception: its traceback, status 1
        traceback.print_exc()
        return 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
