"""``ResourceSampler``: samples the target's memory and CPU while the load runs, and judges leaks.

Every ``--sample-interval`` seconds a background greenlet (started at ``test_start``, never at import) polls each
``--sample`` source on the master (default) or on every worker (``--sample-on workers``), and every process polls
its own RSS and CPU (source ``generator``). Workers drain their rows into ``report_to_master`` and the master keeps
each row once. At the end the master writes ``resources.csv`` (long format, columns
:data:`swarmgauge.core.verdict.COLUMNS`) into the run directory, registers the SLO terms ``rss_slope`` (bytes/h),
``rss_delta`` (bytes), ``heap_slope`` (bytes/h) and ``working_set_max`` (bytes), and a headless run prints the leak
verdict naming the slope it measured: leak, no leak, or inconclusive when the growth is under the threshold but its
slope would pass it within the hour (run longer). The SLO terms are the measured figures, not the verdict:
``rss_delta<50MiB`` holds on an inconclusive run's small delta; ``rss_slope`` is the term that gates a steep slope.
A failing source is logged once per interval with a count; it never stops the run.
"""

from __future__ import annotations

import csv
import io
import logging
import math
import os
import time
import weakref
from typing import Any

import gevent
from locust import events
from locust.env import Environment
from locust.runners import MasterRunner, WorkerRunner

from swarmgauge.core import hooks, option_kinds
from swarmgauge.core.lifecycle import at_end
from swarmgauge.core.options import add_option
from swarmgauge.core.trend import Warmup, parse_warmup
from swarmgauge.core.verdict import (
    COLUMNS,
    GENERATOR_SOURCE,
    HEAP_METRICS,
    MACHINE_SOURCE,
    OWN_SOURCES,
    REQUESTS_SOURCE,
    RSS_METRICS,
    WORKING_SET_METRICS,
    Row,
    leak_verdict,
    trends,
    worst,
)
from swarmgauge.errors import UsageError, stop_on_usage_error
from swarmgauge.files import write_atomic
from swarmgauge.listeners.rundir import add_run_info, run_dir
from swarmgauge.listeners.sample_rows import SampleRows
from swarmgauge.listeners.sources import Source, SourceError, parse_source
from swarmgauge.listeners.sources.proc import MachineCpu, PsutilSource
from swarmgauge.listeners.step_state import current_step

log = logging.getLogger(__name__)
REPORT_KEY = "swarmgauge_resources"
CSV_NAME = "resources.csv"
_SAMPLERS: weakref.WeakKeyDictionary[Any, ResourceSampler] = weakref.WeakKeyDictionary()


def existing_sampler(environment: Environment) -> ResourceSampler | None:
    """This run's sampler if one was made (the live view reads its rows); never makes one."""
    return _SAMPLERS.get(environment)


@events.init_command_line_parser.add_listener
def _add_options(parser) -> None:
    add_option(
        parser,
        "--sample",
        action="append",
        default=[],
        metavar="SOURCE",
        include_in_web_ui=True,
        is_multiple=True,
        help="target to sample (repeatable; ';' separates several in one value): psutil:pid=N, "
        "psutil:pidfile=PATH, psutil:match=REGEX[,uss], cgroup:PATH, gctrace:LOGFILE, "
        "pprof:URL, expvar:URL, prom:URL#metric,metric",
    )
    add_option(
        parser,
        "--sample-interval",
        kind=option_kinds.POSITIVE_SECONDS,
        type=float,
        default=5.0,
        metavar="SECONDS",
        include_in_web_ui=True,
        help="seconds between samples (default 5)",
    )
    add_option(
        parser,
        "--sample-on",
        choices=("master", "workers"),
        default="master",
        include_in_web_ui=True,
        help="where the --sample sources are polled: master (default) or every worker",
    )
    add_option(
        parser,
        "--sample-warmup",
        default="10%",
        metavar="DURATION",
        include_in_web_ui=True,
        help="ignore this much of the start for slopes and deltas: 30s, 2m or 10%% (default 10%%)",
    )


def source_specs(options: Any) -> list[str]:
    """The ``--sample`` specs, with ``;``-joined values (from the environment or the web UI) split."""
    raw = getattr(options, "sample", None) or []
    if isinstance(raw, str):
        raw = [raw]
    return [part.strip() for value in raw for part in str(value).split(";") if part.strip()]


def add_sample_source(environment, spec: str) -> None:
    """Sample one more source in this run (a locustfile's embedded target); checked now, polled from test_start."""
    parse_source(spec)
    specs = sampler_for(environment).extra_specs
    if spec not in specs:
        specs.append(spec)


def sampler_for(environment) -> ResourceSampler:
    sampler = _SAMPLERS.get(environment)
    if sampler is None:
        sampler = _SAMPLERS[environment] = ResourceSampler(environment)
    return sampler


