"""The index's colours: each row of a page's tables green, amber or red against its tolerance, and a page's tally.

A row's figures are its ratio columns (``x``, or ``<label> x`` beside ``<label>`` and ``page <label>``); the
tolerance and the stand-in setting come from the row's ``tolerance`` and ``set by`` columns, which
``index_figures.figure`` and ``step_table`` fill, or per figure from ``<label> tolerance`` and ``<label> set by``
(``index_figures.beside``'s keywords, for a row of several figures only some of which a stand-in fixes). The rule (also written in the index's header, ``RULE``):
a figure is green when its ratio is within the tolerance of 1, amber within twice that, red beyond, and red when the
page has the figure and the run did not measure it. A figure a stand-in's setting fixes is never green: within its
tolerance it is "set by the stand-in", beyond it amber or red like any other. A row is its worst figure; a row with
nothing to divide (no page figure, or words) has "no ratio". A workload whose exit is not the one it declared is red.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from swarmgauge.reports.index_figures import SET_BY, TOLERANCE

GREEN, AMBER, RED, SET, NO_RATIO = "green", "amber", "red", "set by the stand-in", "no ratio"
#: worst last: a row, and a page, take the worst state of what they hold
ORDER = {GREEN: 0, NO_RATIO: 1, SET: 2, AMBER: 3, RED: 4}
MARK = {GREEN: "🟢", AMBER: "🟡", RED: "🔴", SET: "⚙️", NO_RATIO: "⚪"}
DEFAULT_TOLERANCE = 0.2
GRADE, SHOWN_TOLERANCE, SHOWN_SET_BY = "row", "tolerance", "stand-in"

RULE = (
    "Each row's colour: green when every figure's ratio x (measured / the page's) is within the row's tolerance of 1 "
    "(|x - 1| <= tolerance, shown beside it), amber within twice that, red beyond it or when the page has a figure "
    'the run did not measure. A figure a stand-in\'s setting fixes is marked "set by the stand-in" and is never green '
    "evidence: within its tolerance it shows as set, beyond it amber or red like any other. A row with nothing to "
    'divide (no page figure, or the page\'s words) shows "no ratio". A workload whose exit code is not the one it '
    "declares (a gate or drill may be meant to fail) is red. A page takes its worst row or workload; its shape "
    "checks are listed apart and never make it green."
)


@dataclass
class GradedTable:
    """A page table as shown: the page's layout, then each row's grade, tolerance and stand-in setting."""

    table: pd.DataFrame
    grades: list[str]
    #: (row position, column) -> the state of that ratio cell
    cells: dict[tuple[int, str], str] = field(default_factory=dict)


def blank(value: Any) -> bool:
    return value is None or (isinstance(value, float) and pd.isna(value)) or str(value).strip() == ""


def ratio_of(text: Any) -> float | None:
    """The ratio as shown (``0.98x``): the index grades what the reader sees."""
    shown = str(text).strip()
    if not shown.endswith("x"):
        return None
    try:
        return float(shown[:-1])
    except ValueError:
        return None


def ratio_columns(columns: list[str]) -> list[tuple[str, str, str]]:
    """(ratio, measured, page) column names of each figure in a table's layout."""
    found = []
    for name in columns:
        label = "measured" if name == "x" else name[:-2] if name.endswith(" x") else None
        page = "page" if name == "x" else f"page {label}"
        if label is not None and label in columns and page in columns:
            found.append((name, label, page))
    return found


def tolerance_of(row: pd.Series, label: str | None = None) -> float:
    """The figure's own tolerance (``<label> tolerance``), else the row's, else the default."""
    for column in ([f"{label} {TOLERANCE}"] if label else []) + [TOLERANCE]:
        value = pd.to_numeric(row.get(column), errors="coerce")
        if value is not None and not pd.isna(value) and value >= 0:
            return float(value)
    return DEFAULT_TOLERANCE


