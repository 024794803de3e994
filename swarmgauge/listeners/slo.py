"""Pass/fail thresholds over the run's per-step statistics; the run's exit code follows :mod:`listeners.outcome`.

Grammar: ``[TYPE[:NAME]:]METRIC OP VALUE[UNIT][@step|@run]`` such as ``FETCH:p99<500ms``, ``fail_ratio<0.01``,
``rps>150@step``, ``dropped==0``, ``rss_delta<50MiB``, ``user_errors<10``. Built-in metrics: ``p50 p90 p99 p99.9 max
avg`` (ms), ``fail_ratio``, ``rps``, ``requests``, ``failures``, ``unfinished`` and every per-step counter (``dropped``,
``user_errors``, ...); other listeners add terms with :func:`register_metric`. Providers return base units:
milliseconds for times, bytes for sizes, bytes per hour for slopes (``MiB/h``), fractions for ratios (``%`` divides
by 100). ``@run`` (the default) checks the whole run; ``@step`` checks every step and fails if any step fails.

``user_errors`` is the count of exceptions raised by user code (a task or ``on_start``: Locust's ``user_error``
event), a plain count, not a ratio (Locust counts no task iterations to divide by): ``user_errors==0`` for none,
``user_errors<10`` to tolerate a few, ``user_errors<5@step`` per step. Without an SLO naming it, a run whose user
code raised fails (exit 1, "user code raised N exceptions"): an SLO on ``fail_ratio`` judges failed requests, not
exceptions, so it no longer passes a run whose iterations raise after a successful request.

Requests still in flight when their user was stopped are failures (``Unfinished``, with their time so far): they
count in ``fail_ratio`` and ``failures``. A step that held users and whose every request was cut off that way (no
answer at all) fails every gate at the end, the reason saying ``no answers in step N (X unfinished)``
(:mod:`listeners.unanswered`).

Verdicts: ``pass``; ``fail``; ``no data`` (a provider's ``None``), which fails the gate (a gate that passes on
nothing measured would pass a target that never answered); a threshold naming a request type or name that never
appeared fails and says so; and ``not reached (cut short)`` when ``-t`` stopped the plan first and the gate could not
be measured: a request type or name that never appeared, or a ``@step`` threshold with steps that never ran. It does
not pass (exit 4, "gate not exercised") and does not fail (it says nothing about the target). ``@run`` thresholds over
requests that did run are judged on what ran. Exit codes: see :mod:`listeners.outcome` (3 an SLO failed, 2 usage
error or crash, 1 user code raised or requests failed uncovered, 4 a gate not reached, 0 otherwise); an SLO on
``fail_ratio`` or ``failures`` that holds makes failed requests alone exit 0. ``--slo-junit FILE`` writes the
verdicts as JUnit XML (:mod:`listeners.slo_junit`).
"""

from __future__ import annotations

import json
import logging
import math
import operator
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from locust import events
from locust.env import Environment
from locust.runners import WorkerRunner

from swarmgauge.core import hooks
from swarmgauge.core.lifecycle import at_end
from swarmgauge.core.options import add_option
from swarmgauge.core.run_context import RunContext
from swarmgauge.core.slo_units import LATENCY_METRICS, UNITS, in_unit
from swarmgauge.errors import UsageError, stop_on_usage_error
from swarmgauge.listeners import outcome, run_redaction, rundir, slo_junit, steps, unanswered, user_errors
from swarmgauge.listeners.outcome import (  # noqa: F401 - covers_failures: API
    FAILING,
    NOT_REACHED,
    covers_failures,
    stopper,
)
from swarmgauge.listeners.steps_csv import step_durations

logger = logging.getLogger("swarmgauge.slo")

SLO_EXIT_CODE = outcome.SLO_EXIT_CODE
AMBER_MARGIN = 0.10
Provider = Callable[[Any, "int | None"], "float | None"]
register_metric = hooks.register_metric