def _node_name(environment) -> str:
    runner = environment.runner
    if isinstance(runner, WorkerRunner):
        return f"worker:{runner.client_id}"
    return "master" if isinstance(runner, MasterRunner) else "local"


def _current_step(environment) -> int | None:
    info = current_step(environment)
    return None if info is None else int(info.index)


def sample_interval(options: Any) -> float:
    """``--sample-interval``: finite seconds above zero (0 is a mistake, not "the default")."""
    value = getattr(options, "sample_interval", None)
    interval = 5.0 if value is None else float(value)
    if not math.isfinite(interval) or interval <= 0:
        raise UsageError(f"--sample-interval {value}: must be a finite number of seconds above 0")
    return interval


def check_options(environment: Environment) -> None:
    """Every sampler option, at ``init``: a bad one is one line and exit 2 before any load, not a traceback later."""
    options = environment.parsed_options
    sample_interval(options)
    parse_warmup(getattr(options, "sample_warmup", "10%") or "0")
    for spec in source_specs(options):
        parse_source(spec)


class ResourceSampler:
    """Per-environment sampler state: the sources, the greenlet, the rows, and the failure counts."""

    def __init__(self, environment) -> None:
        self.environment = environment
        self.extra_specs: list[str] = []
        self.sources: list[Source] = []
        self.machine = MachineCpu()
        self.rows = SampleRows()
        self.failures: dict[str, int] = {}
        self.greenlet: gevent.Greenlet | None = None
        self.interval = 5.0
        self.warmup = Warmup(fraction=0.1)
        self.started_at: float | None = None
        self.round = 0
        self.node = "local"

    # -- lifecycle -----------------------------------------------------------------------------------------------
    def configure(self) -> None:
        """Read the options and build the sources; a bad one raises UsageError before any load starts."""
        options = self.environment.parsed_options
        self.interval = sample_interval(options)
        self.warmup = parse_warmup(getattr(options, "sample_warmup", "10%") or "0")
        self.node = _node_name(self.environment)
        on_workers = getattr(options, "sample_on", "master") == "workers"
        polls_targets = (self.node.startswith("worker:") and on_workers) or (
            self.node == "local" or (self.node == "master" and not on_workers)
        )
        specs = list(dict.fromkeys(source_specs(options) + self.extra_specs)) if polls_targets else []
        self.sources = [parse_source(spec) for spec in specs]
        generator = PsutilSource(pid=os.getpid(), children=False)  # an embedded target child is the target
        generator.label = GENERATOR_SOURCE
        self.sources.append(generator)
        self.machine = MachineCpu()

    def start(self) -> None:
        self.stop()
        self.configure()
        self.rows, self.failures, self.round = SampleRows(), {}, 0
        self.started_at = time.time()
        self.greenlet = gevent.spawn(self._run)

    def stop(self, final_sample: bool = False) -> None:
        if self.greenlet is not None:
            self.greenlet.kill(block=True, timeout=5)
            self.greenlet = None
            if final_sample:
                self.sample_once()

    def _run(self) -> None:
        next_at = time.monotonic()
        while True:
            self.sample_once()
            next_at += self.interval
            gevent.sleep(max(0.0, next_at - time.monotonic()))

    # -- sampling ------------------------------------------------------------------------------------------------
    def sample_once(self) -> list[Row]:
        """Poll every source once; failures are counted and logged once for the round, never raised."""
        now = time.time()
        elapsed = now - (self.started_at or now)
        step = _current_step(self.environment)
        taken, failed = [], []
        for source in self.sources:
            try:
                readings = source.sample()
            except SourceError as exc:
                failed.append((source.label, str(exc)))
                continue
            except Exception as exc:  # noqa: BLE001 - a broken source must not stop the sampler
                failed.append((source.label, f"{type(exc).__name__}: {exc}"))
                continue
            taken += [
                Row(now, elapsed, step, self.node, source.label, r.metric, float(r.value), self.round) for r in readings
            ]
        if not self.node.startswith("worker:"):
            total = self.environment.stats.total.num_requests if self.environment.stats else 0
            taken.append(Row(now, elapsed, step, self.node, REQUESTS_SOURCE, "requests", float(total), self.round))
        busy = self.machine.sample()
        if busy is not None:
            taken.append(Row(now, elapsed, step, self.node, MACHINE_SOURCE, "cpu_percent", busy, self.round))
        if failed:
            for label, _ in failed:
                self.failures[label] = self.failures.get(label, 0) + 1
            log.warning(
                "resource sampler: %d of %d sources failed this interval: %s",
                len(failed),
                len(self.sources),
                "; ".join(f"{label} ({why}; {self.failures[label]} failures so far)" for label, why in failed),
            )
        self.rows.extend(taken)
        self.round += 1
        return taken

    # -- distribution --------------------------------------------------------------------------------------------
    def drain(self) -> list[list]:
        """Rows not yet sent to the master, as msgpack-able lists; they are forgotten here once drained."""
        rows, self.rows = self.rows, SampleRows()
        return [[r.time, r.step, r.source, r.metric, r.value, r.round] for r in rows]

    def merge(self, client_id: str, packed: list[list]) -> None:
        """Keep a worker's drained rows (each arrives once: the worker forgot them when it sent them)."""
        start = self.started_at or (packed[0][0] if packed else time.time())
        for t, step, source, metric, value, rnd in packed:
            self.rows.append(Row(t, t - start, step, f"worker:{client_id}", source, metric, value, rnd))

    # -- results -------------------------------------------------------------------------------------------------
    def csv_text(self) -> str:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(COLUMNS)
        for row in sorted(self.rows, key=lambda r: (r.time, r.node, r.source, r.metric)):
            writer.writerow(row.as_csv())
        return buffer.getvalue()

    def verdict(self) -> tuple[str | None, str]:
        return leak_verdict(list(self.rows), self.warmup)

    def term(self, metrics: tuple[str, ...], attribute: str, step: int | None) -> float | None:
        return worst(trends(list(self.rows), metrics, self.warmup, step=step), attribute)


