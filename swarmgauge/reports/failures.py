"""The report's failure section: failures by named error class and endpoint, with when each class began.

The classes are the named errors swarmgauge's clients record (``PoolExhausted``, ``QueueFull``, ``NotFound``,
``RequestTimeout``, ...), so a pool that ran out or a queue that filled shows as its own row and its start time.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pandas as pd

from swarmgauge.reports.sections import Section

_CLASS = re.compile(r"^([A-Za-z_][\w.]*)\(")


def error_class(error: str) -> str:
    """``PoolExhausted('...')`` -> ``PoolExhausted``; Locust's own texts (``HTTPError ...``) keep their first word."""
    match = _CLASS.match(error.strip())
    return match.group(1).rsplit(".", 1)[-1] if match else error.strip().split(" ", 1)[0].rstrip(":")


def failure_table(path: Path) -> pd.DataFrame:
    frame = pd.read_csv(path)
    if frame.empty:
        return frame
    frame["class"] = frame["Error"].astype(str).map(error_class)
    frame["endpoint"] = frame["Method"].astype(str) + " " + frame["Name"].astype(str)
    aggregations = {"Occurrences": "sum"}
    for column in ("First Seen", "Last Seen"):
        if column in frame:
            aggregations[column] = "min" if column == "First Seen" else "max"
    table = frame.groupby(["class", "endpoint"], as_index=False).agg(aggregations)
    sort = ["First Seen", "class"] if "First Seen" in table else ["class"]
    return table.sort_values(sort).rename(
        columns={"Occurrences": "failures", "First Seen": "first seen", "Last Seen": "last seen"}
    )


def section(run_dir: Path) -> Section | None:
    path = run_dir / "locust_failures.csv"
    if not path.is_file():
        return None
    table = failure_table(path)
    if table.empty:
        return None
    by_class = table.groupby("class")["failures"].sum().sort_values(ascending=False)
    lead = "Failures by class: " + ", ".join(f"{name} {count}" for name, count in by_class.items()) + "."
    if "first seen" in table:
        starts = table.groupby("class")["first seen"].min().sort_values()
        lead += " First seen: " + ", ".join(f"{name} at {moment}" for name, moment in starts.items()) + "."
    return Section(
        "Failures",
        f"{lead}\n\n{table.to_markdown(index=False)}\n",
        f"<p>{html.escape(lead)}</p>{table.to_html(index=False)}",
        {"by_class": {k: int(v) for k, v in by_class.items()}},
    )
