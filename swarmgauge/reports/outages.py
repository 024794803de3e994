"""The report's outage section: the windows of the run in which most requests failed (a target down or restarting).

Read from ``timeline.csv`` (one row per timeline bucket): a bucket is *down* when at least half of its requests
failed; down buckets in a row, with empty buckets between them (a client backing off records nothing), make one
window. The window's edges follow the real outage as closely as the buckets allow: a bucket with failures right
before or after the down ones joins it (the kill and the recovery fall inside a bucket, so its requests are mixed),
and the window lasts until the first bucket with answers, over the silent buckets before it (clients backing off
found the target still down), when that silence is no longer than a client's longest backoff wait. Each window is
given with its start and end (UTC), its length and what failed in it, so a restart mid-run is marked where it
happened and the rest of the run can be read as the healthy part.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from swarmgauge.reports.sections import Section

DOWN_FRACTION = 0.5
SILENCE_S = 5.0  # the longest wait of a client's backoff (Mark's cap): a longer silence is the load stopping


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
    """Windows of consecutive down buckets and their edges (``times`` ascending, each the start of its bucket)."""
    if not times:
        return []
    gaps = [b - a for a, b in zip(times, times[1:]) if b > a]
    bucket = min(gaps) if gaps else 1.0
    found: list[Outage] = []
    current: list[int] = []
    used = -1  # the last bucket an earlier window took: a bucket between two windows joins only the first
    for index, (count, failed) in enumerate(zip(requests, failures)):
        down = count > 0 and failed >= DOWN_FRACTION * count
        if down:
            current.append(index)
        elif count > 0 and current:
            outage, used = _window(current, index, used, times, requests, failures, bucket)
            found.append(outage)
            current = []
    if current:
        found.append(_window(current, None, used, times, requests, failures, bucket)[0])
    return found


def _window(
    down: list[int],
    after: int | None,
    used: int,
    times: list[float],
    requests: list[int],
    failures: list[int],
    bucket: float,
) -> tuple[Outage, int]:
    """The window of the down buckets ``down`` and the last bucket it takes; ``after`` is the first bucket with
    answers that follows, if any, and buckets up to ``used`` belong to the window before."""
    first, last = down[0], down[-1]
    before = next((i for i in range(first - 1, used, -1) if requests[i] > 0), None)
    if before is not None and failures[before] > 0 and times[first] - times[before] <= bucket:
        first = before
    end = times[last] + bucket
    if after is not None and times[after] - end <= SILENCE_S:
        end = times[after]
        if failures[after] > 0:
            last, end = after, times[after] + bucket
    included = [i for i in range(first, last + 1) if requests[i] > 0]
    outage = Outage(times[first], end, sum(requests[i] for i in included), sum(failures[i] for i in included))
    return outage, last


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
