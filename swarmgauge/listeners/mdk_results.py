"""The MDK fleet's figures: SLO terms from the target's own metrics, and ``mdk.json`` at the end of the run.

The terms (``headroom``, ``busiest_cpu``, ``mdk_rejected_ratio``) and the gates of the MDK benchmark page are
registered when this module is imported; :func:`watch_target` samples a Gateway's ``/metrics`` and the stand-in's
pid files and adds the gates. ``locustfiles/mdk_fleet.py`` calls it at ``init`` and :func:`write_result` when Locust
quits; ``reports/mdk.py`` renders the file.
"""

from __future__ import annotations

import json
import os
import re
import urllib.request
from pathlib import Path
from typing import Any

from swarmgauge.core.request_names import MDK_CONNECT_NAME, MDK_REQUEST_TYPE
from swarmgauge.core.verdict import GENERATOR_SOURCE, MACHINE_SOURCE
from swarmgauge.files import write_atomic
from swarmgauge.listeners import resources, rundir, slo

RESULT_NAME = "mdk.json"
DEFAULT_SLOS = [
    "headroom<1",
    "MDK:action:p99<=2000ms",
    "mdk_rejected_ratio<0.01",
    "busiest_cpu<=80%",
    "rss_slope<=18000MiB/h",
]
#: The gates over submitted actions: left out for a plan that submits none (a gate over no data fails the run).
ACTION_SLOS = ("MDK:action:p99<=2000ms", "mdk_rejected_ratio<0.01")
#: completed collection sweeps per Worker: the headroom leaves out the first (started before the run)
SWEEPS_METRIC = "mdk_worker_collection_cycles_total"
PROM_METRICS = ("mdk_worker_headroom", "mdk_worker_collection_cycle_seconds", "mdk_worker_routable", SWEEPS_METRIC)


def watch_target(environment: Any, url: str, pid_files: list[Path], submits_actions: bool) -> None:
    """Sample the Gateway's ``/metrics`` (when there is a URL) and each pid file's process; add the page's gates."""
    if url:
        resources.add_sample_source(environment, f"prom:{url.rstrip('/')}/metrics#{','.join(PROM_METRICS)}")
    for pid_file in pid_files:
        resources.add_sample_source(environment, f"psutil:pidfile={pid_file}")
    gates = DEFAULT_SLOS if submits_actions else [g for g in DEFAULT_SLOS if g not in ACTION_SLOS]
    slo.add_default_slos(environment, gates)


def _rows(environment: Any, step: int | None, prefix: str, metric: str) -> dict[str, list[float]]:
    """Sampled values per series (one per Worker or component), optionally of one step only."""
    sampler = resources.sampler_for(environment)
    found: dict[str, list[float]] = {}
    for row in sampler.rows:
        if row.source.startswith(prefix) and row.metric.split("{")[0] == metric and (step is None or row.step == step):
            key = row.metric if prefix == "prom:" else row.source
            found.setdefault(key, []).append(row.value)
    return found


def _worker_of(metric: str) -> str:
    return re.sub(r'.*worker="([^"]+)".*', r"\1", metric)


def headroom_by_worker(environment: Any, step: int | None = None) -> dict[str, float]:
    """Mean sampled cycle time / interval per Worker (the page averages its sweep rounds).

    A Worker's first sweep starts when the stand-in does, before the run: it runs while the rest of the stack, the
    generator and the users' fleet discovery (at a local run's start-up, before its load) start, as the page's
    harness does before it measures (its profiles first check that every device answers). Once a later sweep has ended, the samples that still show the
    first one are left out; a Worker whose second sweep never ends in the run keeps them (and its lower bound)."""
    sampler = resources.sampler_for(environment)
    headroom: dict[str, dict[int, float]] = {}
    sweeps: dict[str, dict[int, float]] = {}
    for row in sampler.rows:
        if not row.source.startswith("prom:") or (step is not None and row.step != step):
            continue
        name = row.metric.split("{")[0]
        if name == "mdk_worker_headroom":
            headroom.setdefault(_worker_of(row.metric), {})[row.round] = row.value
        elif name == SWEEPS_METRIC:
            sweeps.setdefault(_worker_of(row.metric), {})[row.round] = row.value
    found = {}
    for worker, by_round in headroom.items():
        ended = sweeps.get(worker, {})
        measured = [value for round_, value in by_round.items() if ended.get(round_, 0.0) >= 2]
        values = measured or list(by_round.values())
        found[worker] = sum(values) / len(values)
    return found


def _headroom(environment: Any, step: int | None) -> float | None:
    values = headroom_by_worker(environment, step)
    return max(values.values()) if values else None


def cpu_by_component(environment: Any, step: int | None = None) -> dict[str, float]:
    found = _rows(environment, step, "psutil:pidfile=", "cpu_percent")
    return {Path(k.split("=", 1)[1]).stem: sum(v) / len(v) for k, v in found.items() if v}


def _busiest_cpu(environment: Any, step: int | None) -> float | None:
    values = cpu_by_component(environment, step)
    return max(values.values()) / 100.0 if values else None


def error_counts(environment: Any, leave_out: tuple[str, ...] = ()) -> dict[str, int]:
    """Locust's failures by recorded error text, e.g. ``Rejected(ERR_WORKER_NOT_ROUTABLE)``; not those of the request
    names in ``leave_out``."""
    counts: dict[str, int] = {}
    for entry in environment.stats.errors.values():
        if entry.method == MDK_REQUEST_TYPE and entry.name not in leave_out:
            counts[str(entry.error)] = counts.get(str(entry.error), 0) + entry.occurrences
    return counts


