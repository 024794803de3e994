"""Run folders under a ``--run-dir`` parent, without Locust (``swarmgauge report`` uses this without gevent).

Each run writes into ``PARENT/<UTC start, YYYYmmddTHHMMSSZ>`` (``-2``, ``-3``... when two runs start in the same
second); ``PARENT/latest`` is a relative symlink to the newest one. A run folder is created 0700 (its results can
hold what a server echoed back); the parent keeps the mode it has or the umask gives it.
"""

from __future__ import annotations

import os
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from swarmgauge.errors import UsageError
from swarmgauge.files import make_private_folder

LATEST = "latest"
RUN_FOLDER_FORMAT = "%Y%m%dT%H%M%SZ"
MAX_SAME_SECOND_RUNS = 1000
MIB = 1024 * 1024
#: Free space a ``--run-dir`` needs before the load: a run writes steps.csv, timeline.csv (about 60 bytes a second:
#: 5 MB a day), run.json, Locust's CSVs and the report with its plots (1-2 MB with the PNGs inlined in the HTML).
#: 8 MiB holds a day-long run's files with room to spare, and refuses a disk that is full or nearly so.
MIN_FREE_BYTES = 8 * MIB


def resolve(path: Path | str) -> Path:
    """The run folder meant by ``path``: a run folder itself, or the ``latest`` run of a ``--run-dir`` parent."""
    path = Path(path)
    if (path / "run.json").exists() or (path / "steps.csv").exists():
        return path
    latest = path / LATEST
    return latest.resolve() if latest.is_dir() else path


def new_run_folder(parent: Path, now: float | None = None) -> Path:
    """Create ``parent/<UTC timestamp>[-N]`` (never an existing folder) and point ``parent/latest`` at it."""
    parent.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime(RUN_FOLDER_FORMAT, time.gmtime(time.time() if now is None else now))
    for attempt in range(1, MAX_SAME_SECOND_RUNS + 1):
        folder = parent / (stamp if attempt == 1 else f"{stamp}-{attempt}")
        try:
            make_private_folder(folder)
        except FileExistsError:
            continue
        _point_latest(parent, folder)
        return folder
    raise FileExistsError(f"{parent}: {MAX_SAME_SECOND_RUNS} runs started in the second {stamp}")


#: ``run.json``'s ``state``: written "running" when the run starts, "ended" when its folder is closed.
RUNNING = "running"
ENDED = "ended"
#: ``run.json``'s ``ended_by`` for a run whose process died without closing it (``swarmgauge report`` finds that).
CRASHED = "SIGKILL or crash"
#: Seconds two readings of a process's start time may differ by and still be the same process.
START_TIME_SLACK = 1.0


def process_identity() -> dict[str, Any]:
    """This process as ``run.json`` records it while the run is open: pid, host and start time (a pid alone can be
    reused by the time a report looks)."""
    return {
        "pid": os.getpid(),
        "hostname": socket.gethostname(),
        "pid_started_at": round(psutil.Process().create_time(), 3),
    }


def process_is_gone(info: dict[str, Any]) -> bool | None:
    """Whether the process a still-"running" ``run.json`` names is gone: True, False, or None when this host cannot
    tell (the run was made on another host, or the file names no process)."""
    pid = info.get("pid")
    if not isinstance(pid, int) or info.get("hostname") != socket.gethostname():
        return None
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return True
        started = process.create_time()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return True
    except psutil.Error:
        return None
    recorded = info.get("pid_started_at")
    return isinstance(recorded, (int, float)) and abs(started - recorded) > START_TIME_SLACK


def check_parent(parent: Path | str, min_free_bytes: int = MIN_FREE_BYTES) -> None:
    """Refuse, before any load, a ``--run-dir`` the run could not write its results into: one that is a file (or
    lies under one), one that cannot be created or written (read-only, no permission), or one on a disk with less
    than ``min_free_bytes`` free. Raises :class:`UsageError` naming the folder and the reason. A folder that does not
    exist yet is not made here (a run refused later, a missing host say, leaves nothing behind): its nearest existing
    parent is probed, where the run's first write would create it."""
    parent = Path(parent)
    where = f"--run-dir {parent}"
    existing = next((p for p in (parent, *parent.parents) if p.exists() or p.is_symlink()), None)
    if existing is not None and not existing.is_dir():
        what = "is a file" if existing == parent else f"lies under {existing}, which is a file"
        raise UsageError(f"{where}: {what}, not a folder: give a folder for the run folders")
    probed = parent if parent.is_dir() else (existing if existing is not None else Path.cwd())
    try:
        fd, probe = tempfile.mkstemp(prefix=".swarmgauge-probe.", dir=probed)
        try:
            os.write(fd, b"swarmgauge")
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"{where}: not writable ({exc.strerror or exc})") from None
    stats = os.statvfs(probed)
    free = stats.f_bavail * stats.f_frsize
    if free < min_free_bytes:
        raise UsageError(
            f"{where}: only {free / MIB:.1f} MiB free on its disk; a run needs at least {min_free_bytes / MIB:g} MiB "
            "for its steps, run.json and report"
        )


def is_inside(path: Path | str, folder: Path | str) -> bool:
    """``path`` is ``folder`` or lies under it (both made absolute; symlinks resolved, so ``latest/x`` counts)."""
    return Path(path).resolve().is_relative_to(Path(folder).resolve())


def _point_latest(parent: Path, folder: Path) -> None:
    """Swap the ``latest`` symlink atomically (a relative link, so the parent can be moved or mounted)."""
    link = parent / LATEST
    temporary = parent / f".{LATEST}.{os.getpid()}.tmp"
    if temporary.is_symlink() or temporary.exists():
        temporary.unlink()
    os.symlink(folder.name, temporary)
    os.replace(temporary, link)
