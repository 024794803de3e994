"""``swarmgauge compare BASE NEW``: what changed between two runs, and exit 3 when NEW regressed (the CI gate).

Per step and request name: req/s, p50 and p99 of both runs and the change in %. Each metric is decided over the
step's seconds (``timeline.csv``, see :mod:`swarmgauge.reports.compare_stats`): a regression needs BOTH a Mann-Whitney
p below 0.05 AND a per-second shift worse than ``--tolerance`` (req/s down, or a latency up, by more than that
fraction) with its whole 95 % confidence interval; each row shows the shift, its interval and p. Not gated, and
listed as such: a step with fewer than 4 seconds on a side; a p99 whose seconds hold fewer than 1,000 requests (each
second's p99 is then its few slowest requests, which a loaded machine moves as far as a regression does); a request
name that shares its step's seconds with others (the step's ``all requests`` row is gated instead). SLOs that passed
in BASE and fail in NEW regress too; the memory slope of each run is shown beside the other. BASE may also be a plan with a
reference page's figures (``reference:``): a page has one figure per step, no seconds, so against it the tolerance
alone decides, and a NEW whose target is not configured like the page's is told so. Writes ``compare.md`` and
``compare.html`` (into NEW, or ``--out``) and prints the Markdown.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from swarmgauge.core.numbers import format_latency, format_rate, number
from swarmgauge.core.request_names import request_title
from swarmgauge.errors import UsageError
from swarmgauge.plans.plan import load_plan_file
from swarmgauge.reports import chart_html, compare_page, table_html
from swarmgauge.reports.compare_stats import (
    ALPHA,
    MIN_SECONDS,
    MIN_TAIL_REQUESTS,
    Shift,
    compare_samples,
    fewest_requests,
    step_seconds,
)
from swarmgauge.reports.context import load_run_json
from swarmgauge.reports.reference import percent_change, target_caveat

FIGURES = (("rps", "req/s", -1), ("p50_ms", "p50", +1), ("p99_ms", "p99", +1))  # sign: which way is worse
#: Requests a step needs on both sides before its percentile is gated: below 1 / (1 - q), the q-th percentile is
#: the slowest request (HDR ranks ceil(q * n)), one outlier rather than a tail.
MIN_REQUESTS = {"p99_ms": 100}
ALL_REQUESTS = "all requests"  # a step's row over every request name, when it has several (its seconds mix them)


class CompareError(Exception):
    """BASE or NEW is not something compare can read (no run folder, no steps.csv, no reference rows)."""


@dataclass
class Side:
    """One side of a comparison: step rows keyed by (request title, users or rate), SLO statuses, memory slope, and
    each step's seconds keyed by users or rate (none for a reference page, whose ``reference`` is the plan's)."""

    label: str
    rows: dict[tuple[str, str], dict[str, Any]]
    slos: dict[str, str]
    memory_slope: float | None = None
    seconds: dict[str, pd.DataFrame] = field(default_factory=dict)
    reference: dict[str, Any] | None = None
    info: dict[str, Any] = field(default_factory=dict)
    steps: pd.DataFrame | None = None  # the run's steps.csv, for the charts


def _users_key(row: dict[str, Any]) -> str:
    rate = row.get("target_rate")
    if rate not in (None, "") and not (isinstance(rate, float) and pd.isna(rate)):
        return f"{float(rate):g}/s"
    return f"{float(row['users']):g}"


def resolve_run_dir(path: Path) -> Path:
    """A run folder, or a folder of runs with a ``latest`` link (the newest run in it)."""
    if (path / "steps.csv").is_file():
        return path
    if (path / "latest" / "steps.csv").is_file():
        return (path / "latest").resolve()
    raise CompareError(f"{path}: no steps.csv (not a run folder)")


def _memory_slope(run_dir: Path) -> float | None:
    """The steepest target memory slope after warm-up, MiB/h, as the report's memory section computes it."""
    if not (run_dir / "resources.csv").is_file():
        return None
    from swarmgauge.reports.resources import load_rows, trend_table, warmup_of

    table = trend_table(load_rows(run_dir / "resources.csv"), warmup_of(run_dir))
    slopes = table["MiB/h"].dropna() if "MiB/h" in table else pd.Series(dtype=float)
    return None if slopes.empty else float(slopes.max())