def rejected_ratio(environment: Any, step: int | None = None) -> float | None:
    """(Rejected + timed out) / attempted, over reads and actions, as the page's fourth row (whole run only); a burst
    user's connect (``MDK connect``) is neither, so its failures are not counted either."""
    if step is not None:
        return None
    attempted = sum(environment.stats.get(name, MDK_REQUEST_TYPE).num_requests for name in ("telemetry", "action"))
    if not attempted:
        return None
    bad = sum(
        n
        for error, n in error_counts(environment, leave_out=(MDK_CONNECT_NAME,)).items()
        if error.startswith(("Rejected(", "GatewayTimeout(")) or "TIMEOUT" in error
    )
    return bad / attempted


slo.register_metric("headroom", _headroom)
slo.register_metric("busiest_cpu", _busiest_cpu)
slo.register_metric("mdk_rejected_ratio", rejected_ratio)


def parse_kernel_counts(text: str) -> dict[str, Any]:
    """The stand-in's own command counters, rejections, accept-time quantiles and missed pings from its metrics, and
    its Gateway's request counts (``gateway``: ``requests`` in all, ``metrics_requests`` of them to ``/metrics``)."""
    counts: dict[str, Any] = {"commands": {}, "rejected": {}, "accept_ms": {}}
    for line in text.splitlines():
        own = re.match(r'^mdk_kernel_(?:accept_ms\{quantile="([^"]+)"\}|(missed_pings)_total) (\S+)$', line)
        if own and own.group(1):
            counts["accept_ms"][own.group(1)] = float(own.group(3))
        elif own:
            counts["missed_pings"] = int(float(own.group(3)))
        gateway = re.match(r"^mdk_gateway_(requests|metrics_requests)_total (\S+)$", line)
        if gateway:
            counts.setdefault("gateway", {})[gateway.group(1)] = int(float(gateway.group(2)))
        match = re.match(r'^mdk_commands_(total|rejected_total)\{(?:status|code)="([^"]+)"\} (\S+)$', line)
        if match:
            counts["commands" if match.group(1) == "total" else "rejected"][match.group(2)] = int(float(match.group(3)))
    return counts


def kernel_counts(url: str) -> dict[str, Any] | None:
    """The stand-in's own command counters from its ``/metrics`` (None for a Gateway that has none)."""
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/metrics", timeout=5) as response:
            text = response.read().decode()
    except (OSError, ValueError):
        return None
    return parse_kernel_counts(text)


def cpu_by_step(environment: Any) -> dict[str, dict[str, float]]:
    """Each step's mean CPU per stand-in component and of the generator (``generator``), so the index can tell a
    fleet the 2-core machine could not hold from one the stand-in's model makes red."""
    sampler = resources.sampler_for(environment)
    found: dict[int, dict[str, list[float]]] = {}
    for row in sampler.rows:
        if row.step is None or row.metric != "cpu_percent":
            continue
        if row.source.startswith("psutil:pidfile="):
            name = Path(row.source.split("=", 1)[1]).stem
        elif row.source in (GENERATOR_SOURCE, MACHINE_SOURCE):
            name = row.source
        else:
            continue
        found.setdefault(row.step, {}).setdefault(name, []).append(row.value)
    return {str(step): {k: sum(v) / len(v) for k, v in names.items()} for step, names in sorted(found.items())}


def request_counts(environment: Any, drill_probes: int = 0) -> dict[str, int]:
    """The requests this run sent the Gateway, as the Gateway's own ``requests`` less its ``metrics_requests`` should
    read: ``counted`` (every MDK request event of the run, the burst users' connects too), ``before_the_run`` (the
    discovery's summaries before the load) and ``drill_probes`` (a drill's own timed reads); the run's figures hold
    neither of the last two."""
    counted = sum(
        e.num_requests for (name, method), e in environment.stats.entries.items() if method == MDK_REQUEST_TYPE
    )
    discovered = rundir.run_info(environment).get("mdk_discovered_before_load") or {}
    before = int(discovered.get("requests_before_the_run") or 0)
    return {"counted": counted, "before_the_run": before, "drill_probes": drill_probes}


def result_doc(environment: Any, url: str, profile: str | None, drill_probes: int = 0) -> dict[str, Any]:
    """``mdk.json``'s content: the verdict table's inputs, the Kernel's own counts beside Locust's; ``profile`` is
    the embedded stand-in's size (None for a Gateway the run did not start)."""
    action = environment.stats.get("action", MDK_REQUEST_TYPE)
    headroom = headroom_by_worker(environment)
    return {
        "load_avg": os.getloadavg()[0],
        "cpu_by_step": cpu_by_step(environment),
        "url": url,
        "profile": profile,
        "headroom": {"value": max(headroom.values()) if headroom else None, "by_worker": headroom},
        "cpu_percent": cpu_by_component(environment),
        "actions": {"submitted": action.num_requests, "queued": action.num_requests - action.num_failures},
        "requests": request_counts(environment, drill_probes),
        "errors": error_counts(environment),
        "rejected_ratio": rejected_ratio(environment, None),
        "kernel": kernel_counts(url) if url else None,
    }


def write_result(environment: Any, directory: Path, url: str, profile: str | None, drill_probes: int = 0) -> None:
    doc = result_doc(environment, url, profile, drill_probes)
    write_atomic(directory / RESULT_NAME, json.dumps(doc, indent=1, default=str))
