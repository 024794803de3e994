"""Helpers of the demo index's page sections: reading a run folder's files, figures beside the page's, checks."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

MIB = 2**20
#: the columns a row carries for the index to grade it: how far its ratios may stray from 1 and still be green, and
#: the stand-in setting that fixes its figures (``reports/index_grades.py`` reads and renders them)
TOLERANCE = "tolerance"
SET_BY = "set by"
#: a figure's own numbers beside its shown text (``<shown column> value``): the grading compares them where a ratio
#: says nothing (the page's figure is 0, or the page states a bound in absolute terms)
VALUE = "value"
#: an absolute tolerance in the figure's own units: with the page's 0, a measured figure within it is amber (the page
#: says none, the run saw a few), beyond it red; with another page figure, green within it, as the ratio's tolerance
TOLERANCE_ABS = "tolerance abs"
#: the page's own ceiling for a figure (e.g. "< 50 MiB"): green at or below it, amber to twice it, red beyond
AT_MOST = "at most"
#: the requests a row's figures were read over: under what its tolerance needs, a row that holds says "few samples"
SAMPLES = "samples"
#: what a ``figure`` with ``samples`` is ("p50", "p99"; a rate or a mean without one): how many requests it needs
STATISTIC = "statistic"


@dataclass
class Check:
    """One shape check: what it saw, and whether the page's shape holds there."""

    holds: bool
    text: str


@dataclass
class PageSection:
    """What the index shows of one page: its tables, shape checks, notes, and the rows it does not attempt.

    ``not_reproducible`` holds ``(the page's row, why in one line)`` for each row of the page no workload attempts.
    ``measured_only`` holds tables of figures the run measures and the page gives none for: shown after the page's
    rows, never graded and never counted among them.
    """

    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    not_reproducible: list[tuple[str, str]] = field(default_factory=list)
    measured_only: list[tuple[str, pd.DataFrame]] = field(default_factory=list)


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def run_json(runs: dict[str, Path | None], workload: str, name: str) -> Any:
    """A JSON file of one workload's run folder (None when the run or the file is missing)."""
    run = runs.get(workload)
    return read_json(run / name) if run is not None else None


def read_steps(run: Path | None) -> pd.DataFrame:
    """A run folder's ``steps.csv`` (an empty frame when the run left none)."""
    if run is None or not (run / "steps.csv").is_file():
        return pd.DataFrame()
    try:
        return pd.read_csv(run / "steps.csv")
    except (ValueError, pd.errors.EmptyDataError):
        return pd.DataFrame()


def requests_of(steps: pd.DataFrame, request_type: str) -> pd.DataFrame:
    """The measured rows of one request type, one per step, ordered by users."""
    if steps.empty or "request_type" not in steps:
        return steps
    rows = steps[(steps["request_type"] == request_type) & (pd.to_numeric(steps["requests"], errors="coerce") > 0)]
    return rows.sort_values(["users", "step"]).reset_index(drop=True)


def aggregated(steps: pd.DataFrame) -> pd.DataFrame:
    if steps.empty or "name" not in steps:
        return steps
    return steps[steps["name"] == "Aggregated"].sort_values("step").reset_index(drop=True)


def ms(value: Any) -> str:
    number = pd.to_numeric(value, errors="coerce")
    if number is None or pd.isna(number):
        return ""
    return f"{number / 1000:.2f} s" if number >= 1000 else f"{number:.3g} ms" if number < 10 else f"{number:.0f} ms"


def rate(value: Any) -> str:
    number = pd.to_numeric(value, errors="coerce")
    return "" if number is None or pd.isna(number) else f"{number:.3g}" if number < 10 else f"{number:.0f}"


def times(measured: Any, page: Any) -> str:
    """measured / published, as ``0.98x`` (blank when either is missing)."""
    m, p = pd.to_numeric(measured, errors="coerce"), pd.to_numeric(page, errors="coerce")
    if m is None or p is None or pd.isna(m) or pd.isna(p) or p == 0:
        return ""
    ratio = m / p
    return f"{ratio:.2f}x" if ratio >= 0.1 else f"{ratio:.1g}x"


def seconds(value: Any) -> str:
    number = pd.to_numeric(value, errors="coerce")
    return "" if number is None or pd.isna(number) else f"{number:.2f} s"


def missing(value: Any) -> bool:
    """No number there: None, NaN or text that is not a number."""
    if value is None:
        return True
    number = pd.to_numeric(value, errors="coerce")
    return bool(pd.isna(number))


def as_number(value: Any) -> float | None:
    """The value as a float (None when it is no number: words, blank, NaN)."""
    return None if missing(value) else float(pd.to_numeric(value, errors="coerce"))


