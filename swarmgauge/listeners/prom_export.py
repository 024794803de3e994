"""Prometheus text exposition of a run while it goes, on the master (or a local run).

Served at ``/swarmgauge/metrics`` on the web UI, and with ``--prometheus-port PORT`` on its own small server
(``--prometheus-host``, default 127.0.0.1), which a headless run needs. Each scrape is built from the live view
(:mod:`listeners.live`), so the counters are exactly the ``steps.csv`` figures of the run so far:

- ``swarmgauge_requests_total`` / ``swarmgauge_failures_total`` {step, label, request_type, name}: per step and name
  (no ``Aggregated`` rows, so sums are not doubled); ``swarmgauge_dropped_total`` {step, label}.
- ``swarmgauge_latency_seconds`` {step, label, request_type, name, quantile}: p50/p90/p99/p99.9 from the HDR data.
- ``swarmgauge_request_duration_seconds`` {step, label, request_type, name}: a histogram (``_bucket{le}``, ``_sum``,
  ``_count``) of the timed requests, buckets of :mod:`listeners.prom_histogram`, which ``histogram_quantile`` sums
  across workers, steps and pushes.
- ``swarmgauge_step_users``, ``swarmgauge_step_target_rate``, ``swarmgauge_step_rps``, ``swarmgauge_current_step``.
- ``swarmgauge_slo_state`` {expr}: 0 pass, 1 unknown, 2 fail; ``swarmgauge_slo_observed`` {expr} in base units.
- ``swarmgauge_resource`` {node, source, metric}: the last sample of every sampled series.
- ``swarmgauge_lost_workers``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from locust import events
from locust.env import Environment
from locust.runners import WorkerRunner
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.utils import floatToGoString

from swarmgauge.core import option_kinds
from swarmgauge.core.numbers import number
from swarmgauge.core.options import add_option
from swarmgauge.core.run_context import PerEnvironment
from swarmgauge.errors import UsageError, stop_on_usage_error
from swarmgauge.listeners import live, run_redaction, steps
from swarmgauge.listeners.prom_histogram import BUCKETS_SECONDS, cumulative_buckets, sum_seconds

logger = logging.getLogger("swarmgauge.prom_export")

QUANTILES = (("0.5", "p50_ms"), ("0.9", "p90_ms"), ("0.99", "p99_ms"), ("0.999", "p999_ms"))
SLO_STATE = {"pass": 0, "unknown": 1, "fail": 2}
CONTENT_TYPE = CONTENT_TYPE_LATEST
NAME_LABELS = ["step", "label", "request_type", "name"]
HISTOGRAM_NAME = "swarmgauge_request_duration_seconds"
BUCKET_LABELS = [floatToGoString(bound) for bound in BUCKETS_SECONDS] + ["+Inf"]


class RunCollector:
    """A prometheus-client collector that reads the live view at each scrape."""

    def __init__(self, environment: Environment) -> None:
        self.environment = environment

    def collect(self) -> Iterable[Any]:
        view = live.snapshot(self.environment)
        requests = CounterMetricFamily(
            "swarmgauge_requests", "Requests per step and name (as steps.csv)", labels=NAME_LABELS
        )
        failures = CounterMetricFamily("swarmgauge_failures", "Failed requests per step and name", labels=NAME_LABELS)
        dropped = CounterMetricFamily(
            "swarmgauge_dropped", "Open-model tickets dropped per step", labels=["step", "label"]
        )
        latency = GaugeMetricFamily(
            "swarmgauge_latency_seconds", "Latency quantiles per step and name (HDR)", labels=NAME_LABELS + ["quantile"]
        )
        users = GaugeMetricFamily("swarmgauge_step_users", "Users planned for the step", labels=["step", "label"])
        rate = GaugeMetricFamily(
            "swarmgauge_step_target_rate", "Arrival rate planned for the step (1/s)", labels=["step", "label"]
        )
        rps = GaugeMetricFamily(
            "swarmgauge_step_rps", "Measured requests per second in the step", labels=["step", "label"]
        )
        for row in view["steps"]:
            step_labels = [str(row["step"]), str(row["label"])]
            if row["name"] == "Aggregated":
                dropped.add_metric(step_labels, float(row.get("dropped") or 0))
                for family, key in ((users, "users"), (rate, "target_rate"), (rps, "rps")):
                    value = number(row.get(key))
                    if value is not None:
                        family.add_metric(step_labels, value)
                continue
            labels = step_labels + [str(row["request_type"]), str(row["name"])]
            requests.add_metric(labels, float(row["requests"]))
            failures.add_metric(labels, float(row["failures"]))
            for quantile, key in QUANTILES:
                value = number(row.get(key))
                if value is not None:
                    latency.add_metric(labels + [quantile], value / 1000.0)
        yield from (requests, failures, dropped, latency, users, rate, rps)
        yield self._histogram(view)
        yield from self._run_families(view)

    def _histogram(self, view: dict[str, Any]) -> HistogramMetricFamily:
        """Every (step, request type, name) merged so far as bucket counts, read off its HDR histogram."""
        family = HistogramMetricFamily(
            HISTOGRAM_NAME, "Latency of timed requests per step and name (fixed buckets from HDR)", labels=NAME_LABELS
        )
        step_labels = {row["step"]: str(row["label"]) for row in view["steps"]}
        for (step, request_type, name), stats in sorted(steps.merged(self.environment).entries.items()):
            labels = [str(step), step_labels.get(step, ""), request_type, run_redaction.redact(name, self.environment)]
            buckets = list(zip(BUCKET_LABELS, (float(count) for count in cumulative_buckets(stats)), strict=True))
            family.add_metric(labels, buckets, sum_seconds(stats))
        return family

    @staticmethod
    def _run_families(view: dict[str, Any]) -> Iterable[Any]:
        current = GaugeMetricFamily("swarmgauge_current_step", "Index of the step running now (-1 before the first)")
        current.add_metric([], float(view["current_step"]["index"]) if view["current_step"] else -1.0)
        state = GaugeMetricFamily(
            "swarmgauge_slo_state", "SLO verdict so far: 0 pass, 1 unknown, 2 fail", labels=["expr"]
        )
        observed = GaugeMetricFamily(
            "swarmgauge_slo_observed", "SLO observed value so far, base units", labels=["expr"]
        )
        for verdict in view["slo"]:
            state.add_metric([verdict["expr"]], float(SLO_STATE.get(verdict["status"], 1)))
            if verdict.get("observed") is not None:
                observed.add_metric([verdict["expr"]], float(verdict["observed"]))
        resource = GaugeMetricFamily(
            "swarmgauge_resource", "Last sample of each sampled resource series", labels=["node", "source", "metric"]
        )
        for sample in view["latest_resources"]:
            resource.add_metric([sample["node"], sample["source"], sample["metric"]], float(sample["value"]))
        lost = GaugeMetricFamily("swarmgauge_lost_workers", "Workers lost during the run")
        lost.add_metric([], float(len(view["lost_workers"])))
        yield from (current, state, observed, resource, lost)


def exposition(environment: Environment) -> bytes:
    """The Prometheus text format of the run as it stands."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(RunCollector(environment))
    return generate_latest(registry)


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    add_option(
        parser,
        "--prometheus-port",
        kind=option_kinds.PORT,
        type=int,
        default=0,
        include_in_web_ui=False,
        help="Also serve /metrics (Prometheus text) on this port of the master; 0: only on the web UI",
    )
    add_option(
        parser,
        "--prometheus-host",
        default="127.0.0.1",
        include_in_web_ui=False,
        help="Interface of --prometheus-port (default 127.0.0.1)",
    )


