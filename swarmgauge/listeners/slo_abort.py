"""``--slo-abort``: thresholds that stop a run when breached, apart from ``live.py``, which only reads the run.

``--slo-abort EXPR`` (the ``--slo`` grammar, repeatable) is a threshold that also stops the run when it is breached:
the master checks it every ``--sample-interval`` seconds once ``--slo-abort-grace`` (default 10 s) has passed since
the run started, and a request threshold (``p99``, ``fail_ratio``, ...) fires only over at least
``--slo-abort-min-requests`` matching requests (default 100; in the breaching step for ``@step``): the first check used
to fire on a start-up p99 of a few requests. Other terms (``rss_delta``, counters) wait for the grace only. The first
breach stops the run (the web UI's STOP, or a headless quit) and says it in the threshold's unit (``p99 82.6 ms >
50 ms``), with ``"aborted": {expr, metric, unit, observed, threshold, breach, requests, step, label, at, after_s,
check, interval_s, grace_s, min_requests, message}`` in ``run.json`` (``check``: which periodic check found it).
An abort threshold is part of the final SLO gate too, so the run exits 3.
"""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass
from typing import Any

import gevent
from locust import events
from locust.env import Environment
from locust.runners import STATE_RUNNING, STATE_SPAWNING, WorkerRunner

from swarmgauge.core import hooks
from swarmgauge.core.durations import parse_duration
from swarmgauge.core.options import add_option
from swarmgauge.core.run_context import PerEnvironment, RunContext
from swarmgauge.core.slo_units import in_unit
from swarmgauge.errors import UsageError, stop_on_usage_error
from swarmgauge.listeners import rundir, slo, steps

logger = logging.getLogger("swarmgauge.live")  # the name its lines had before the split from live.py

DEFAULT_CHECK_SECONDS = 5.0
DEFAULT_ABORT_GRACE = "10s"
DEFAULT_ABORT_MIN_REQUESTS = 100
FINAL_REPORT_SECONDS = 5.0
MAX_ABORT_CHECKS = 10_000_000


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    add_option(
        parser,
        "--slo-abort",
        action="append",
        default=None,
        include_in_web_ui=True,
        help="Threshold (as --slo) that stops the run as soon as it is breached, checked every --sample-interval "
        "after --slo-abort-grace; exit code 3 (repeatable; env: ; or , separated)",
    )
    add_option(
        parser,
        "--slo-abort-grace",
        type=str,
        default=DEFAULT_ABORT_GRACE,
        metavar="DURATION",
        include_in_web_ui=True,
        help=f"No --slo-abort fires in the run's first DURATION (default {DEFAULT_ABORT_GRACE}): start-up is not the "
        "target's steady state",
    )
    add_option(
        parser,
        "--slo-abort-min-requests",
        type=str,
        default=str(DEFAULT_ABORT_MIN_REQUESTS),
        metavar="N",
        include_in_web_ui=True,
        help=f"A request threshold of --slo-abort fires only over at least N matching requests (in the step, for "
        f"@step; default {DEFAULT_ABORT_MIN_REQUESTS}): a p99 of a handful of requests is one slow request",
    )


def abort_exprs(environment: Environment) -> list[str]:
    return slo.split_exprs(getattr(getattr(environment, "parsed_options", None), "slo_abort", None))


def abort_grace(environment: Environment) -> float:
    """``--slo-abort-grace`` in seconds; a bad value is a :class:`UsageError` (exit 2 at start-up)."""
    value = getattr(getattr(environment, "parsed_options", None), "slo_abort_grace", None)
    return parse_duration(DEFAULT_ABORT_GRACE if value in (None, "") else value, "--slo-abort-grace")


def abort_min_requests(environment: Environment) -> int:
    """``--slo-abort-min-requests`` as a whole number >= 0; a bad value is a :class:`UsageError`."""
    value = getattr(getattr(environment, "parsed_options", None), "slo_abort_min_requests", None)
    text = str(DEFAULT_ABORT_MIN_REQUESTS if value in (None, "") else value).strip()
    if not text.isdigit():
        raise UsageError(f"--slo-abort-min-requests {value!r}: expected a whole number of requests >= 0, such as 100")
    return int(text)


def validate_abort(environment: Environment) -> None:
    """Every abort setting, whether or not ``--slo-abort`` is given: a typo never waits for the run to matter."""
    abort_grace(environment)
    abort_min_requests(environment)
    slo.add_default_slos(environment, abort_exprs(environment))


def _check_interval(environment: Environment) -> float:
    value = getattr(getattr(environment, "parsed_options", None), "sample_interval", None)
    if value is None:
        return DEFAULT_CHECK_SECONDS
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return DEFAULT_CHECK_SECONDS
    return seconds if 0 < seconds < float("inf") else DEFAULT_CHECK_SECONDS


