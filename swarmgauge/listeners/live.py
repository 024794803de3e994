"""What a run looks like right now (for the web UI tab and the Prometheus endpoint), and SLOs that abort a run.

Everything here reads what the master (or a local run) has already merged in ``listeners.steps``, ``listeners.slo``,
``listeners.resources`` and ``listeners.workers``, and changes none of it, so watching a run cannot change what it
measures. A snapshot is redacted like ``run.json``.

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
from locust.runners import STATE_INIT, STATE_RUNNING, STATE_SPAWNING, STATE_STOPPED, MasterRunner, WorkerRunner

from swarmgauge.core.durations import parse_duration
from swarmgauge.core.numbers import format_latency, format_rate
from swarmgauge.core.options import add_option
from swarmgauge.core.request_names import request_title
from swarmgauge.core.run_context import PerEnvironment, RunContext
from swarmgauge.core.slo_units import in_unit, verdict_text
from swarmgauge.core.sources import source_title
from swarmgauge.core.trend import MIB
from swarmgauge.core.verdict import GENERATOR_SOURCE, trends
from swarmgauge.errors import UsageError, stop_on_usage_error
from swarmgauge.listeners import resources, rundir, slo, steps, workers
from swarmgauge.listeners.step_stats import AGGREGATED, RIDE_ALONG

logger = logging.getLogger("swarmgauge.live")

DEFAULT_CHECK_SECONDS = 5.0
DEFAULT_ABORT_GRACE = "10s"
DEFAULT_ABORT_MIN_REQUESTS = 100
FINAL_REPORT_SECONDS = 5.0
MAX_ABORT_CHECKS = 10_000_000
MEMORY_METRICS = (
    "rss_bytes",
    "process_resident_memory_bytes",
    "working_set_bytes",
    "live_heap_bytes",
    "heap_inuse_bytes",
    "go_memstats_heap_inuse_bytes",
    "heap_alloc_bytes",
    "uss_bytes",
)
MAX_POINTS_PER_SERIES = 2000


# What a mixed step's total is, in every view: a reader compared it with Locust's Aggregated, which counts handshakes
COUNTS_ONLY_TITLE = "Aggregated, counts only (mixed request types; handshakes left out)"
LATENCY_KEYS = ("p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms", "avg_ms")


def shown_figures(row: dict[str, Any]) -> dict[str, str]:
    """A step row's figures as the report writes them: 3 significant digits with units (``546 req/s``, ``20.4 ms``).

    Every live view shows these; the raw figures stay beside them for the Prometheus endpoint and scripts.
    """
    shown = {key: format_latency(row.get(key)) for key in LATENCY_KEYS}
    rate, target = format_rate(row.get("rps")), format_rate(row.get("target_rate"))
    shown["rps"] = f"{rate} req/s" if rate else ""
    shown["target_rate"] = f"{target}/s" if target else ""
    return shown


def step_rows(environment: Environment) -> list[dict[str, Any]]:
    """``steps.csv`` rows as they stand (one per step and name, plus each step's ``Aggregated`` row).

    An ``Aggregated`` row over more than one request type says ``counts_only``: ``steps.csv`` leaves its rate and
    percentiles empty on purpose (FETCH + LOOKUP a second is a rate of nothing), and a view shows why they are.
    """
    rows = steps.rows_now(environment)
    types: dict[int, set[str]] = {}
    for row in rows:
        key = (row["request_type"], row["name"])
        if key != AGGREGATED and key not in RIDE_ALONG:
            types.setdefault(row["step"], set()).add(row["request_type"])
    for row in rows:
        row["title"] = request_title(row["request_type"], row["name"])
        if (row["request_type"], row["name"]) == AGGREGATED:
            row["counts_only"] = len(types.get(row["step"], ())) > 1
            if row["counts_only"]:
                row["title"] = COUNTS_ONLY_TITLE
        row["shown"] = shown_figures(row)
    return rows


def slo_verdicts(environment: Environment) -> list[dict[str, Any]]:
    """Every threshold evaluated on what was merged so far (final verdicts once the run closed), each with its
    ``text`` in the threshold's unit, ``fail (80.1 ms > 50 ms)``, per step too."""
    final = RunContext.of(environment).slo_verdicts
    verdicts = _evaluated(environment) if final is None else [dict(v) for v in final]
    for verdict in verdicts:
        verdict["text"] = verdict_text(verdict)
        fields = {key: verdict.get(key) for key in ("value", "unit", "metric", "op")}
        verdict["steps"] = [
            {**entry, "text": verdict_text({**fields, **entry})} for entry in verdict.get("steps") or []
        ]
    return verdicts


def _evaluated(environment: Environment) -> list[dict[str, Any]]:
    verdicts = []
    for expr in slo.all_exprs(environment):
        try:
            verdicts.append(slo.evaluate(environment, slo.parse(expr)))
        except Exception as exc:  # noqa: BLE001 - a view must not break on one threshold
            verdicts.append(
                {
                    "expr": expr,
                    "status": "unknown",
                    "colour": "amber",
                    "observed": None,
                    "error": f"{type(exc).__name__}: {exc}",
                }
            )
    return verdicts


def resource_series(environment: Environment) -> list[dict[str, Any]]:
    """Each sampled memory series (node, source, metric) with its points in MiB and its slope in MiB/h.

    The slope is the report's (:func:`swarmgauge.core.verdict.trends` over every sample after ``--sample-warmup``),
    not a fit over the points charted: that one began at the first sample, so it counted the target's start-up
    growth (2,836 MiB/h on the page where the run's report said 1,714), and kept only the last points of a long run.
    """
    sampler = resources.existing_sampler(environment)
    if sampler is None:
        return []
    rows = list(sampler.rows)
    info = RunContext.of(environment).run_info
    fitted = {
        (s.node, s.source, s.metric): s.trend for s in trends(rows, MEMORY_METRICS, sampler.warmup, target_only=False)
    }
    series: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    for row in rows:
        if row.metric in MEMORY_METRICS:
            series.setdefault((row.node, row.source, row.metric), []).append((row.elapsed_s, row.value / MIB))
    result = []
    for key, points in sorted(series.items(), key=lambda item: (item[0][1] == GENERATOR_SOURCE, item[0])):
        points = sorted(points)[-MAX_POINTS_PER_SERIES:]
        fit = fitted.get(key)
        slope = None if fit is None or fit.slope_per_hour is None else fit.slope_per_hour / MIB
        node, source, metric = key
        result.append(
            {
                "node": node,
                "source": source_title(source, info),
                "metric": metric,
                "unit": "MiB",
                "points": [[round(t, 3), round(v, 3)] for t, v in points],
                "slope_mib_per_h": slope,
                "slope_warmup": str(sampler.warmup),
            }
        )
    return result


def latest_resources(environment: Environment) -> list[dict[str, Any]]:
    """The last sample of every sampled series (any metric), for the Prometheus endpoint."""
    sampler = resources.existing_sampler(environment)
    latest: dict[tuple[str, str, str], float] = {}
    for row in list(sampler.rows) if sampler is not None else []:
        latest[(row.node, row.source, row.metric)] = row.value
    return [{"node": n, "source": s, "metric": m, "value": v} for (n, s, m), v in sorted(latest.items())]


def lost_workers(environment: Environment) -> list[dict[str, Any]]:
    watcher = workers.watcher_for(environment)
    return list(watcher.lost) if watcher is not None else []


def run_state(environment: Environment) -> str | None:
    """The runner's state as a watcher should read it: a START under way reads ``spawning``.

    Between a START and its first spawn Locust's runner still says ``ready`` (a shape's first tick and the test_start
    listeners run first, seconds on a busy master). Locust's page reads ``ready`` as "show the start form" and then
    stops polling, so a page opened or reloaded in that moment showed the start form, and no tab, for the whole run.
    """
    runner = environment.runner
    state = getattr(runner, "state", None)
    shape = getattr(runner, "shape_greenlet", None)
    if state == STATE_INIT and shape is not None and not shape.dead:
        return STATE_SPAWNING
    plain = getattr(getattr(environment, "web_ui", None), "_swarm_greenlet", None)
    if state in (STATE_INIT, STATE_STOPPED) and plain is not None and not plain.dead:
        return STATE_SPAWNING
    return state


def snapshot(environment: Environment) -> dict[str, Any]:
    """The whole live view as JSON-able data, secrets redacted."""
    runner = environment.runner
    closed = RunContext.of(environment).closed_run
    doc = {
        "state": run_state(environment),
        "runner": "master" if isinstance(runner, MasterRunner) else "local",
        "workers": getattr(runner, "worker_count", 0) if isinstance(runner, MasterRunner) else None,
        "current_step": _step_doc(steps.current_step(environment)),
        "steps": step_rows(environment),
        "slo": slo_verdicts(environment),
        "resources": resource_series(environment),
        "latest_resources": latest_resources(environment),
        "lost_workers": lost_workers(environment),
        "aborted": RunContext.of(environment).aborted,
        "closed_run": closed.name if closed is not None else None,
    }
    return rundir.redact_tree(doc, environment)


def _step_doc(info: Any) -> dict[str, Any] | None:
    if info is None:
        return None
    return {"index": info.index, "label": info.label, "users": info.users, "rate": info.rate}


# -- abort thresholds ----------------------------------------------------------------------------------------------
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
    """Owned by ``listeners/live.py``: the greenlet checking ``--abort-on`` in this run."""

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
    steps.request_final_reports(environment)
    deadline = time.monotonic() + FINAL_REPORT_SECONDS
    while not steps.final_reports_in(environment) and time.monotonic() < deadline:
        gevent.sleep(0.05)
    runner = environment.runner
    if runner is None:
        return
    if getattr(environment.parsed_options, "headless", False):
        runner.quit()
    else:
        runner.stop()


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