# -- Locust wiring -----------------------------------------------------------------------------------------------
def _slo_provider(metrics: tuple[str, ...], attribute: str):
    def provider(environment, step: int | None) -> float | None:
        sampler = _SAMPLERS.get(environment)
        return None if sampler is None else sampler.term(metrics, attribute, step)

    return provider


SLO_TERMS = {
    "rss_slope": _slo_provider(RSS_METRICS, "slope_per_hour"),
    "rss_delta": _slo_provider(RSS_METRICS, "delta"),
    "heap_slope": _slo_provider(HEAP_METRICS, "slope_per_hour"),
    "working_set_max": _slo_provider(WORKING_SET_METRICS, "maximum"),
}


for _term, _provider in SLO_TERMS.items():
    hooks.register_metric(_term, _provider)
hooks.add_sample_source.implement(add_sample_source)


@events.init.add_listener
def _on_init(environment, **_kwargs) -> None:
    sampler_for(environment)
    if environment.parsed_options is not None:
        # a bad --sample stops the run here, with one line and exit 2, before any load
        stop_on_usage_error(check_options, environment)


@events.test_start.add_listener
def _on_test_start(environment, **_kwargs) -> None:
    sampler_for(environment).start()


@events.test_stop.add_listener
def _on_test_stop(environment, **_kwargs) -> None:
    sampler_for(environment).stop(final_sample=True)


@events.report_to_master.add_listener
def _on_report_to_master(client_id: str, data: dict, **_kwargs) -> None:
    for environment, sampler in list(_SAMPLERS.items()):
        if isinstance(environment.runner, WorkerRunner) and environment.runner.client_id == client_id:
            data[REPORT_KEY] = sampler.drain()


@events.worker_report.add_listener
def _on_worker_report(client_id: str, data: dict, **_kwargs) -> None:
    packed = data.get(REPORT_KEY)
    if not packed:
        return
    for environment, sampler in list(_SAMPLERS.items()):
        if isinstance(environment.runner, MasterRunner):
            sampler.merge(client_id, packed)


@at_end("resources sampled")
def finish_sampling(environment: Environment) -> None:
    """Stop sampling, judge the series and write ``resources.csv`` (a run's end: quitting, or STOP in the web UI)."""
    sampler = _SAMPLERS.get(environment)
    if sampler is None or isinstance(environment.runner, WorkerRunner):
        return
    sampler.stop()
    if not sampler.rows:
        return
    status, text = sampler.verdict()
    _write_outputs(environment, sampler, status, text)
    if getattr(environment.parsed_options, "headless", False) and any(
        r.source not in OWN_SOURCES for r in sampler.rows
    ):
        print(text, flush=True)  # the console's copy; logging it too printed the verdict twice
    else:
        log.info(text)


def _write_outputs(environment, sampler: ResourceSampler, status: str | None, text: str) -> None:
    directory = run_dir(environment)
    if directory is None:
        return
    write_atomic(directory / CSV_NAME, sampler.csv_text())
    add_run_info(
        environment,
        "resources",
        {
            "leak_verdict": status,
            "verdict": text,
            "interval_s": sampler.interval,
            "warmup": str(sampler.warmup),
            "sources": [s.label for s in sampler.sources],
            "source_failures": dict(sampler.failures),
        },
    )
