"""The end of a headless run on the console: the per-step table, the trend sentence, the exceptions user code raised,
the SLO verdicts and the exit code with every reason for it, one line each. ``--brief-summary`` leaves the step tables out (the SLO verdicts
and the exit code stay): they cost pandas' import, about half a second at every run's end, and a run whose report is
rendered afterwards (``swarmgauge demo``'s) has them there.

Locust ends with its whole-run table, which mixes every step and the warm-ups; what the user came for is the step
table (k6's end summary is the model). It prints after Locust's own tables, from Locust's ``quit`` event, with the
exit code and the rule that chose it, so the last lines on the screen are the run's answer.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from locust import events
from locust.env import Environment
from locust.runners import WorkerRunner

from swarmgauge.core.options import add_option
from swarmgauge.core.run_context import RunContext
from swarmgauge.listeners import outcome, rundir, slo, steps, user_errors

logger = logging.getLogger("swarmgauge.summary")

_environments: list[Any] = []


def exit_reason(code: int, verdicts: list[dict[str, Any]], decided: outcome.Outcome | None = None) -> str:
    """The exit code and every reason for it, one line each (:mod:`listeners.outcome` decided them at the end).

    Without a decision (a usage error stops the run before it, a crash may skip it) the code alone says what it means.
    """
    if decided is not None and decided.code == code:
        return "\n".join(decided.lines())
    if code == 3:
        failed = [v["expr"] for v in verdicts if v.get("status") in outcome.FAILING]
        return f"exit code 3: SLO failed ({', '.join(failed)})" if failed else "exit code 3: SLO failed"
    if code == 2:
        return "exit code 2: usage error or crash"
    if code == 1:
        return "exit code 1: requests failed or user code raised, and no SLO covers them"
    if code == outcome.NOT_REACHED_EXIT_CODE:
        return "exit code 4: cut short: an SLO was not reached (gate not exercised)"
    return f"exit code {code}"


def unfinished_sentence(count: int) -> str:
    """What the ``unfinished`` column means, said once under the tables."""
    requests = "request was" if count == 1 else "requests were"
    return (
        f"{count} {requests} still in flight when their users stopped: recorded as failures (Unfinished), "
        "timed up to the stop, in the step each started in."
    )


def summary_text(environment: Environment, code: int, *, tables: bool = True) -> str:
    """The step tables with their trend sentences (``tables``), the SLO verdicts and the exit code, as plain text."""
    lines = _step_tables(environment) if tables else []
    return "\n".join(lines + _closing_lines(environment, code)) + "\n"


def _step_tables(environment: Environment) -> list[str]:
    """The per-step tables and their sentences.

    pandas and the report's tables are imported here, not with the module: every Locust process (a worker too)
    imports this module, and only a headless master or local runner prints the summary.
    """
    import pandas as pd

    from swarmgauge.reports.report import REQUEST, step_spreads, step_tables, target_cpu_by_step

    lines = ["", "swarmgauge: per-step results (warm-up excluded)"]
    rows = steps.rows_now(environment)
    directory = rundir.run_dir(environment)
    spreads, target_cpu = {}, {}
    if directory is not None and (directory / "timeline.csv").is_file():
        spreads = step_spreads(pd.read_csv(directory / "timeline.csv"))
        target_cpu = target_cpu_by_step(directory)
    if rows:
        for title, table, sentence in step_tables(pd.DataFrame(rows), spreads, target_cpu):
            shown = table.drop(columns=[REQUEST]).to_markdown(index=False, tablefmt="simple", disable_numparse=True)
            lines += ["", title, shown]
            if sentence:
                lines.append(sentence)
        cut_off = sum(int(row.get("unfinished") or 0) for row in rows if row.get("name") != "Aggregated")
        if cut_off:
            lines += ["", unfinished_sentence(cut_off)]
    else:
        lines.append("no steps were measured")
    return lines


def _closing_lines(environment: Environment, code: int) -> list[str]:
    """What cut the run short, the exceptions user code raised, the SLO verdicts, the report and the exit code."""
    lines: list[str] = []
    directory = rundir.run_dir(environment)
    cut = RunContext.of(environment).run_info.get("cut_short")
    if cut:
        by = cut.get("by") or "-t/--run-time"
        lines += ["", f"The plan was cut short by {by} at {cut['run_time_s']:g} s of {cut['planned_s']:g} s."]
    raised = user_errors.total(environment)
    if raised:
        where = f" (tracebacks: {directory / 'locust_exceptions.csv'})" if directory is not None else ""
        lines += ["", user_errors.describe(raised, user_errors.by_class(environment)) + where]
    verdicts = RunContext.of(environment).slo_verdicts or []
    if verdicts:
        lines += ["", slo.format_verdicts(verdicts)]
    if directory is not None and (directory / "report.html").is_file():
        lines += ["", f"report: {directory / 'report.html'}"]
    lines += ["", exit_reason(code, verdicts, outcome.recorded(environment))]
    return lines


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    add_option(
        parser,
        "--brief-summary",
        action="store_true",
        default=False,
        include_in_web_ui=False,
        help="At a headless run's end print only the SLO verdicts and the exit code with its reasons, not the "
        "per-step tables (they are in the run's report; skipping them saves pandas' import)",
    )


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    _environments.append(environment)


@events.quit.add_listener
def _on_quit(exit_code: int, **_kwargs: Any) -> None:
    for environment in _environments[-1:]:
        options = getattr(environment, "parsed_options", None)
        if isinstance(environment.runner, WorkerRunner) or not getattr(options, "headless", False):
            continue
        try:
            sys.stderr.flush()  # Locust's table goes to stderr: the summary must come after it on a terminal
            tables = not getattr(options, "brief_summary", False)
            sys.stdout.write(summary_text(environment, exit_code, tables=tables))
            sys.stdout.flush()
        except Exception as exc:  # noqa: BLE001 - the run's files are written; a summary problem must not hide that
            logger.warning("could not print the end-of-run summary: %s", exc)
