"""A reference page's published figures beside the measured rows, with the difference in %.

A plan for a reference page carries the page's rows (``reference:`` in the plan YAML, kept in run.json's plan), so a
run's report shows at a glance how far this machine's shape is from the page's: ``page req/s`` next to ``req/s`` and
``Δ req/s`` = (measured - page) / page.

A page's figures come from a target with a bottleneck (the demarkus page's 160 req/s backend); a plan may say how the
embedded target simulates it (``reference: target:``). A run whose target was not configured so, or was an external
host that cannot be checked, gets :func:`target_caveat`: its page columns are for reference only.
"""

from __future__ import annotations

import shlex
from typing import Any

import pandas as pd

from swarmgauge.reports.context import embedded_targets

FIGURES = (("rps", "req/s"), ("p50_ms", "p50"), ("p99_ms", "p99"))
#: The option that passes simulation knobs to each embedded target, for the caveat's advice.
EMBEDDED_ARGS_OPTIONS = {"mark": "--mark-embedded-args", "brain": "--brain-embedded-args"}


def reference_rows(info: dict[str, Any]) -> list[dict[str, Any]]:
    """The reference rows of the run's plan (run.json), or an empty list."""
    plan = info.get("plan") or {}
    reference = plan.get("reference") or {}
    return [dict(row, page=reference.get("page", "")) for row in reference.get("rows") or []]


def matches(title: str, name: str) -> bool:
    """A reference row named ``FETCH`` belongs to the table ``FETCH /corpus/{topic}/{doc}`` (type, then name)."""
    return title == name or title.startswith(f"{name} ")


def _key(row: dict[str, Any]) -> str:
    return f"{float(row['rate']):g}/s" if row.get("rate") is not None else f"{float(row['users']):g}"


def percent_change(measured: float | None, reference: float | None) -> float | None:
    if measured is None or reference in (None, 0):
        return None
    return (measured - reference) / reference * 100.0


def _measured(text: str) -> float | None:
    """A shown cell back to a number in the reference's unit (req/s, ms): ``1.77 s`` -> 1770."""
    parts = str(text).split()
    try:
        value = float(parts[0])
    except (IndexError, ValueError):
        return None
    return value * 1000.0 if len(parts) > 1 and parts[1] == "s" else value


def beside_reference(table: pd.DataFrame, title: str, rows: list[dict[str, Any]]) -> pd.DataFrame:
    """``table`` (a step table as shown) with the page's figures and the % difference, when the page has the rows."""
    from swarmgauge.reports.report import STEP_COLUMNS, format_latency, format_rate_cell

    mine = {_key(r): r for r in rows if matches(title, str(r["name"]))}
    if not mine:
        return table
    table = table.copy()
    for figure, column in FIGURES:
        column = "runs/s" if column == "req/s" and "runs/s" in table else column
        if not any(figure in r for r in mine.values()):
            continue
        shown, delta = [], []
        for users, cell in zip(table[next(c for c in STEP_COLUMNS if c in table)], table[column]):
            page = mine.get(str(users), {}).get(figure)
            shown.append("" if page is None else (format_rate_cell(page) if figure == "rps" else format_latency(page)))
            change = percent_change(_measured(cell), page)
            delta.append("" if change is None else f"{change:+.0f} %")
        table[f"page {column}"] = shown
        table[f"Δ {column}"] = delta
    return table


def _options(args: list[str]) -> dict[str, str]:
    """``--flag value`` / ``--flag=value`` / ``--switch`` as {flag: value}, a switch's value being ``""``."""
    found: dict[str, str] = {}
    for position, word in enumerate(args):
        if not word.startswith("--"):
            continue
        flag, equals, value = word.partition("=")
        if not equals and position + 1 < len(args) and not args[position + 1].startswith("--"):
            value = args[position + 1]
        found[flag] = value
    return found


def _same(page: str, run: str | None) -> bool:
    if run is None:
        return False
    try:
        return float(page) == float(run)
    except ValueError:
        return page == run


def target_caveat(info: dict[str, Any]) -> str | None:
    """Why this run's target is not configured like the reference page's (so the page columns are for reference
    only), or None when it is, or when the plan says nothing of the page's target."""
    reference = (info.get("plan") or {}).get("reference") or {}
    wanted = reference.get("target")
    if not reference.get("rows") or not isinstance(wanted, dict):
        return None
    name, args = str(wanted.get("embedded")), str(wanted.get("args") or "")
    page = str(reference.get("page") or "the reference page")
    knobs = _options(shlex.split(args))
    tail = f"the page columns are for reference only, not a like-for-like comparison with {page}"
    running = embedded_targets(info).get(name)
    if running is None and not info.get("host"):
        return f"This run's target is not recorded (no run.json), so whether it simulated {args} is unknown: {tail}."
    if running is None:
        host = str(info.get("host"))
        return (
            f"The target ({host}) is not the embedded {name} that simulates the page's bottleneck ({args}), and an "
            f"external host's configuration cannot be checked: {tail}."
        )
    if "args" not in running:
        return (
            f"This run did not record the embedded {name}'s options, so whether it simulated {args} is unknown: {tail}."
        )
    given = _options([str(a) for a in running["args"]])
    missing = [f"{flag} {value}".strip() for flag, value in knobs.items() if not _same(value, given.get(flag))]
    if not missing:
        return None
    option = EMBEDDED_ARGS_OPTIONS.get(name)
    advice = f' To compare, run with {option} "{args}".' if option else ""
    return (
        f"The embedded {name} was not simulating the page's bottleneck (missing: {', '.join(missing)}): {tail}.{advice}"
    )