def set_by_of(row: pd.Series, label: str | None = None) -> str:
    """The stand-in setting fixing the figure (``<label> set by``), else the row's; "" when none does."""
    for column in ([f"{label} {SET_BY}"] if label else []) + [SET_BY]:
        if not blank(row.get(column)):
            return str(row.get(column))
    return ""


def _per_figure(values: dict[str, str], empty: str = "") -> str:
    """One text when every figure of the row shares it, else each figure's own (``p50: ±20 %; RSS: ±50 %``)."""
    if len(set(values.values())) <= 1:
        return next(iter(values.values()), empty)
    return "; ".join(f"{label}: {text}" for label, text in values.items() if text)


def figure_state(ratio: Any, measured: Any, page: Any, tolerance: float, set_by: str) -> str | None:
    """One figure's state (None: nothing to compare, the page has no figure there)."""
    if blank(page):
        return None
    if blank(measured):
        return RED
    value = ratio_of(ratio)
    if value is None:
        return None
    off = abs(value - 1.0)
    if off <= tolerance:
        return SET if set_by else GREEN
    return AMBER if off <= 2 * tolerance else RED


def worst(states: list[str], empty: str = NO_RATIO) -> str:
    return max(states, key=ORDER.__getitem__) if states else empty


def grade_table(table: pd.DataFrame) -> GradedTable:
    """Each row's grade from its figures, and the table as shown (the grading columns replaced by readable ones)."""
    figures = ratio_columns([str(c) for c in table.columns])
    grades, cells, tolerances, settings = [], {}, [], []
    for position, (_, row) in enumerate(table.iterrows()):
        states, shown_tolerance, shown_set_by = [], {}, {}
        for ratio, measured, page in figures:
            label = None if ratio == "x" else measured
            tolerance, set_by = tolerance_of(row, label), set_by_of(row, label)
            state = figure_state(row[ratio], row[measured], row[page], tolerance, set_by)
            if state is not None:
                cells[(position, ratio)] = state
                states.append(state)
                shown_tolerance[measured] = f"±{tolerance * 100:.0f} %"
                shown_set_by[measured] = f"set by the stand-in: {set_by}" if set_by else ""
        grades.append(worst(states))
        tolerances.append(_per_figure(shown_tolerance))
        row_set_by = set_by_of(row)
        settings.append(_per_figure(shown_set_by, f"set by the stand-in: {row_set_by}" if row_set_by else ""))
    grading = [
        c for c in table.columns if str(c) in (TOLERANCE, SET_BY) or str(c).endswith((f" {TOLERANCE}", f" {SET_BY}"))
    ]
    shown = table.drop(columns=grading).fillna("")
    shown[GRADE] = grades
    shown[SHOWN_TOLERANCE] = tolerances
    if any(settings):
        shown[SHOWN_SET_BY] = settings
    return GradedTable(shown.reset_index(drop=True), grades, cells)


def exit_state(code: Any, expected: Any) -> tuple[str, str]:
    """(state, label) of a workload's exit: the declared one is fine and said so when non-zero; any other is red."""
    want = int(expected) if isinstance(expected, int | float) else 0
    if not isinstance(code, int | float):
        return RED, "no exit code (did not finish)"
    code = int(code)
    if code == want:
        return GREEN, f"exit {code}" + (" (expected)" if code else "")
    said = "timed out" if code == -1 else f"exit {code}"
    return RED, f"{said} (unexpected; declared {want})"


def tally(grades: list[str], not_reproducible: int) -> str:
    """``11 of 14 rows green, 2 amber, 1 red; 3 rows not reproducible here``."""
    counts = {state: grades.count(state) for state in ORDER}
    text = f"{counts[GREEN]} of {len(grades)} rows green"
    text += "".join(f", {counts[state]} {state}" for state in (AMBER, RED, SET, NO_RATIO) if counts[state])
    if not_reproducible:
        text += f"; {not_reproducible} row{'s' if not_reproducible != 1 else ''} not reproducible here"
    return text
