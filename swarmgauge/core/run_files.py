"""The files a run writes into its folder and the columns (or keys) of each, declared once.

The writers take their column order from here (:mod:`swarmgauge.listeners.steps_csv`, and
:data:`swarmgauge.core.verdict.COLUMNS` for ``resources.csv``), and ``swarmgauge docs`` renders
``docs/reference/run-files.md`` from the same records, so the reference cannot list a column the file lacks. JSON
files list their top-level keys; ``tests/swarmgauge/test_docs.py`` compares them with a real run's files.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    """One column of a CSV file, or one top-level key of a JSON file."""

    name: str
    meaning: str


@dataclass(frozen=True)
class RunFile:
    name: str
    written_by: str
    what: str
    columns: tuple[Column, ...] = ()
    #: A line on columns (or keys) that come and go with the run: per-step counters, report sections.
    more: str = ""


def names(columns: tuple[Column, ...]) -> list[str]:
    return [column.name for column in columns]


STEPS_BASE = (
    Column("step", "step index, from 0, in the order the plan ran them"),
    Column("label", "the step's label (`16 users`, `5/s`, a plan stage's `label`)"),
    Column(
        "request_type", "Locust's request type (`FETCH`, `GET`, `tools/call`, ...); `Aggregated` for the step's total"
    ),
    Column("name", "request name; `Aggregated` on the total row"),
    Column("users", "users the step held (closed model); empty in an open-model step"),
    Column("target_rate", "iterations per second asked (open model); empty in a closed-model step"),
    Column("started_at", "Unix time the step started"),
    Column("duration_s", "seconds measured, warm-up excluded"),
    Column("requests", "requests started in the measured part of the step and recorded (ended or unfinished)"),
    Column("failures", "requests that failed (the unfinished ones included)"),
    Column(
        "unfinished",
        "of `failures`: requests still in flight when their user was stopped (the run's end, a ramp-down, "
        "`--stop-timeout` running out), each timed up to the stop and counted in the step it started in",
    ),
    Column("fail_ratio", "failures / requests"),
    Column("rps", "requests per second over `duration_s`; empty on a total mixing request types"),
    Column("p50_ms", "median response time, ms (HDR histogram merged over workers)"),
    Column("p90_ms", "90th percentile, ms"),
    Column("p99_ms", "99th percentile, ms"),
    Column("p999_ms", "99.9th percentile, ms"),
    Column("max_ms", "slowest response, ms"),
    Column("avg_ms", "mean response time, ms"),
    Column("warmup_requests", "requests completed during the step's warm-up, left out of the figures"),
)
STEPS_TAIL = (
    Column("workers", "workers that reported for the step (1 in a local run)"),
    Column("generator_cpu_max", "busiest generator process's CPU %, so a saturated load generator shows"),
    Column("generator_bound", "`True` when `generator_cpu_max` passed 90 %: the figures may be the generator's"),
    Column("generator_stall_ms", "longest event-loop stall seen in the generator during the step, ms"),
    Column("stalled_requests", "requests in flight during a generator stall"),
    Column("generator_stalled", "`True` when at least 1 % of the step's requests were in flight during a stall"),
)
TIMELINE = (
    Column("time", "Unix time the bucket starts (a multiple of the bucket width, 1 s by default)"),
    Column("step", "step index"),
    Column("requests", "requests completed in the bucket"),
    Column("failures", "failed requests in the bucket"),
    Column("p50_ms", "median response time in the bucket, ms"),
    Column("p99_ms", "99th percentile in the bucket, ms"),
)
PERCENTILES = (
    Column("step", "step index"),
    Column("request_type", "request type (method, or the protocol's operation)"),
    Column("name", "request name"),
    Column("percentile", "the percentile, 0 to 100 (100: the slowest request)"),
    Column("ms", "response time at that percentile, ms (the step's HDR histogram merged over workers)"),
)
RESOURCES = (
    Column("time", "Unix time of the sample"),
    Column("elapsed_s", "seconds since sampling started"),
    Column("step", "step index when the sample was taken"),
    Column("node", "`master`, `local` or `worker:ID`: the process that sampled"),
    Column("source", "what was sampled (`pid:1234`, `cgroup:...`, `generator`, `gctrace:...`, a Prometheus URL)"),
    Column("metric", "e.g. `rss_bytes`, `cpu_percent`, `live_heap_bytes`"),
    Column("value", "the sample, in the metric's base unit (bytes, percent, count)"),
    Column("round", "sampling round number, the same for every source sampled together"),
)
RUN_JSON = (
    Column("locustfile", "the locustfile as given"),
    Column("user_classes", "User classes that took part"),
    Column("locustfile_user_classes", "every User class the locustfile offers"),
    Column("shape", "the shape class"),
    Column("plan", "the plan: name, kind, source, slos, stages, reference, overrides"),
    Column("host", "`--host`, secrets redacted"),
    Column("options", "every parsed option, secrets as `***`"),
    Column("versions", "Python, swarmgauge, Locust and the libraries under the clients"),
    Column("runner", "Locust's runner class (`LocalRunner`, `MasterRunner`)"),
    Column("workers", "workers that took part"),
    Column("argv", "the command line, secrets redacted"),
    Column("started_at", "Unix time the run started"),
    Column("state", "`running` from the start, `ended` once the run closed its folder"),
    Column("pid", "the master's (or local runner's) process id, so a report can tell a run still under way"),
    Column("hostname", "the host that process ran on"),
    Column("pid_started_at", "Unix time that process started (a pid alone can be reused)"),
    Column("ended_at", "Unix time the run ended"),
    Column(
        "ended_by",
        "the signal that ended the run (`SIGTERM`, `SIGINT`, `SIGHUP`), `SIGKILL or crash` when `swarmgauge report` "
        "found the process gone with the run still `running`, or `null` when it ended by itself",
    ),
    Column("exit_code", "the process's exit code (in the final run.json)"),
    Column("exit_reasons", "one line per cause of a non-zero exit"),
    Column(
        "steps",
        "each step as announced: index, label, users or rate, start, duration, warm-up (while the run is under way: "
        "the steps ended so far)",
    ),
    Column("slo", "passed, and the expressions that failed or were not reached"),
    Column("user_errors", "exceptions raised by user code: total and by class"),
    Column("resources", "the leak verdict, sampling interval, warm-up, sources and source failures"),
    Column("cut_short", "when `-t` or a signal stopped the plan early: by what, when, the steps not run"),
    Column("aborted", "the `--slo-abort` threshold that stopped the run, with its step and figure"),
    Column(
        "lost_workers",
        "workers that went missing: when, in which step, what they reported (to the end), when one came back",
    ),
    Column("embedded_targets", "targets the locustfile started, with their options (redacted)"),
    Column("repeat_command", "a web UI run: the headless command that repeats it"),
    Column(
        "options_outside_argv",
        "the options a `LOCUST_*`/`SWARMGAUGE_*` variable or a config file applied, not on `argv`: `words` (as "
        "options, secrets `***`; a headless run's report appends them to its command) and `from` (each flag's "
        "variable or config file)",
    ),
    Column("kneo", "kneo runs: the run tag, store and reconciliation mismatches"),
    Column(
        "mdk_discovered_before_load",
        "MDK runs with the embedded stand-in: the fleet's discovery before the load (devices found, of, seconds, by "
        "`summary` or `kernel`) and `requests_before_the_run`, the summaries it sent the Gateway, in none of the "
        "run's figures (`mdk.json` `requests` puts them beside the Gateway's own count)",
    ),
    Column("prometheus_push", "per push target: the URL (credentials `***`), pushes made, failures by kind"),
    Column(
        "feeder",
        "`--feeder` (or a plan's `feeder:`): file, mode, rows, dealt and used (per worker), lost workers' rows, why it "
        "stopped; the plan that set it and the options given for the run that won over its values",
    ),
)
SLO_JSON = (
    Column("passed", "every threshold passed"),
    Column("exit_code", "the exit code the run ends with"),
    Column("exit_reasons", "one line per cause of a non-zero exit"),
    Column("user_errors", "exceptions raised by user code: total, by class, by step"),
    Column("verdicts", "one per threshold: expr, metric, op, value, unit, scope, observed, status, worst step"),
)
SUMMARY_JSON = (
    Column("run_dir", "the run folder's name"),
    Column("cut_short", "as in run.json, when the plan was cut short"),
    Column("reference_caveat", "why the reference page's figures are for reference only, when they are"),
    Column("steps", "the Aggregated row of each step, as in steps.csv"),
    Column("generator_bound", "steps whose generator CPU passed 90 %"),
    Column("generator_stalled", "steps with requests in flight during a generator stall"),
    Column("target_bound", "steps where the target, not the generator, was the limit"),
    Column("Failures", "failures by request and error"),
    Column("user_errors", "user-code exceptions by class and step"),
    Column("slo", "the verdicts as the report shows them"),
    Column("plots", "the PNG files written beside report.md"),
)

LOCUST_CSV = "Locust's own table, in Locust's columns, written whole at the end of the run and redacted"

RUN_FILES = (
    RunFile(
        "steps.csv",
        "swarmgauge.listeners.steps",
        "one row per step and request name, and an `Aggregated` row per step; rewritten as each step ends (the steps "
        "ended so far) and once more at the run's end",
        STEPS_BASE + STEPS_TAIL,
        "Between `warmup_requests` and `workers`: one column per per-step counter (`dropped`, `user_errors`, "
        "`tickets`, `mark_reconnects`, `sessions_started`, ... as the run's Users and shapes register them), a count per step.",
    ),
    RunFile(
        "timeline.csv", "swarmgauge.listeners.steps", "the run in time buckets, all request names together", TIMELINE
    ),
    RunFile(
        "percentiles.csv",
        "swarmgauge.listeners.step_percentiles",
        "each step's latency distribution: its HDR histogram read at a fixed ladder of percentiles",
        PERCENTILES,
    ),
    RunFile("resources.csv", "swarmgauge.listeners.resources", "every resource sample (with `--sample`)", RESOURCES),
    RunFile(
        "run.json",
        "swarmgauge.listeners.rundir",
        "what ran and how: written at the start, rewritten as each step ends and at the end",
        RUN_JSON,
        "Keys after `started_at` appear when what they describe happened.",
    ),
    RunFile("slo.json", "swarmgauge.listeners.slo", "the SLO verdicts and the exit code", SLO_JSON),
    RunFile(
        "summary.json",
        "swarmgauge.reports.report",
        "the report's figures as data",
        SUMMARY_JSON,
        "Plus one key per report section (`Resources`, `MCP`, `kneo`, ...), named by its title.",
    ),
    RunFile("report.md", "swarmgauge.reports.report", "the report, with its plots as PNG files beside it"),
    RunFile(
        "report.html",
        "swarmgauge.reports.report",
        "the same report as one HTML page with interactive charts (plotly.js inlined once: it works offline)",
    ),
    RunFile("locust_stats.csv", "swarmgauge.listeners.rundir", LOCUST_CSV),
    RunFile("locust_failures.csv", "swarmgauge.listeners.rundir", LOCUST_CSV),
    RunFile("locust_exceptions.csv", "swarmgauge.listeners.rundir", LOCUST_CSV),
    RunFile("resources.png", "swarmgauge.reports.resources", "memory over time (with `--sample`)"),
    RunFile(
        "kneo.json", "swarmgauge.users.kneo_ledger", "kneo runs: the ledger and its reconciliation against the store"
    ),
    RunFile("mdk.json", "swarmgauge.listeners.mdk_results", "MDK fleet runs: the fleet's figures and thresholds"),
    RunFile("mdk_drills.json", "swarmgauge.targets.mdk.drills", "`swarmgauge drill`: one row per drill run"),
)
