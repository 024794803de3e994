"""A run's end as ``run.json`` tells it: ended by itself, by a signal, or killed before it could say.

``run.json`` says ``state: running`` with the run's pid, host and process start from the run's start, and
``state: ended`` (with ``ended_by``, the signal or None) once the run closed its folder. A run killed by SIGKILL
(the OOM killer) or a crash never gets there: its ``run.json`` still says running after its process is gone. The
first report rendered after that (``swarmgauge report DIR``) finds the process gone and marks the run ended by
"SIGKILL or crash" in ``run.json`` (rewritten atomically, 0600) and in the report, whose tables are the steps kept as
each ended (``listeners/step_checkpoints.py``). A run made on another host is left as it is: this host cannot tell
whether its process lives.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from swarmgauge.files import write_atomic
from swarmgauge.run_folders import CRASHED, ENDED, RUNNING, process_is_gone


def settle(run_dir: Path, info: dict[str, Any]) -> dict[str, Any]:
    """``info`` (the run's ``run.json``), marked and rewritten as ended by SIGKILL or crash when it still says running
    and its process is gone; returned as it is otherwise."""
    if info.get("state") != RUNNING or process_is_gone(info) is not True:
        return info
    marked = {**info, "state": ENDED, "ended_by": CRASHED}
    write_atomic(run_dir / "run.json", json.dumps(marked, indent=2, sort_keys=True))
    return marked


def ended_by_text(info: dict[str, Any]) -> str:
    """The report's "ended by" cell: the signal, the kill, or that the run is still under way; empty for a run that
    ended by itself (or a run.json from before runs said)."""
    ended_by = info.get("ended_by")
    if ended_by == CRASHED:
        return f"{CRASHED}: process {info.get('pid')} on {info.get('hostname')} is gone and never closed the run"
    if ended_by:
        return f"{ended_by} (the run stopped its users and closed as at the end of its plan)"
    if info.get("state") == RUNNING:
        gone = process_is_gone(info)
        where = f"process {info.get('pid')} on {info.get('hostname')}"
        return (
            f"still running ({where})" if gone is False else f"running when last written ({where}, not checkable here)"
        )
    return ""


def sentence(info: dict[str, Any]) -> str | None:
    """The bold line under the context table for a run killed before it closed, or one still under way."""
    kept = len(info.get("steps") or [])
    if info.get("ended_by") == CRASHED:
        return (
            f"The run ended by {CRASHED}: its process never closed the run, so no final tables, SLO verdicts or exit "
            f"code were written. The step tables below are the {kept} step(s) written as each ended."
        )
    if info.get("state") == RUNNING:
        return f"The run had not closed when this report was rendered: the step tables are the {kept} step(s) ended."
    return None
