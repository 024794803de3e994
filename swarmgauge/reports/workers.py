"""Report section "Lost workers": which worker went missing, when, and which steps it had sent requests for.

Input: ``run.json``'s ``lost_workers`` (written by :mod:`listeners.workers`) and ``steps.csv`` for the steps'
labels and totals. Each lost worker's requests up to its last report are in the step figures; those it had in
flight or measured after that report are not, so a step it touched may read a little low, and the section says so.
A worker that was only cut off and came back (``rejoined_at``) sent what it had queued when it returned: nothing of
it is missing, and the section says that instead.
"""

from __future__ import annotations

import html
import json
import time
from pathlib import Path
from typing import Any

import pandas as pd

from swarmgauge.reports.sections import Section


def _clock(epoch: Any, started: Any) -> str:
    """Wall-clock time (UTC) and seconds into the run, e.g. ``12:03:07 (+14.2 s)``."""
    if epoch is None:
        return ""
    text = time.strftime("%H:%M:%S", time.gmtime(float(epoch)))
    return f"{text} (+{float(epoch) - float(started):.1f} s)" if started else text


def _step_labels(run_dir: Path) -> dict[int, str]:
    path = run_dir / "steps.csv"
    if not path.is_file():
        return {}
    steps = pd.read_csv(path)
    rows = steps[steps["name"] == "Aggregated"] if "name" in steps else steps
    return {int(r["step"]): f"{int(r['step'])} ({r['label']})" for _, r in rows.iterrows()}


def lost_table(run_dir: Path) -> pd.DataFrame | None:
    try:
        run = json.loads((run_dir / "run.json").read_text())
    except (OSError, ValueError):
        return None
    lost = run.get("lost_workers") or []
    if not lost:
        return None
    started, labels = run.get("started_at"), _step_labels(run_dir)
    rows = []
    for entry in lost:
        reported = entry.get("requests_reported") or {}
        rows.append(
            {
                "Worker": entry.get("worker", ""),
                "Last heard from": _clock(entry.get("last_seen"), started),
                "Noticed": _clock(entry.get("noticed_at"), started),
                "In step": labels.get(entry.get("step"), entry.get("step_label") or ""),
                "Steps touched": ", ".join(labels.get(int(s), str(s)) for s in entry.get("steps_touched") or []),
                "Requests counted": sum(int(n) for n in reported.values()),
                "Rejoined": _clock(entry.get("rejoined_at"), started) or "no",
            }
        )
    return pd.DataFrame(rows)


def section(run_dir: Path) -> Section | None:
    table = lost_table(run_dir)
    if table is None:
        return None
    back = int((table["Rejoined"] != "no").sum())
    lead = (
        f"{len(table)} worker(s) went missing during the run; the master went on with the others. Every "
        "request a lost worker reported is counted in the step figures; requests it had in flight or measured "
        "after its last report (at most one report interval, 3 s) are not, so the steps it touched may read low."
    )
    if back:
        lead += (
            f" {back} of them came back (its heartbeat reached the master again, as when a cut link returns): the "
            "reports it had queued arrived then and are counted, so nothing it measured is missing. A worker that "
            "had already stopped can seem to come back this way, for its last messages only."
        )
    summary = {"lost_workers": table.to_dict(orient="records")}
    return Section(
        "Lost workers",
        f"{lead}\n\n{table.to_markdown(index=False)}\n",
        f"<p>{html.escape(lead)}</p>{table.to_html(index=False, escape=True)}",
        summary,
    )
