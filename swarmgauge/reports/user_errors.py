"""Report section "User code exceptions": what a task or ``on_start`` raised, by class and by step.

Input: ``slo.json``'s ``user_errors`` (``listeners.user_errors``: total, per step, per class with its first message)
and ``run.json``'s steps for the labels. Without exceptions there is no section. A request that succeeded before the
task raised is not a failed request, so these never show in the failures table; they fail the run on their own unless
an SLO names ``user_errors``.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pandas as pd

from swarmgauge.reports.sections import Section

TITLE = "User code exceptions"


def _labels(run_dir: Path) -> dict[str, str]:
    path = run_dir / "run.json"
    if not path.is_file():
        return {}
    steps = json.loads(path.read_text()).get("steps") or []
    return {str(s.get("index")): str(s.get("label")) for s in steps if isinstance(s, dict)}


def lead_sentence(raised: dict[str, Any], covered: bool) -> str:
    total = int(raised.get("total") or 0)
    classes = raised.get("by_class") or []
    named = ", ".join(
        f"{c['class']}: {c['message']} ({c['count']})" if c.get("message") else f"{c['class']} ({c['count']})"
        for c in classes[:3]
    )
    verdict = (
        "An SLO names user_errors, so its verdict decides."
        if covered
        else "No SLO names user_errors, so they fail the run."
    )
    return (
        f"User code raised {total} exception{'s' if total != 1 else ''}"
        + (f" ({named})" if named else "")
        + (f". {verdict}")
    )


def section(run_dir: Path) -> Section | None:
    path = run_dir / "slo.json"
    if not path.is_file():
        return None
    doc = json.loads(path.read_text())
    raised = doc.get("user_errors") or {}
    if not raised.get("total"):
        return None
    covered = any(v.get("metric") == "user_errors" for v in doc.get("verdicts") or [])
    lead = lead_sentence(raised, covered)
    labels = _labels(run_dir)
    by_step = ", ".join(f"{labels.get(step, 'step ' + step)} {n}" for step, n in (raised.get("by_step") or {}).items())
    if by_step:
        lead += f" By step: {by_step}."
    table = pd.DataFrame(raised.get("by_class") or [], columns=["class", "count", "message"])
    return Section(
        TITLE,
        f"{lead}\n\n{table.to_markdown(index=False)}\n" if not table.empty else lead,
        f"<p>{html.escape(lead)}</p>" + (table.to_html(index=False, escape=True, border=0) if not table.empty else ""),
        {"total": int(raised["total"]), "by_class": raised.get("by_class") or [], "by_step": raised.get("by_step")},
    )
