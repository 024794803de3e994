"""Run folders under a ``--run-dir`` parent, without Locust (``swarmgauge report`` uses this without gevent).

Each run writes into ``PARENT/<UTC start, YYYYmmddTHHMMSSZ>`` (``-2``, ``-3``... when two runs start in the same
second); ``PARENT/latest`` is a relative symlink to the newest one. A run folder is created 0700 (its results can
hold what a server echoed back); the parent keeps the mode it has or the umask gives it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from swarmgauge.files import make_private_folder

LATEST = "latest"
RUN_FOLDER_FORMAT = "%Y%m%dT%H%M%SZ"
MAX_SAME_SECOND_RUNS = 1000


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
