"""The index's colours: each row of a page's tables green, amber or red against its tolerance, and a page's tally.

A row's figures are its ratio columns (``x``, or ``<label> x`` beside ``<label>`` and ``page <label>``); the
tolerance and the stand-in setting come from the row's ``tolerance`` and ``set by`` columns, which
``index_figures.figure`` and ``step_table`` fill, or per figure from ``<label> tolerance`` and ``<label> set by``
(``index_figures.beside``'s keywords, for a row of several figures only some of which a stand-in fixes). The rule (also written in the index's header, ``RULE``):
a figure is green when its ratio is within the tolerance of 1, amber within twice that, red beyond, and red when the
page has the figure and the run did not measure it. A row that would hold (green or set) over fewer requests than its
tolerance needs (``samples``: :func:`samples_needed`) says "few samples" instead: a shortened run (``--scale`` below
1) is noisier, and its colour must not be kinder than its numbers. Where a ratio says nothing the figures' numbers are compared
(``<column> value``, which ``index_figures.figure`` and ``beside`` keep): the page's 0 against a measured 0 is green
("0 = 0"), a measured figure above the page's 0 red, or amber within an absolute tolerance (``tolerance abs``); a
page's own bound (``at most``, e.g. "< 50 MiB") is green at or below it. A figure a stand-in's setting fixes is never
green: within its tolerance it is "set by the stand-in", beyond it amber or red like any other. A row is its worst
figure; a row with nothing to compare (no page figure, or the page's words) has "no ratio"; a figure whose ratio cell
says "machine-bound" (the 2-core machine, not the target, was its bound) is "machine-bound", never counted as holding.
A verdict (the page's green, amber or red against the run's) holds when it is the same, is amber one step off and red
two steps off: the fleets' verdicts are the page's headline rows and are graded like any figure.
A workload whose exit is not the one it declared is red.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from swarmgauge.reports.index_figures import (
    AT_MOST,
    SAMPLES,
    SET_BY,
    STATISTIC,
    TOLERANCE,
    TOLERANCE_ABS,
    VALUE,
)

GREEN, AMBER, RED, SET, NO_RATIO = "green", "amber", "red", "set by the stand-in", "no ratio"
MACHINE = "machine-bound"
#: every side of a run together (generator, stand-in, its store) above this share of the machine's cores: the machine,
#: not the model, was the bound, and a figure short of the page's says "machine-bound"
MACHINE_SHARE = 0.9
FEW = "few samples"
#: worst last: a row, and a page, take the worst state of what they hold
ORDER = {GREEN: 0, NO_RATIO: 1, SET: 2, FEW: 2.5, MACHINE: 3, AMBER: 4, RED: 5}
MARK = {GREEN: "🟢", AMBER: "🟡", RED: "🔴", SET: "⚙️", NO_RATIO: "⚪", FEW: "🔘", MACHINE: "🖥️"}
DEFAULT_TOLERANCE = 0.2
#: a verdict's steps from green: the same verdict holds, one step off is amber, two red (as twice a tolerance is)
VERDICT_STEPS = {GREEN: 0, AMBER: 1, RED: 2}
SAME_VERDICT = "the same verdict"
GRADE, SHOWN_TOLERANCE, SHOWN_SET_BY = "row", "tolerance", "stand-in"

RULE = (
    "Each row's colour: green when every figure's ratio x (measured / the page's) is within the row's tolerance of 1 "
    "(|x - 1| <= tolerance, shown beside it), amber within twice that, red beyond it or when the page has a figure "
    'the run did not measure. A figure a stand-in\'s setting fixes is marked "set by the stand-in" and is never green '
    "evidence: within its tolerance it shows as set, beyond it amber or red like any other. Where the page's figure "
    'is 0 the two are compared as they are: a measured 0 is green ("0 = 0"), anything else red, or amber within an '
    'absolute tolerance shown beside it; a figure the page bounds in absolute terms ("< 50 MiB") is green at or '
    "below the bound. A fleet's verdict (green, amber, red) is green when it is the page's, amber one step off and "
    'red two. A row with nothing to compare (no page figure, or the page\'s words) shows "no ratio"; one '
    'the 2-core machine bounded (not the target) shows "machine-bound", shown and never counted as holding. A row '
    'within its tolerance but read over fewer requests than it needs says "few samples" instead (the standard error '
    "of its figure within the tolerance: 25 requests for a rate at ±20 %, 53 for a p50, 117 for a p99). A "
    "workload whose exit code is not the one it declares (a gate or drill may be meant to fail) is red. A page takes "
    "its worst row or workload; its shape checks are listed apart and never make it green."
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


@dataclass(frozen=True)
class Criterion:
    """How far one figure may stray and still hold: its ratio's tolerance, an absolute one, the page's own bound."""

    tolerance: float
    set_by: str = ""
    tolerance_abs: float | None = None
    at_most: float | None = None

    def shown(self, page_zero: bool) -> str:
        if self.at_most is not None:
            return f"≤ {self.at_most:g} (the page's bound)"
        if self.tolerance_abs is not None:
            return f"±{self.tolerance_abs:g} absolute"
        return "exact" if page_zero else f"±{self.tolerance * 100:.0f} %"


def _held(off: float, allowed: float, set_by: str) -> str:
    if off <= allowed:
        return SET if set_by else GREEN
    return AMBER if off <= 2 * allowed else RED


def figure_state(
    ratio: Any,
    measured: Any,
    page: Any,
    criterion: Criterion,
    values: tuple[float | None, float | None] = (None, None),
) -> tuple[str | None, str | None]:
    """One figure's state (None: nothing to compare, the page has no figure there), and the text its ratio cell
    shows instead when the numbers were compared as they are (None: the ratio as it is)."""
    if blank(page):
        return None, None
    if blank(measured):
        return RED, None
    if str(ratio).strip() == MACHINE:
        return MACHINE, None
    if str(page).strip() in VERDICT_STEPS and str(measured).strip() in VERDICT_STEPS:
        steps = abs(VERDICT_STEPS[str(measured).strip()] - VERDICT_STEPS[str(page).strip()])
        said = ("same", "one step off", "two steps off")[steps]
        return (SET if criterion.set_by else GREEN) if steps == 0 else AMBER if steps == 1 else RED, said
    measured_value, page_value = values
    if criterion.at_most is not None and measured_value is not None:
        under = measured_value <= criterion.at_most
        return _held(
            measured_value, criterion.at_most, criterion.set_by
        ), f"{'≤' if under else '>'} {criterion.at_most:g}"
    if page_value == 0 and measured_value is not None:
        if measured_value == 0:
            return (SET if criterion.set_by else GREEN), "0 = 0"
        within = criterion.tolerance_abs is not None and abs(measured_value) <= criterion.tolerance_abs
        return (AMBER if within else RED), f"{measured_value:g} ≠ 0"
    if criterion.tolerance_abs is not None and measured_value is not None and page_value is not None:
        off = abs(measured_value - page_value)
        shown = None if ratio_of(ratio) is not None else f"{measured_value - page_value:+g}"
        return _held(off, criterion.tolerance_abs, criterion.set_by), shown
    value = ratio_of(ratio)
    if value is None:
        return None, None
    return _held(abs(value - 1.0), criterion.tolerance, criterion.set_by), None


def _number(row: pd.Series, column: str) -> float | None:
    value = pd.to_numeric(row.get(column), errors="coerce")
    return None if value is None or pd.isna(value) else float(value)


def _value(row: pd.Series, column: str) -> float | None:
    """A figure's number: the one ``figure``/``beside`` kept beside its text, else its text when that is a plain
    number (a row made by hand, ``"0"``); None for words."""
    kept = _number(row, f"{column} {VALUE}")
    return kept if kept is not None else _number(row, column)


def criterion_of(row: pd.Series, label: str | None) -> Criterion:
    """The figure's criterion: its own columns (``<label> tolerance abs``...), else the row's."""

    def own(name: str) -> float | None:
        for column in ([f"{label} {name}"] if label else []) + [name]:
            found = _number(row, column)
            if found is not None and found >= 0:
                return found
        return None

    return Criterion(tolerance_of(row, label), set_by_of(row, label), own(TOLERANCE_ABS), own(AT_MOST))


def _grading_columns(columns: list[str]) -> list[str]:
    """The columns a row carries for its grade only: dropped from the table as shown."""
    kinds = (TOLERANCE, SET_BY, TOLERANCE_ABS, AT_MOST, VALUE, SAMPLES, STATISTIC)
    return [c for c in columns if c in kinds or c.endswith(tuple(f" {kind}" for kind in kinds))]


def samples_needed(label: str, tolerance: float) -> int:
    """Requests a figure must be read over for its standard error to be within ``tolerance`` (as a fraction).

    A rate or a mean of n requests strays about 1/sqrt(n): 1/tolerance² (25 at ±20 %). A latency quantile ``pNN``
    of a tail that falls off exponentially strays sqrt(q / (n (1 - q))) / -ln(1 - q) of itself: a p50 needs 53 at
    ±20 %, a p99 117 (467 at ±10 %)."""
    tolerance = max(tolerance, 0.01)
    match = re.fullmatch(r"p(\d+(?:\.\d+)?)", label.strip())
    quantile = float(match.group(1)) / 100 if match else 0.0
    if not 0 < quantile < 1:
        return math.ceil(1 / tolerance**2 - 1e-9)
    spread = quantile / (1 - quantile) / math.log(1 - quantile) ** 2
    return math.ceil(spread / tolerance**2 - 1e-9)


def _few(state: str, samples: float | None, label: str, criterion: Criterion) -> tuple[str, str]:
    """A holding figure read over fewer requests than it needs: "few samples", and the count beside its tolerance.
    Figures graded against an absolute tolerance or the page's own bound are counts, not samples: left as they are."""
    if samples is None or state not in (GREEN, SET) or criterion.tolerance_abs is not None or criterion.at_most:
        return state, ""
    need = samples_needed(label, criterion.tolerance)
    return (FEW, f", {samples:,.0f} requests of {need:,}") if samples < need else (state, "")