#: Comparison operators, longest first as the grammar matches them.
OPERATORS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    ">": operator.gt,
}
#: Where a threshold applies (``@run`` when none is given).
SCOPES = {"run": "the whole run (the default)", "step": "every step; fails if any step fails"}
GRAMMAR = f"[TYPE[:NAME]:]METRIC OP VALUE[UNIT][{'|'.join('@' + s for s in reversed(SCOPES))}]"
_EXPR = re.compile(
    r"^\s*(?P<left>[^<>=!]+?)\s*(?P<op>" + "|".join(map(re.escape, OPERATORS)) + r")\s*"
    r"(?P<value>[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
    r"\s*(?P<unit>[A-Za-z%/]*)\s*(?:@(?P<scope>" + "|".join(SCOPES) + r"))?\s*$"
)
REQUEST_METRICS = set(LATENCY_METRICS) | {"max", "avg", "fail_ratio", "rps", "requests", "failures", "unfinished"}


def known_metric(metric: str) -> bool:
    return (
        metric in REQUEST_METRICS or hooks.metric_provider(metric) is not None or metric in steps.step_counter_names()
    )


@dataclass(frozen=True)
class Threshold:
    """One parsed SLO expression."""

    expr: str
    metric: str
    op: str
    value: float
    unit: str
    scope: str
    request_type: str | None = None
    name: str | None = None

    def holds(self, observed: float) -> bool:
        return OPERATORS[self.op](observed, self.value)


def parse(expr: str) -> Threshold:
    """Parse one expression; a malformed one raises :class:`UsageError` naming what is wrong."""
    match = _EXPR.match(expr or "")
    if not match:
        raise UsageError(f"malformed --slo {expr!r}: expected {GRAMMAR}")
    parts = [p.strip() for p in match.group("left").split(":")]
    metric = parts[-1]
    request_type = parts[0] if len(parts) >= 2 else None
    name = ":".join(parts[1:-1]) if len(parts) >= 3 else None
    if not metric or any(p == "" for p in parts):
        raise UsageError(f"malformed --slo {expr!r}: empty request type, name or metric")
    if not known_metric(metric):
        raise UsageError(f"unknown metric {metric!r} in --slo {expr!r}")
    if request_type is not None and metric not in REQUEST_METRICS and metric not in steps.step_counter_names():
        raise UsageError(f"--slo {expr!r}: metric {metric!r} does not take a request type")
    unit = match.group("unit")
    if unit not in UNITS:
        raise UsageError(f"unknown unit {unit!r} in --slo {expr!r}")
    value = float(match.group("value")) * UNITS[unit]
    if not math.isfinite(value):
        raise UsageError(f"--slo {expr!r}: the threshold must be a finite number")
    if value < 0 and (metric in REQUEST_METRICS or metric in steps.step_counter_names()):
        raise UsageError(f"--slo {expr!r}: {metric} is never negative, so a negative threshold cannot be meant")
    return Threshold(
        expr.strip(), metric, match.group("op"), value, unit, match.group("scope") or "run", request_type, name
    )


def split_exprs(values: list[str] | str | None) -> list[str]:
    """``--slo`` values (repeatable, or one comma/semicolon-separated string from the environment)."""
    if values is None:
        return []
    items = [values] if isinstance(values, str) else list(values)
    return [part.strip() for item in items for part in re.split(r"[;,]", item) if part.strip()]


def add_default_slos(environment: Environment, exprs: list[str]) -> None:
    """A User's or locustfile's own gates, checked alongside ``--slo``; parsed now so a typo fails early."""
    for expr in exprs:
        parse(expr)
    defaults = RunContext.of(environment).default_slos
    defaults.extend(e for e in exprs if e not in defaults)


def all_exprs(environment: Environment) -> list[str]:
    options = getattr(environment, "parsed_options", None)
    exprs = split_exprs(getattr(options, "slo", None))
    shape = getattr(environment, "shape_class", None)
    try:
        exprs += list(getattr(shape, "plan_slos", list)() if shape is not None else [])
    except UsageError:
        pass  # a bad plan is the shape's own start-up check to report (shapes validates its plan's SLOs too)
    exprs += list(RunContext.of(environment).default_slos)
    return list(dict.fromkeys(exprs))


def _request_metric(environment: Environment, threshold: Threshold, step: int | None) -> float | None:
    merged = steps.merged(environment)
    stats = merged.select(step, threshold.request_type, threshold.name)
    metric = threshold.metric
    if metric in steps.step_counter_names():
        return float(merged.counter(step, metric))
    if stats.requests == 0:
        return None
    if metric in LATENCY_METRICS:
        return stats.percentile_ms(LATENCY_METRICS[metric])
    if metric == "max":
        return stats.max_ms
    if metric == "avg":
        return stats.avg_ms
    if metric == "fail_ratio":
        return stats.failures / stats.requests
    if metric == "requests":
        return float(stats.requests)
    if metric == "failures":
        return float(stats.failures)
    if metric == "unfinished":
        return float(stats.unfinished)
    durations = step_durations(steps.step_infos(environment), steps.stopped_at(environment))
    seconds = durations.get(step) if step is not None else sum(d for d in durations.values() if d)
    return stats.requests / seconds if seconds else None