def load_run(path: Path) -> Side:
    """A run folder's step rows (named as every other view names them), its SLOs, memory slope and step seconds."""
    run_dir = resolve_run_dir(path)
    steps = pd.read_csv(run_dir / "steps.csv")
    named = steps[steps["name"] != "Aggregated"]
    names_in_step = named.groupby("step").size().to_dict() if "step" in named else {}
    rows = {}
    for row in named.to_dict(orient="records"):
        shared = int(names_in_step.get(row.get("step"), 1))
        rows[(request_title(row["request_type"], row["name"]), _users_key(row))] = dict(row, names_in_step=shared)
    for row in steps[steps["name"] == "Aggregated"].to_dict(orient="records"):
        if int(names_in_step.get(row.get("step"), 1)) > 1:
            rows[(ALL_REQUESTS, _users_key(row))] = dict(row, names_in_step=1)
    users_of_step = {int(row["step"]): _users_key(row) for row in named.to_dict(orient="records") if "step" in row}
    seconds = {users_of_step[step]: frame for step, frame in step_seconds(run_dir).items() if step in users_of_step}
    slos = {}
    if (run_dir / "slo.json").is_file():
        slos = {v["expr"]: v["status"] for v in json.loads((run_dir / "slo.json").read_text()).get("verdicts", [])}
    return Side(str(path), rows, slos, _memory_slope(run_dir), seconds, info=load_run_json(run_dir), steps=steps)


def load_reference(path: Path) -> Side:
    """A plan (file or bundled name) whose ``reference:`` rows become the BASE side."""
    try:
        plan = load_plan_file(path)
    except UsageError as exc:
        raise CompareError(str(exc)) from None
    if not plan.reference:
        raise CompareError(f"{path}: the plan has no reference: figures")
    rows = {
        (str(r["name"]), f"{float(r['rate']):g}/s" if r.get("rate") is not None else f"{float(r['users']):g}"): r
        for r in plan.reference["rows"]
    }
    return Side(f"{plan.reference.get('page') or plan.name} (reference page)", rows, {}, reference=plan.reference)


def load_side(text: str) -> Side:
    path = Path(text)
    if path.is_dir():
        return load_run(path)
    if path.suffix in (".yaml", ".yml") or not path.exists():
        return load_reference(path)
    raise CompareError(f"{text}: neither a run folder nor a plan with reference figures")


def _match(base: Side, key: tuple[str, str]) -> dict[str, Any] | None:
    """BASE's row for NEW's key; a reference row named by request type only (``FETCH``) matches ``FETCH /path``."""
    if key in base.rows:
        return base.rows[key]
    title, users = key
    return next((row for (name, u), row in base.rows.items() if u == users and title.startswith(f"{name} ")), None)


def _shown(figure: str, value: float | None) -> str:
    if value is None:
        return ""
    return format_rate(value) if figure == "rps" else format_latency(value)


def _too_few_requests(figure: str, before: dict[str, Any], row: dict[str, Any]) -> str | None:
    """Why this figure is not gated (too few requests on a side), or None; a side without a count (a reference
    page's row) counts as enough."""
    needed = MIN_REQUESTS.get(figure)
    counts = [number(side.get("requests")) for side in (before, row)]
    if needed is None or all(c is None or c >= needed for c in counts):
        return None
    shown = ", ".join(f"{'?' if c is None else f'{c:g}'} {side}" for c, side in zip(counts, ("base", "new")))
    return f"fewer than {needed} requests ({shown}), so it is the slowest single request"


def _why_untested(figure: str, base: Side, new: Side, key: tuple[str, str], before: dict, row: dict) -> str | None:
    """Why this metric of this row is not tested (too few requests, seconds shared by several names, no seconds)."""
    few = _too_few_requests(figure, before, row)
    if few:
        return few
    shared = int(number(row.get("names_in_step")) or 1)
    if shared > 1:
        return f"its step's seconds mix {shared} request names (the step's {ALL_REQUESTS!r} row is gated)"
    missing = [name for name, side in (("BASE", base), ("NEW", new)) if key[1] not in side.seconds]
    if missing:
        return f"no per-second samples (timeline.csv) in {' and '.join(missing)}"
    if figure == "p99_ms":
        fewest = [fewest_requests(side.seconds[key[1]]) for side in (base, new)]
        if any(f is None or f < MIN_TAIL_REQUESTS for f in fewest):
            shown = ", ".join("?" if f is None else f"{f:,.0f}" for f in fewest)
            return (
                f"its seconds hold fewer than {MIN_TAIL_REQUESTS:,} requests (fewest {shown} in base, new), so each "
                "second's p99 is its few slowest requests, which a loaded machine moves as far as a regression"
            )
    counts = [int(side.seconds[key[1]][figure].notna().sum()) for side in (base, new)]
    if min(counts) < MIN_SECONDS:
        return f"too few seconds ({counts[0]} base, {counts[1]} new; a test needs {MIN_SECONDS} on each side)"
    return None


