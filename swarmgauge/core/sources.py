"""A sampled target's name, the same in every view: the report, ``/swarmgauge/`` and the web UI's tab.

The live view once said ``psutil:pid=4711`` where the report said "embedded mark (pid 4711)" for the same process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def embedded_targets(info: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """run.json's embedded targets by name (an early format kept them as a list of {name, pid, url})."""
    found = info.get("embedded_targets") or {}
    if isinstance(found, list):
        return {str(t.get("name")): t for t in found if isinstance(t, dict)}
    return found if isinstance(found, dict) else {}


def source_title(source: str, info: dict[str, Any] | None = None) -> str:
    """``psutil:pid=N`` of an embedded target -> ``embedded mark (pid N)`` (from run.json's ``info``);
    ``psutil:pidfile=/tmp/x/worker-1.pid`` -> ``worker-1``; anything else as given."""
    for name, target in embedded_targets(info or {}).items():
        if source == f"psutil:pid={target.get('pid')}":
            return f"embedded {name} (pid {target['pid']})"
    kind, _, argument = source.partition(":")
    if kind == "psutil" and argument.startswith("pidfile="):
        return Path(argument.removeprefix("pidfile=").split(",")[0]).stem
    return source