def _wsgi_app(environment: Environment) -> Any:
    def app(wsgi_environ: dict[str, Any], start_response: Any) -> list[bytes]:
        if wsgi_environ.get("PATH_INFO") not in ("/metrics", "/"):
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found: try /metrics\n"]
        body = exposition(environment)
        start_response("200 OK", [("Content-Type", CONTENT_TYPE), ("Content-Length", str(len(body)))])
        return [body]

    return app


@dataclass
class _Exporter(PerEnvironment):
    """Owned by ``listeners/prom_export.py``: the ``/metrics`` server of this Environment, kept alive with it."""

    server: Any = None


def _start(server: Any, host: str, port: int) -> None:
    """Bind before the load: a port another process holds is one line and exit 2, not a traceback."""
    try:
        server.start()
    except OSError as exc:
        raise UsageError(f"--prometheus-port {port}: cannot listen on {host}:{port} ({exc.strerror or exc})") from None


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    options = getattr(environment, "parsed_options", None)
    port = int(getattr(options, "prometheus_port", 0) or 0)
    if not port or isinstance(environment.runner, WorkerRunner):
        return
    from gevent import pywsgi

    host = getattr(options, "prometheus_host", "127.0.0.1") or "127.0.0.1"
    server = pywsgi.WSGIServer((host, port), _wsgi_app(environment), log=None)
    stop_on_usage_error(lambda _env: _start(server, host, port), environment)
    _Exporter.of(environment).server = server
    logger.info("Prometheus metrics at http://%s:%d/metrics", host, server.server_port)