def _tested(figure: str, base: Side, new: Side, users: str) -> Shift | None:
    if users not in base.seconds or users not in new.seconds:
        return None
    return compare_samples(base.seconds[users][figure].to_numpy(), new.seconds[users][figure].to_numpy())


def compare(
    base: Side,
    new: Side,
    tolerance: float,
    not_gated: list[str] | None = None,
    colours: dict[tuple[int, str], str] | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """The comparison table and the regressions (one line each, naming the step, the metric, the shift and its p);
    changes beyond the tolerance that are not tested, or not told from noise, go to ``not_gated`` instead.
    ``colours`` gets each Δ cell's verdict, keyed by (row, column): red a regression, amber beyond the tolerance but
    not gated, green within it."""
    table: list[dict[str, Any]] = []
    regressions: list[str] = []
    skipped = not_gated if not_gated is not None else []
    verdicts = colours if colours is not None else {}
    for key, row in sorted(new.rows.items(), key=lambda item: (item[0][0], float(item[0][1].rstrip("/s")))):
        before = _match(base, key)
        if before is None:
            continue
        line: dict[str, Any] = {"request": key[0], "users": key[1], "step": row.get("label", "")}
        for figure, column, worse in FIGURES:
            old, now = number(before.get(figure)), number(row.get(figure))
            change = percent_change(now, old)
            beyond = change is not None and change * worse > tolerance * 100.0
            line[f"{column} base"], line[f"{column} new"] = _shown(figure, old), _shown(figure, now)
            line[f"Δ {column}"] = "" if change is None else f"{change:+.1f} %"
            what = (
                f"{key[0]} at step {row.get('label') or key[1]!r}: {column} {change:+.1f} % "
                f"({_shown(figure, old)} -> {_shown(figure, now)})"
            )
            if base.reference is not None:  # a page's one figure per step: the tolerance alone decides
                line[f"{column} shift [95 % CI] p"] = "page figure"
                reason = _too_few_requests(figure, before, row)
                if beyond and reason is None:
                    regressions.append(f"{what}, beyond the {tolerance * 100:g} % tolerance")
                elif beyond:
                    line[f"Δ {column}"] += " (not gated)"
                    skipped.append(f"{what}: {reason}")
                verdicts[(len(table), f"Δ {column}")] = "green" if not beyond else "red" if reason is None else "amber"
                continue
            reason = _why_untested(figure, base, new, key, before, row)
            shift = None if reason else _tested(figure, base, new, key[1])
            if shift is None:
                reason = reason or "BASE's seconds have a median of zero, no scale for a change in %"
                line[f"{column} shift [95 % CI] p"] = "not gated"
                if beyond:
                    line[f"Δ {column}"] += " (not gated)"
                    skipped.append(f"{what}: not gated, {reason}")
                    verdicts[(len(table), f"Δ {column}")] = "amber"
                continue
            line[f"{column} shift [95 % CI] p"] = shift.shown()
            if shift.beyond(tolerance * 100.0, worse):
                regressions.append(f"{what}, beyond the {tolerance * 100:g} % tolerance: {shift.described()}")
                verdicts[(len(table), f"Δ {column}")] = "red"
            elif beyond or shift.shift_percent * worse > tolerance * 100.0:
                why = "not significant" if shift.p_value >= ALPHA else "its confidence interval reaches the tolerance"
                skipped.append(f"{what}: {why}, {shift.described()}")
                verdicts[(len(table), f"Δ {column}")] = "amber"
            else:
                verdicts[(len(table), f"Δ {column}")] = "green"
        table.append(line)
    for expr, status in new.slos.items():
        if base.slos.get(expr) == "pass" and status == "fail":
            regressions.append(f"SLO {expr}: passed in BASE, fails in NEW")
    return pd.DataFrame(table), regressions


def caveat(base: Side, new: Side) -> str | None:
    """Against a reference page: whether NEW's target was configured like the page's (see ``reference.target_caveat``)."""
    if base.reference is None:
        return None
    return target_caveat({**new.info, "plan": {"reference": base.reference}})


def _slo_table(base: Side, new: Side) -> pd.DataFrame:
    exprs = list(dict.fromkeys(list(base.slos) + list(new.slos)))
    return pd.DataFrame(
        [
            {
                "SLO": e,
                "base": base.slos.get(e, ""),
                "new": new.slos.get(e, ""),
                "change": "" if base.slos.get(e) == new.slos.get(e) else "changed",
            }
            for e in exprs
        ]
    )


def _memory_line(base: Side, new: Side) -> str | None:
    if base.memory_slope is None and new.memory_slope is None:
        return None
    shown = [("unknown" if s is None else f"{s:.1f} MiB/h") for s in (base.memory_slope, new.memory_slope)]
    line = f"Target memory slope after warm-up: base {shown[0]}, new {shown[1]}"
    if base.memory_slope is not None and new.memory_slope is not None:
        line += f" (change {new.memory_slope - base.memory_slope:+.1f} MiB/h)"
    return line + "."


def render(base: Side, new: Side, tolerance: float) -> tuple[str, str, list[str]]:
    """(markdown, html, regressions)."""
    not_gated: list[str] = []
    colours: dict[tuple[int, str], str] = {}
    table, regressions = compare(base, new, tolerance, not_gated, colours)
    verdict = (
        f"REGRESSION beyond the {tolerance * 100:g} % tolerance:"
        if regressions
        else f"No regression beyond the {tolerance * 100:g} % tolerance."
    )
    method = (
        f"Against a reference page (one figure per step, no seconds) a change beyond the {tolerance * 100:g} % "
        "tolerance is a regression."
        if base.reference is not None
        else f"A change is a regression when the step's seconds differ (Mann-Whitney p < {ALPHA:g}) and their "
        f"shift (Hodges-Lehmann, % of BASE's median) is beyond the {tolerance * 100:g} % tolerance with its whole "
        f"95 % confidence interval; a step with fewer than {MIN_SECONDS} seconds on a side is not gated."
    )
    md = ["# swarmgauge compare", "", f"BASE: {base.label}  ", f"NEW: {new.label}", "", verdict, ""]
    md += [f"- {line}" for line in regressions] + ([""] if regressions else [])
    md += [method, ""]
    parts = [
        f"<h1>swarmgauge compare</h1><p>BASE: {html.escape(base.label)}<br>NEW: {html.escape(new.label)}</p>",
        f"<p class='{'bound' if regressions else 'knee'}'>{html.escape(verdict)}</p>",
    ]
    if regressions:
        parts.append("<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in regressions) + "</ul>")
    parts.append(f"<p>{html.escape(method)}</p>")
    page_caveat = caveat(base, new)
    if page_caveat:
        md += [f"**{page_caveat}**", ""]
        parts.append(f"<p class='bound'><b>{html.escape(page_caveat)}</b></p>")
    if not_gated:
        heading = "Beyond the tolerance but not gated, or not told from noise:"
        md += [heading, ""] + [f"- {line}" for line in not_gated] + [""]
        parts.append(f"<p>{heading}</p><ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in not_gated) + "</ul>")
    if table.empty:
        md += ["No step and request name is in both runs.", ""]
        parts.append("<p>No step and request name is in both runs.</p>")
    else:
        md += ["## Steps", "", table.to_markdown(index=False, disable_numparse=True), ""]
        parts += compare_page.charts(base, new) + ["<h2>Steps</h2>", table_html.table(table, (), colours)]
    slos = _slo_table(base, new)
    if not slos.empty:
        md += ["## SLOs", "", slos.to_markdown(index=False), ""]
        parts += ["<h2>SLOs</h2>", table_html.table(slos, ("base", "new", "change"))]
    memory = _memory_line(base, new)
    if memory:
        md += ["## Memory", "", memory, ""]
        parts += ["<h2>Memory</h2>", f"<p>{html.escape(memory)}</p>"]
    page = chart_html.page("swarmgauge compare", parts)
    return "\n".join(md) + "\n", page, regressions


def parse_tolerance(text: str) -> float:
    value = text.strip()
    try:
        number = float(value.rstrip("%")) / (100.0 if value.endswith("%") else 1.0)
    except ValueError:
        raise CompareError(f"--tolerance {text!r}: expected a fraction (0.1) or a percentage (10%)") from None
    if not 0 <= number < 10:
        raise CompareError(f"--tolerance {text!r}: must be between 0 and 1000 %")
    return number
