"""What a run looks like right now (for the web UI tab and the Prometheus endpoint).

Everything here reads what the master (or a local run) has already merged in ``listeners.steps``, ``listeners.slo``,
``listeners.resources`` and ``listeners.workers``, and changes none of it, so watching a run cannot change what it
measures. A snapshot is redacted like ``run.json``.
"""

from __future__ import annotations

from typing import Any

from locust.env import Environment
from locust.runners import STATE_INIT, STATE_SPAWNING, STATE_STOPPED, MasterRunner

from swarmgauge.core.numbers import format_latency, format_rate
from swarmgauge.core.request_names import request_title
from swarmgauge.core.run_context import RunContext
from swarmgauge.core.slo_units import verdict_text
from swarmgauge.core.sources import source_title
from swarmgauge.core.trend import MIB
from swarmgauge.core.verdict import GENERATOR_SOURCE, trends
from swarmgauge.listeners import resources, run_redaction, slo, step_state, steps, workers
from swarmgauge.listeners.step_stats import AGGREGATED, RIDE_ALONG

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
        "current_step": _step_doc(step_state.current_step(environment)),
        "steps": step_rows(environment),
        "slo": slo_verdicts(environment),
        "resources": resource_series(environment),
        "latest_resources": latest_resources(environment),
        "lost_workers": lost_workers(environment),
        "aborted": RunContext.of(environment).aborted,
        "closed_run": closed.name if closed is not None else None,
    }
    return run_redaction.redact_tree(doc, environment)


def _step_doc(info: Any) -> dict[str, Any] | None:
    if info is None:
        return None
    return {"index": info.index, "label": info.label, "users": info.users, "rate": info.rate}