def worst(states: list[str], empty: str = NO_RATIO) -> str:
    return max(states, key=ORDER.__getitem__) if states else empty


def grade_table(table: pd.DataFrame) -> GradedTable:
    """Each row's grade from its figures, and the table as shown (the grading columns replaced by readable ones)."""
    figures = ratio_columns([str(c) for c in table.columns])
    grades, cells, tolerances, settings = [], {}, [], []
    shown = table.drop(columns=_grading_columns([str(c) for c in table.columns])).astype(object).fillna("")
    for position, (_, row) in enumerate(table.iterrows()):
        states, shown_tolerance, shown_set_by = [], {}, {}
        for ratio, measured, page in figures:
            criterion = criterion_of(row, None if ratio == "x" else measured)
            values = (_value(row, measured), _value(row, page))
            state, text = figure_state(row[ratio], row[measured], row[page], criterion, values)
            if state is None:
                continue
            statistic = row.get(STATISTIC)
            label = statistic if isinstance(statistic, str) and statistic else measured
            state, counted = _few(state, _number(row, SAMPLES), label, criterion)
            cells[(position, ratio)] = state
            states.append(state)
            if text is not None:
                shown.iloc[position, shown.columns.get_loc(ratio)] = text
            verdict = str(row[page]).strip() in VERDICT_STEPS
            shown_tolerance[measured] = SAME_VERDICT if verdict else criterion.shown(values[1] == 0) + counted
            shown_set_by[measured] = f"set by the stand-in: {criterion.set_by}" if criterion.set_by else ""
        grades.append(worst(states))
        tolerances.append(_per_figure(shown_tolerance))
        row_set_by = set_by_of(row)
        settings.append(_per_figure(shown_set_by, f"set by the stand-in: {row_set_by}" if row_set_by else ""))
    shown[GRADE] = grades
    shown[SHOWN_TOLERANCE] = tolerances
    if any(settings):
        shown[SHOWN_SET_BY] = settings
    return GradedTable(shown.reset_index(drop=True), grades, cells)


def misses(row: dict[str, Any]) -> bool:
    """The row, graded by its own figures (a page's 0, an absolute tolerance, "at most"), is amber or red: the one
    test of "strays" every why in the index is given on."""
    return grade_table(pd.DataFrame([row])).grades[0] in (AMBER, RED)


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
    text += "".join(
        f", {counts[state]} {state}" for state in (AMBER, RED, SET, FEW, MACHINE, NO_RATIO) if counts[state]
    )
    if not_reproducible:
        text += f"; {not_reproducible} row{'s' if not_reproducible != 1 else ''} not reproducible here"
    return text
