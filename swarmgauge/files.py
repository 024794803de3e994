"""Writing result files all at once: a reader (a report, a dashboard, CI) never sees half a file.

Locust-free, so benchmarks, targets and listeners share it. The temporary file comes from ``mkstemp``, so what is
written is readable by its owner only (mode 0600): a DSN with its password can be handed over this way too.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_atomic(path: Path | str, data: str | bytes) -> None:
    """Write through a temp file in the same folder and ``os.replace`` it, so readers see all or nothing."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=str(path.parent))
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(raw)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path: Path | str, doc: Any, *, indent: int = 2) -> Path:
    """A benchmark's figures as JSON, written with :func:`write_atomic`; returns the path for the caller to show."""
    write_atomic(path, json.dumps(doc, indent=indent, default=str) + "\n")
    return Path(path)