def beside(
    row: dict[str, Any],
    label: str,
    measured: Any,
    page: Any,
    shown: Callable[[Any], str],
    *,
    tolerance: float | None = None,
    set_by: str | None = None,
    tolerance_abs: float | None = None,
    at_most: float | None = None,
) -> None:
    """One figure of a row of several, the page's beside it and the ratio; ``tolerance``, ``set_by``,
    ``tolerance_abs`` and ``at_most`` (as in :func:`figure`) for this figure alone, when it differs from the row's."""
    row[label] = "" if missing(measured) else shown(measured)
    row[f"page {label}"] = "" if missing(page) else shown(page)
    row[f"{label} x"] = times(measured, page)
    row[f"{label} {VALUE}"], row[f"page {label} {VALUE}"] = as_number(measured), as_number(page)
    if tolerance is not None:
        row[f"{label} {TOLERANCE}"] = tolerance
    if set_by:
        row[f"{label} {SET_BY}"] = set_by
    if tolerance_abs is not None:
        row[f"{label} {TOLERANCE_ABS}"] = tolerance_abs
    if at_most is not None:
        row[f"{label} {AT_MOST}"] = at_most


def step_table(
    rows: pd.DataFrame,
    page: dict[int, tuple[float, ...]],
    label: str,
    first: str,
    unit: str = "req/s",
    *,
    tolerance: float = 0.2,
    set_by: str | None = None,
) -> pd.DataFrame:
    """The page's ``Step | Workers | req/s | p50 | p99`` layout, each figure with the page's and the ratio.

    ``tolerance`` is how far (as a fraction) a ratio may stray from 1 and the row still be green (amber to twice that,
    red beyond); ``set_by`` names the stand-in setting that fixes these figures, when one does: every figure of these
    rows is then "set by the stand-in", never green (``index_grades`` colours the rows and shows both beside them).
    """
    out = []
    for position, (_, measured) in enumerate(rows.iterrows()):
        users = int(measured["users"])
        figures = page.get(users, (None, None, None))
        row: dict[str, Any] = {first: label if position == 0 else "", "Workers": users}
        beside(row, unit, measured["rps"], figures[0], rate)
        beside(row, "p50", measured["p50_ms"], figures[1], ms)
        beside(row, "p99", measured["p99_ms"], figures[2], ms)
        row[TOLERANCE], row[SET_BY] = tolerance, set_by or ""
        row[SAMPLES] = as_number(measured.get("requests"))
        out.append(row)
    return pd.DataFrame(out)


def flat(rps: list[float], tolerance: float = 0.2) -> bool:
    """Throughput within ``tolerance`` of its mean at every step."""
    if not rps:
        return False
    mean = sum(rps) / len(rps)
    return mean > 0 and all(abs(value - mean) <= tolerance * mean for value in rps)


def figure(
    label: str,
    measured: Any,
    page: Any,
    shown: Callable[[Any], str],
    *,
    tolerance: float = 0.2,
    set_by: str | None = None,
    tolerance_abs: float | None = None,
    at_most: float | None = None,
    samples: float | None = None,
    statistic: str | None = None,
) -> dict[str, Any]:
    """One figure beside the page's; ``tolerance`` and ``set_by`` as in :func:`step_table`; ``samples``: the requests
    it was read over, when the row should say "few samples" below what its tolerance needs (``index_grades``), and
    ``statistic`` what the figure is ("p50": a quantile needs more requests than a rate or a mean at one tolerance).

    Where a ratio says nothing, the figure's numbers are compared as they are (``index_grades``): the page's 0
    against a measured 0 is green ("0 = 0"), a measured figure above the page's 0 amber within ``tolerance_abs``
    (in the figure's units) and red beyond; ``tolerance_abs`` against another page figure is green within it, and
    ``at_most`` (the page's own ceiling, e.g. "< 50 MiB") is green at or below it, whatever the ratio."""
    row = {
        "figure": label,
        "measured": "" if missing(measured) else shown(measured),
        "page": "" if missing(page) else shown(page),
        "x": times(measured, page),
        f"measured {VALUE}": as_number(measured),
        f"page {VALUE}": as_number(page),
        TOLERANCE: tolerance,
        SET_BY: set_by or "",
    }
    if tolerance_abs is not None:
        row[TOLERANCE_ABS] = tolerance_abs
    if at_most is not None:
        row[AT_MOST] = at_most
    if samples is not None:
        row[SAMPLES] = samples
    if statistic is not None:
        row[STATISTIC] = statistic
    return row
