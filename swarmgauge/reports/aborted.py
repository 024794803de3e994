"""Report section "Run aborted": which ``--slo-abort`` threshold stopped the run, in which step, on what value.

Input: ``run.json``'s ``aborted`` (written by :mod:`listeners.slo_abort`). Without it (the run was not aborted) there is no
section.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from swarmgauge.reports.sections import Section


def sentence(aborted: dict) -> str:
    """The abort in the threshold's own unit (``p99 82.6 ms > 50 ms``); a run folder from before units were recorded
    shows the value it has, in base units."""
    breach = aborted.get("breach")
    if not breach:
        observed = aborted.get("observed")
        shown = "no value" if observed is None else f"{float(observed):.4g}"
        breach = f"observed {shown}, base units"
    sample = f" over {aborted['requests']} requests" if aborted.get("requests") is not None else ""
    return (
        f"The run was aborted in step {aborted.get('step')} ({aborted.get('label')}), "
        f"{aborted.get('after_s')} s after it started: {aborted.get('expr')} was breached "
        f"({breach}{sample}). The steps after it never ran; exit code 3."
    )


def section(run_dir: Path) -> Section | None:
    path = run_dir / "run.json"
    if not path.is_file():
        return None
    aborted = json.loads(path.read_text()).get("aborted")
    if not aborted:
        return None
    text = sentence(aborted)
    return Section("Run aborted", text, f"<p class='aborted'>{html.escape(text)}</p>", dict(aborted))