def observe(environment: Environment, threshold: Threshold, step: int | None) -> float | None:
    provider = hooks.metric_provider(threshold.metric)
    if provider is not None and threshold.metric not in REQUEST_METRICS:
        return provider(environment, step)
    return _request_metric(environment, threshold, step)


NO_DATA = "no data"


def _status(threshold: Threshold, observed: float | None) -> tuple[str, str]:
    if observed is None:
        return NO_DATA, "red"
    if not threshold.holds(observed):
        return "fail", "red"
    near = threshold.value != 0 and abs(observed - threshold.value) <= AMBER_MARGIN * abs(threshold.value)
    return "pass", "amber" if near and threshold.op in ("<", "<=", ">", ">=") else "green"


def evaluate(
    environment: Environment, threshold: Threshold, silent: Sequence[unanswered.SilentStep] = ()
) -> dict[str, Any]:
    """One verdict: over the run, or per step (failing if any step fails, unknown if none had data); a step with
    users and no answers (``silent``, given at the end: :mod:`listeners.unanswered`) fails it, with that said."""
    return unanswered.fail_silent(_evaluate(environment, threshold), silent)


def _evaluate(environment: Environment, threshold: Threshold) -> dict[str, Any]:
    verdict: dict[str, Any] = asdict(threshold)
    cut = cut_short(environment)
    missing = _missing_request(environment, threshold)
    if missing and cut:
        verdict.update(observed=None, status=NOT_REACHED, colour="amber", reason=f"{missing}; {_cut_words(cut)}")
        return verdict
    if missing:
        verdict.update(observed=None, status="fail", colour="red", reason=missing)
        return verdict
    if threshold.scope == "run":
        observed = observe(environment, threshold, None)
        verdict["observed"] = observed
        verdict["status"], verdict["colour"] = _status(threshold, observed)
        return verdict
    per_step = []
    for info in steps.step_infos(environment):
        observed = observe(environment, threshold, info.index)
        status, colour = _status(threshold, observed)
        per_step.append({"step": info.index, "label": info.label, "observed": observed, "status": status})
    statuses = {s["status"] for s in per_step}
    verdict["steps"] = per_step
    failing = [s for s in per_step if s["status"] == "fail"]
    known = [s for s in per_step if s["observed"] is not None]
    worst = failing[0] if failing else (known[-1] if known else None)
    verdict["observed"] = worst["observed"] if worst else None
    verdict["worst_step"] = worst["label"] if worst else None
    verdict["status"] = "fail" if "fail" in statuses else ("pass" if "pass" in statuses else NO_DATA)
    verdict["colour"] = "green" if verdict["status"] == "pass" else "red"
    if cut and cut.get("steps_not_run") and verdict["status"] != "fail":
        verdict.update(status=NOT_REACHED, colour="amber", reason=f"not every step was measured: {_cut_words(cut)}")
    return verdict


def cut_short(environment: Environment) -> dict[str, Any] | None:
    """``run.json``'s ``cut_short`` (the shape notes it when ``-t`` stops its plan), or None."""
    found = RunContext.of(environment).run_info.get("cut_short")
    return found if isinstance(found, dict) else None


def _cut_words(cut: dict[str, Any]) -> str:
    during = f", during {cut['during_step']!r}" if cut.get("during_step") else ""
    not_run = ", ".join(repr(label) for label in cut.get("steps_not_run") or [])
    never = f" (never ran: {not_run})" if not_run else ""
    return f"{stopper(cut)} stopped the plan at {cut.get('run_time_s', 0):g} s of {cut.get('planned_s', 0):g} s{during}{never}"


