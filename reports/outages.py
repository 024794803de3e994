"""The report's outage section: the windows of the run in which most requests failed (a target down or restarting).

Read from ``timeline.csv`` (one row per timeline bucket): a bucket is *down* when at least half of its requests
failed; down buckets in a row, with empty buckets between them (a client backing off records nothing), make one
window. Each window is given with its start and end (UTC), its length and what failed in it, so a restart mid-run
is marked where it happened and the rest of the run can be read as the healthy part.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from swarmgauge.reports.sections import Section

DOWN_FRACTION = 0.5


@dataclass(frozen=True)
class Outage:
    start: float
    end: float
    requests: int
    failures: int

    @property
    def seconds(self) -> float:
        return self.end - self.start


def outages(times: list[float], requests: list[int], failures: list[int]) -> list[Outage]:
    """Windows of consecutive down buckets (``times`` ascending, each the start of its bucket)."""
    if not times:
        return []
    gaps = [b - a for a, b in zip(times, times[1:]) if b > a]
    bucket = min(gaps) if gaps else 1.0
    found: list[Outage] = []
    current: list[int] = []
    for index, (count, failed) in enumerate(zip(requests, failures)):
        down = count > 0 and failed >= DOWN_FRACTION * count
        if down:
            current.append(index)
        elif count > 0 and current:
            found.append(_window(current, times, requests, failures, bucket))
            current = []
    if current:
        found.append(_window(current, times, requests, failures, bucket))
    return found


def _window(indices: list[int], times: list[float], requests: list[int], failures: list[int], bucket: float) -> Outage:
    return Outage(
        times[indices[0]],
        times[indices[-1]] + bucket,
        sum(requests[i] for i in indices),
        sum(failures[i] for i in indices),
    )


def _utc(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def section(run_dir: Path) -> Section | None:
    path = run_dir / "timeline.csv"
    if not path.is_file():
        return None
    frame = pd.read_csv(path)
    if frame.empty or not {"time", "requests", "failures"} <= set(frame.columns):
        return None
    frame = frame.sort_values("time")
    found = outages(
        frame["time"].astype(float).tolist(),
        frame["requests"].astype(int).tolist(),
        frame["failures"].astype(int).tolist(),
    )
    if not found:
        return None
    rows = [
        {
            "from": _utc(o.start),
            "to": _utc(o.end),
            "seconds": round(o.seconds, 1),
            "requests": o.requests,
            "failures": o.failures,
        }
        for o in found
    ]
    table = pd.DataFrame(rows)
    lead = (
        f"{len(found)} outage window{'s' if len(found) > 1 else ''} (at least half of a timeline bucket's "
        f"requests failed), {sum(o.seconds for o in found):.0f} s in all."
    )
    return Section(
        "Outages",
        f"{lead}\n\n{table.to_markdown(index=False)}\n",
        f"<p>{html.escape(lead)}</p>{table.to_html(index=False)}",
        {"windows": [{"start": o.start, "end": o.end, "requests": o.requests, "failures": o.failures} for o in found]},
    )