def _sample(environment: Environment, threshold: slo.Threshold, step: int | None) -> int | None:
    """Requests the threshold is judged over (None: not a request metric, so no minimum sample applies)."""
    if threshold.metric not in slo.REQUEST_METRICS:
        return None
    return steps.merged(environment).select(step, threshold.request_type, threshold.name).requests


def relation(observed: float, value: float) -> str:
    return ">" if observed > value else ("<" if observed < value else "==")


def breach_words(threshold: slo.Threshold, observed: float | None) -> str:
    """``p99 82.6 ms > 50 ms``: the observed value against the threshold, both in the threshold's unit."""
    if observed is None:
        return f"{threshold.metric} no data"
    shown = in_unit(observed, threshold.unit, threshold.metric)
    limit = in_unit(threshold.value, threshold.unit, threshold.metric)
    return f"{threshold.metric} {shown} {relation(observed, threshold.value)} {limit}"


def breached(environment: Environment, min_requests: int = 0) -> dict[str, Any] | None:
    """The first abort threshold that fails on the data merged so far over at least ``min_requests`` requests (for a
    request metric; per step for ``@step``), as the ``aborted`` record; else None."""
    for expr in abort_exprs(environment):
        threshold = slo.parse(expr)
        verdict = slo.evaluate(environment, threshold)
        if verdict["status"] != "fail":
            continue
        info = steps.current_step(environment)
        failing = [s for s in verdict.get("steps", []) if s["status"] == "fail"]
        if threshold.scope == "step":
            failing = [s for s in failing if (_sample(environment, threshold, s["step"]) or 0) >= min_requests]
            if not failing:
                continue
        requests = _sample(environment, threshold, failing[0]["step"] if failing else None)
        if requests is not None and requests < min_requests:
            continue
        observed = failing[0]["observed"] if failing else verdict["observed"]
        return {
            "expr": expr,
            "metric": threshold.metric,
            "unit": threshold.unit,
            "observed": observed,
            "threshold": verdict["value"],
            "breach": breach_words(threshold, observed),
            "requests": requests,
            "step": failing[0]["step"] if failing else getattr(info, "index", None),
            "label": failing[0]["label"] if failing else getattr(info, "label", None),
            "at": time.time(),
        }
    return None


def _abort_loop(environment: Environment, started: float) -> None:
    interval = _check_interval(environment)
    grace, min_requests = abort_grace(environment), abort_min_requests(environment)
    for check in range(1, MAX_ABORT_CHECKS + 1):
        gevent.sleep(interval)
        runner = environment.runner
        if runner is None or runner.state not in (STATE_RUNNING, STATE_SPAWNING):
            return
        if time.time() - started < grace:
            continue
        steps.merge_local_now(environment)
        found = breached(environment, min_requests)
        if found is not None:
            found["after_s"] = round(found["at"] - started, 3)
            found["check"], found["interval_s"] = check, interval
            found["grace_s"], found["min_requests"] = grace, min_requests
            _abort(environment, found)
            return


def abort_message(record: dict[str, Any]) -> str:
    sample = f" over {record['requests']} requests" if record.get("requests") is not None else ""
    return (
        f"{record['expr']} breached in step {record['step']} ({record['label']}): {record['breach']}{sample}, "
        f"after {record['after_s']} s"
    )


@dataclass
class _AbortWatch(PerEnvironment):
    """Owned by ``listeners/slo_abort.py``: the greenlet checking ``--abort-on`` in this run."""

    checker: gevent.Greenlet | None = None


def _abort(environment: Environment, record: dict[str, Any]) -> None:
    record["message"] = abort_message(record)
    RunContext.of(environment).aborted = record
    environment.process_exit_code = slo.SLO_EXIT_CODE
    rundir.add_run_info(environment, "aborted", record)
    message = f"swarmgauge: run aborted: {record['message']}"
    logger.error(message)
    sys.stderr.write(message + "\n")
    steps.end_run(environment)
    hooks.collect_final_reports(environment, FINAL_REPORT_SECONDS)
    hooks.stop_locust(environment)


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    if isinstance(environment.runner, WorkerRunner):
        return
    stop_on_usage_error(validate_abort, environment)


@events.test_start.add_listener
def _on_test_start(environment: Environment, **_kwargs: Any) -> None:
    if isinstance(environment.runner, WorkerRunner) or not abort_exprs(environment):
        return
    slo.add_default_slos(environment, abort_exprs(environment))
    watch = _AbortWatch.of(environment)
    if watch.checker is not None:
        watch.checker.kill(block=False)
    clear_abort(environment)
    watch.checker = gevent.spawn(_abort_loop, environment, time.time())


def clear_abort(environment: Environment) -> None:
    """A new run (the web UI's next START) starts not aborted."""
    RunContext.of(environment).aborted = None
