"""Writing result files all at once: a reader (a report, a dashboard, CI) never sees half a file.

Locust-free, so benchmarks, targets and listeners share it. A file is private (mode 0600) unless the caller writes
it for someone else (``private=False``: the process's umask decides, as for any file the user's code writes): a
DSN with its password, or a run's results, can be handed over this way. Modes are set at creation, never through
the process's umask, so nothing here changes how the user's own files are created.
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
from pathlib import Path
from typing import Any

PRIVATE_FILE = 0o600
PRIVATE_FOLDER = 0o700
SHARED_FILE = 0o666  # before the umask, as open() creates a file
TEMP_NAME_ATTEMPTS = 100


def _shared_temp(path: Path) -> tuple[int, str]:
    """A new temp file beside ``path`` created 0666 less the umask (``mkstemp`` would make it 0600)."""
    for _attempt in range(TEMP_NAME_ATTEMPTS):
        tmp = str(path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, SHARED_FILE), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"{path.parent}: no free temporary name for {path.name}")


def write_atomic(path: Path | str, data: str | bytes, *, private: bool = True) -> None:
    """Write through a temp file in the same folder and ``os.replace`` it, so readers see all or nothing.

    ``private``: the file is 0600 whatever the umask; else it gets the mode any new file of the process gets.
    """
    tmp = stage(path, data, private=private)
    try:
        os.replace(tmp, path)
    except BaseException:
        discard(tmp)
        raise


def stage(path: Path | str, data: str | bytes, *, private: bool = True) -> str:
    """The slow half of :func:`write_atomic`: ``data`` in a temp file beside ``path``, on disk (fsync); returns its
    name for the caller to ``os.replace`` onto ``path`` (or :func:`discard`). A caller that must not block (an event
    loop) stages in a thread and replaces where it decides."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if private:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=str(path.parent))
    else:
        fd, tmp = _shared_temp(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(raw)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        discard(tmp)
        raise
    return tmp


def discard(tmp: str) -> None:
    """Remove a staged temp file that will not be used."""
    if os.path.exists(tmp):
        os.unlink(tmp)


def write_json(path: Path | str, doc: Any, *, indent: int = 2) -> Path:
    """A benchmark's figures as JSON, written with :func:`write_atomic`; returns the path for the caller to show."""
    write_atomic(path, json.dumps(doc, indent=indent, default=str) + "\n")
    return Path(path)


def make_private(path: Path | str) -> None:
    """An existing folder 0700 or file 0600 (one written by code that does not take a mode, such as Locust's)."""
    path = Path(path)
    os.chmod(path, PRIVATE_FOLDER if path.is_dir() else PRIVATE_FILE)


def make_private_folder(path: Path | str) -> Path:
    """Create the folder ``path`` (its parent must exist) with mode 0700 whatever the umask; FileExistsError if
    it exists, so a caller picking a fresh name can try the next one."""
    path = Path(path)
    path.mkdir(mode=PRIVATE_FOLDER)
    os.chmod(path, PRIVATE_FOLDER)  # mkdir's mode is masked by the umask: a 0o277 umask would leave it 0500
    return path