def _missing_request(environment: Environment, threshold: Threshold) -> str | None:
    """Why a threshold's request type or name matches nothing measured in the run (a typo never passes)."""
    if threshold.request_type is None or threshold.metric not in REQUEST_METRICS:
        return None
    keys = [(rtype, name) for (_step, rtype, name) in steps.merged(environment).entries]
    if any(rtype == threshold.request_type and threshold.name in (None, name) for rtype, name in keys):
        return None
    what = threshold.request_type if threshold.name is None else f"{threshold.request_type}:{threshold.name}"
    seen = sorted({f"{rtype}:{name}" for rtype, name in keys})[:10]
    return f"request {what!r} never appeared in the run (seen: {', '.join(seen) or 'no requests at all'})"


def clear_verdicts(environment: Environment) -> None:
    """A new run (the web UI's next START) is checked afresh at its end."""
    RunContext.of(environment).slo_verdicts = None


def check(environment: Environment) -> list[dict[str, Any]]:
    """Evaluate every threshold once, decide the exit code (:mod:`listeners.outcome`), write ``slo.json`` and JUnit."""
    done = RunContext.of(environment).slo_verdicts
    if done is not None:
        return done
    steps.finalize(environment)
    silent = unanswered.silent_steps(environment)
    verdicts = [evaluate(environment, parse(expr), silent) for expr in all_exprs(environment)]
    RunContext.of(environment).slo_verdicts = verdicts
    decided = outcome.record(environment, verdicts)
    passed = all(v["status"] == "pass" for v in verdicts)
    failed = [v["expr"] for v in verdicts if v["status"] in FAILING]
    not_reached = [v["expr"] for v in verdicts if v["status"] == NOT_REACHED]
    raised = user_errors.summary(environment)
    directory = rundir.run_dir(environment)
    if directory is not None:
        # the exit code run.json (and so the report) records, worked out the same way, so the two never disagree
        doc = {
            "passed": passed,
            "exit_code": rundir.exit_code_as_locust_decides(environment),
            "exit_reasons": decided.reasons,
            "user_errors": raised,
            "verdicts": verdicts,
        }
        rundir.write_atomic(
            directory / "slo.json", json.dumps(run_redaction.redact_tree(doc, environment), indent=2, default=str)
        )
    rundir.add_run_info(environment, "slo", {"passed": passed, "failed": failed, "not_reached": not_reached})
    rundir.add_run_info(environment, "user_errors", {"total": raised["total"], "by_class": raised["by_class"]})
    rundir.add_run_info(environment, "exit_reasons", decided.reasons)
    slo_junit.write_if_asked(environment, verdicts, decided)
    return verdicts


def format_verdicts(verdicts: list[dict[str, Any]]) -> str:
    lines = []
    for v in verdicts:
        observed = in_unit(v["observed"], v.get("unit", ""), v.get("metric", ""))
        where = f", at {v['worst_step']}" if v.get("worst_step") else ""
        why = f": {v['reason']}" if v.get("reason") else ""
        lines.append(f"SLO {v['status'].upper():7} {v['expr']}  (observed {observed}{where}){why}")
    return "\n".join(lines)


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    add_option(
        parser,
        "--slo",
        action="append",
        default=None,
        include_in_web_ui=True,
        help="Threshold such as 'FETCH:p99<500ms', 'fail_ratio<0.01', 'rps>150@step' (repeatable; env: ; or , "
        "separated). Any failure gives exit code 3",
    )
    add_option(
        parser,
        "--slo-junit",
        type=str,
        default=None,
        metavar="FILE",
        include_in_web_ui=True,
        help="Write the SLO verdicts as JUnit XML to FILE at the end of the run (one testcase per SLO; relative to "
        "the working directory)",
    )


def validate(environment: Environment) -> None:
    """Parse every expression and check ``--slo-junit``; raises UsageError on the first bad one."""
    for expr in all_exprs(environment):
        parse(expr)
    slo_junit.validate(environment)


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    if isinstance(environment.runner, WorkerRunner):
        return
    stop_on_usage_error(validate, environment)


@at_end("verdicts decided")
def _on_quitting(environment: Environment) -> None:
    if isinstance(environment.runner, WorkerRunner):
        return
    verdicts = check(environment)
    if verdicts:
        text = format_verdicts(verdicts)
        if "swarmgauge.summary" not in sys.modules:  # else printed after Locust's table, in the summary
            sys.stdout.write(text + "\n")
        logger.debug("SLO verdicts:\n%s", text)


hooks.add_slos.implement(add_default_slos)
hooks.validate_slos.implement(validate)
