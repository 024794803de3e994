"""Fleet reads and action submits against an MDK Gateway, with the MDK benchmark's thresholds and failure drills.

Without ``--host`` the locustfile starts the MDK stand-in (``swarmgauge target mdk``; size it with
``--mdk-profile 1000x2`` or ``cap-1000devices-2workers``, knobs with ``--mdk-embedded-args``), samples its
``/metrics`` (Worker cycle time, headroom, routable) and every component's RSS and CPU by pid file, and stops it
when Locust quits. Scenarios (``--mdk-scenario``, when no ``--plan`` is given):

- ``reads``: ``--mdk-readers`` closed-loop readers (``MDKReader``, telemetry only) for ``--mdk-read-time``;
- ``burst``: the benchmark's action burst, 1,000 submits/s for 3 s, open model (``MDKBurstUser``);
- ``benchmark`` (default): the reads, then the burst.

Users stop after their request in flight (``--stop-timeout``, 10 s unless given), so Locust counts every submit the
Kernel answered. ``MDKFleetUser`` runs the ``--mdk-weights`` mix for plans of your own. ``--mdk-drill NAME`` runs a failure drill
(worker-restart, kernel-restart, device-outage) ``--mdk-drill-after`` seconds into step ``--mdk-drill-step``, once
the readers have read one of the victim's devices successfully (so it never kills during the first fleet
discovery), and counts the readers' failed reads from the kill to the drill's end (local runs); it
needs the stand-in's root (embedded, or ``--mdk-root`` from ``swarmgauge target mdk``). Gates (the MDK page's):
``headroom<1``, ``MDK:action:p99<=2000ms``, ``mdk_rejected_ratio<0.01``, ``busiest_cpu<=80%``,
``rss_slope<=18000MiB/h``; the run directory gets ``mdk.json`` (the verdict table's inputs, the Kernel's own
command counts beside Locust's) and ``mdk_drills.json``, which ``reports/mdk.py`` renders.

    locust -f locustfiles/mdk_fleet.py --headless --mdk-profile 1000x2 --run-dir runs/mdk
"""

from __future__ import annotations

import collections
import json
import logging
import os
import re
import shlex
import time
import urllib.request
from pathlib import Path
from typing import Any, cast

import gevent
from locust import constant, events
from locust.env import Environment
from locust.runners import MasterRunner, WorkerRunner

import swarmgauge.locust  # noqa: F401 - steps, SLOs, resources, run directory
from swarmgauge import shapes
from swarmgauge.core import option_kinds, run_context
from swarmgauge.core.durations import parse_duration
from swarmgauge.core.options import add_option
from swarmgauge.core.verdict import GENERATOR_SOURCE
from swarmgauge.errors import SwarmgaugeError, UsageError, stop_on_usage_error
from swarmgauge.listeners import resources, rundir, slo, steps
from swarmgauge.plans.plan import Plan, build_plan
from swarmgauge.shapes.open_model import OpenModel, tickets
from swarmgauge.targets.embedded import start_embedded
from swarmgauge.targets.mdk.drills import format_result, run_drill, save_results
from swarmgauge.targets.mdk.stack import MDKStack
from swarmgauge.users import mdk_user as mdk
from swarmgauge.users.mdk_client import REQUEST_TYPE

log = logging.getLogger(__name__)
RESULT_NAME = "mdk.json"
DRILLS_NAME = "mdk_drills.json"
DEFAULT_SLOS = [
    "headroom<1",
    "MDK:action:p99<=2000ms",
    "mdk_rejected_ratio<0.01",
    "busiest_cpu<=80%",
    "rss_slope<=18000MiB/h",
]
ACTION_SLOS = ("MDK:action:p99<=2000ms", "mdk_rejected_ratio<0.01")
ACTION_USERS = {"MDKFleetUser", "MDKBurstUser", "MDKOneAtATime"}
PROM_METRICS = ("mdk_worker_headroom", "mdk_worker_collection_cycle_seconds", "mdk_worker_routable")
_PROFILE = re.compile(r"^(?:cap-)?(\d+)(?:devices-|x)(\d+)(?:workers)?$")
BURST = {
    "label": "action burst",
    "rate": 1000,
    "duration": 3,
    "max_users": 200,
    "drop_after": 1,
    "user_classes": ["MDKBurstUser"],
}
# One burst user discovers the fleet first, so the burst's tickets do not wait behind a summary read.
DISCOVER = {"label": "discover", "users": 1, "duration": 2, "user_classes": ["MDKBurstUser"]}
STOP_TIMEOUT_S = 10.0
ARM_TIMEOUT_S = 60.0
NO_READERS_S = 2.0
READ_LOG_SIZE = 200_000


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    add_option(
        parser,
        "--mdk-scenario",
        choices=("benchmark", "reads", "burst"),
        default="benchmark",
        include_in_web_ui=True,
        help="plan when no --plan/--rate is given: reads, burst, or benchmark (reads then burst)",
    )
    add_option(
        parser,
        "--mdk-readers",
        kind=option_kinds.POSITIVE_COUNT,
        type=int,
        default=50,
        include_in_web_ui=True,
        help="closed-loop readers of the reads stage (default 50)",
    )
    add_option(
        parser,
        "--mdk-burst-users",
        kind=option_kinds.POSITIVE_COUNT,
        type=int,
        default=200,
        include_in_web_ui=True,
        help="submits the burst may have in flight (the page's harness: "
        "1000, it fires 1,000/s whatever the Kernel's pace)",
    )
    add_option(
        parser,
        "--mdk-read-time",
        default="30s",
        include_in_web_ui=True,
        help="hold of the reads stage (default 30s)",
    )
    add_option(
        parser,
        "--mdk-profile",
        default="100x1",
        include_in_web_ui=False,
        help="embedded stand-in size: DEVICESxWORKERS or cap-NdevicesM-workers (default 100x1)",
    )
    add_option(
        parser,
        "--mdk-embedded-args",
        kind=option_kinds.embedded_args("mdk"),
        default="",
        include_in_web_ui=False,
        help="more options for the embedded 'swarmgauge target mdk'",
    )
    add_option(
        parser,
        "--mdk-root",
        default="",
        include_in_web_ui=False,
        help="root of a stand-in you started (its 'root DIR' line), for drills and sampling",
    )
    add_option(
        parser,
        "--mdk-drill",
        default="",
        choices=("", "worker-restart", "kernel-restart", "device-outage"),
        include_in_web_ui=True,
        help="failure drill to run under load",
    )
    add_option(
        parser,
        "--mdk-drill-step",
        kind=option_kinds.COUNT,
        type=int,
        default=0,
        include_in_web_ui=True,
        help="plan step (0-based) the drill runs in",
    )
    add_option(
        parser,
        "--mdk-drill-after",
        default="1s",
        include_in_web_ui=True,
        help="delay into that step before the kill",
    )
    add_option(
        parser,
        "--mdk-drill-worker",
        default="worker-0",
        include_in_web_ui=True,
        help="worker-restart: which Worker",
    )


def parse_profile(text: str) -> tuple[int, int]:
    match = _PROFILE.match(text.strip())
    if not match or int(match.group(1)) < 1 or not 1 <= int(match.group(2)) <= int(match.group(1)):
        raise UsageError(f"--mdk-profile wants DEVICESxWORKERS (1000x2) or cap-1000devices-2workers, got {text!r}")
    return int(match.group(1)), int(match.group(2))


class MDKFleetUser(mdk.MDKUser):
    """The ``--mdk-weights`` mix of telemetry, summary, alerts and action."""

    abstract = False


class MDKReader(mdk.MDKUser):
    """A closed-loop device reader: telemetry of a random device, back to back."""

    abstract = False
    wait_time = constant(0)
    weights = {"telemetry": 1}


class MDKOneAtATime(mdk.MDKUser):
    """The page's one-at-a-time latencies: device reads, single action submits and fleet summaries, back to back,
    one request in flight (a summary reads every device, so it is drawn less often)."""

    abstract = False
    wait_time = constant(0)
    weights = {"telemetry": 3, "action": 3, "summary": 1}


_ticket_wait = tickets()


class MDKBurstUser(OpenModel, mdk.MDKUser):
    """One ``--mdk-action`` submit per open-model ticket (the burst), and none without a ticket: the tickets wait
    returns 0 only for a ticket, so the idle returns of a closed step (the discover stage) submit nothing."""

    abstract = False
    weights = {"action": 1}
    ticketed = False

    def wait_time(self) -> float:
        waited = _ticket_wait(self)
        self.ticketed = waited == 0.0
        return waited

    def do_action(self) -> None:
        if self.ticketed:
            self.ticketed = False
            super().do_action()


class MDKPlan(shapes.PlanShape):
    """``--plan``/``--rate`` when given; otherwise the ``--mdk-scenario`` plan."""

    def fallback_plan(self, options: Any) -> Plan:
        scenario = getattr(options, "mdk_scenario", "benchmark")
        hold = parse_duration(getattr(options, "mdk_read_time", "30s"), "--mdk-read-time")
        readers = int(getattr(options, "mdk_readers", 50))
        if readers < 1:
            raise UsageError(f"--mdk-readers must be at least 1, got {readers}")
        reads = {"label": f"{readers} readers", "users": readers, "duration": hold, "user_classes": ["MDKReader"]}
        # Locust keeps users when only the class changes at the same count: a second at 0 users swaps them.
        burst_users = int(getattr(options, "mdk_burst_users", 200))
        if burst_users < 1:
            raise UsageError(f"--mdk-burst-users must be at least 1, got {burst_users}")
        burst = {**BURST, "max_users": burst_users}
        stages = {
            "reads": [reads],
            "burst": [DISCOVER, burst],
            "benchmark": [reads, {"label": "switch", "users": 0, "duration": 1}, DISCOVER, burst],
        }[scenario]
        return build_plan({"name": f"mdk-{scenario}", "kind": "stages", "stages": stages}, source="mdk_fleet.py")


# -- the target: embedded stand-in, sampling, drills ---------------------------------------------------------------
class Target:
    """What this run knows about the Gateway it loads: its URL, and the stand-in's root when there is one."""

    def __init__(self) -> None:
        self.url = ""
        self.root: Path | None = None
        self.drill: gevent.Greenlet | None = None
        self.drill_results: list[Any] = []
        self.read_ok: set[str] = set()
        self.reads_seen = 0
        self.failed_reads: collections.deque[tuple[float, str]] = collections.deque(maxlen=READ_LOG_SIZE)

    def on_request(
        self, request_type: str, name: str, exception: Any = None, context: Any = None, **_kwargs: Any
    ) -> None:
        """Remember which devices the readers have read, and when and where their reads failed."""
        if request_type != REQUEST_TYPE or name != "telemetry":
            return
        device_id = str((context or {}).get("device_id", ""))
        self.reads_seen += 1
        if exception is None:
            self.read_ok.add(device_id)
        else:
            self.failed_reads.append((time.time(), device_id))

    def count_failed_reads(self, result: Any, victims: set[str]) -> None:
        """The readers' failed reads from the kill to the drill's end, all and of the victim's devices."""
        end = result.ended_at or time.time()
        during = [device for at, device in list(self.failed_reads) if result.killed_at <= at <= end]
        result.failed_reads = len(during)
        result.victim_failed_reads = sum(1 for device in during if device in victims)


_target = Target()


def start_target(environment: Environment) -> None:
    """Master or local run: start the stand-in without ``--host``, then sample it; validate the drill options."""
    if isinstance(environment.runner, WorkerRunner):
        return
    options = run_context.options(environment)
    devices, workers = parse_profile(getattr(options, "mdk_profile", "100x1") or "100x1")
    if getattr(options, "mdk_drill", "") and getattr(options, "mdk_drill_step", 0) < 0:
        raise UsageError("--mdk-drill-step must be 0 or more")
    parse_duration(getattr(options, "mdk_drill_after", "1s"), "--mdk-drill-after")
    args = [
        "--devices",
        str(devices),
        "--workers",
        str(workers),
        *shlex.split(getattr(options, "mdk_embedded_args", "") or ""),
    ]
    try:
        target = start_embedded(
            environment, "mdk", args, describe=f"MDK stand-in, {devices} devices / {workers} Workers"
        )
    except (SwarmgaugeError, OSError) as exc:
        raise UsageError(f"could not start the embedded MDK stand-in: {exc}") from None
    if target is not None:
        _target.root = Path(target.lines["root"])
    elif getattr(options, "mdk_root", ""):
        _target.root = Path(options.mdk_root)
        if not (_target.root / "stack.json").is_file():
            raise UsageError(f"--mdk-root {options.mdk_root}: no stack.json there")
    _target.url = environment.host or ""
    if getattr(options, "mdk_drill", "") and _target.root is None:
        raise UsageError("--mdk-drill needs the stand-in's root: run without --host, or give --mdk-root")
    if _target.url:
        resources.add_sample_source(environment, f"prom:{_target.url.rstrip('/')}/metrics#{','.join(PROM_METRICS)}")
    if _target.root is not None:
        for component in MDKStack.attach(_target.root).components:
            resources.add_sample_source(environment, f"psutil:pidfile={_target.root}/pids/{component}.pid")
    gates = DEFAULT_SLOS if _plan_submits_actions(environment) else [g for g in DEFAULT_SLOS if g not in ACTION_SLOS]
    slo.add_default_slos(environment, gates)
    if not getattr(options, "stop_timeout", None):
        environment.stop_timeout = STOP_TIMEOUT_S  # in-flight submits finish: Locust counts each QUEUED the Kernel does


def _run_drill(environment: Environment, readers_run: bool = True) -> None:
    """The drill at its step; with readers running it waits (bounded) for one of their good reads of the victim."""
    options = run_context.options(environment)
    gevent.sleep(parse_duration(options.mdk_drill_after, "--mdk-drill-after"))
    counted = readers_run and not isinstance(environment.runner, MasterRunner)  # a master sees no reads
    try:
        stack = MDKStack.attach(cast(Path, _target.root))  # start_target refuses --mdk-drill without a root
        victims = set(stack.device_ids(options.mdk_drill_worker if options.mdk_drill == "worker-restart" else None))
        started = time.monotonic()
        while counted and not (_target.read_ok & victims) and time.monotonic() < started + ARM_TIMEOUT_S:
            if not _target.reads_seen and time.monotonic() > started + NO_READERS_S:
                break  # a run without readers (the burst): the drill's own read arms it
            gevent.sleep(0.1)
        if counted and _target.reads_seen and not (_target.read_ok & victims):
            log.warning("drill %s: no reader read the victim's devices within %.0f s", options.mdk_drill, ARM_TIMEOUT_S)
        result = run_drill(options.mdk_drill, stack, _target.url, worker_id=options.mdk_drill_worker)
    except SwarmgaugeError as exc:
        log.error("drill %s could not run: %s", options.mdk_drill, exc)
        return
    if counted:
        _target.count_failed_reads(result, victims)
    _target.drill_results.append(result)
    log.info("drill %s", format_result(result))


@steps.step_changed.add_listener
def _on_step_changed(environment: Environment, step: Any, **_kwargs: Any) -> None:
    options = run_context.options(environment)
    if isinstance(environment.runner, WorkerRunner) or not getattr(options, "mdk_drill", ""):
        return
    if step.index == options.mdk_drill_step and _target.drill is None:
        _target.drill = gevent.spawn(_run_drill, environment, _step_runs_readers(environment, step.index))


def _plan_stages(environment: Environment) -> tuple[Any, ...]:
    """The stages of the run's swarmgauge shape (none for a run without one)."""
    shape = environment.shape_class
    return tuple(shape.plan().stages) if shape is not None and hasattr(shape, "plan") else ()


def _plan_submits_actions(environment: Environment) -> bool:
    """Whether any stage may run a user that submits actions: a reads-only plan is not judged on actions it never
    sent (a gate over no data fails the run)."""
    try:
        stages = _plan_stages(environment)
    except UsageError:
        return True  # a bad plan is the shape's own start-up error to report
    return not stages or any(s.user_classes is None or set(s.user_classes) & ACTION_USERS for s in stages)


def _step_runs_readers(environment: Environment, index: int) -> bool:
    """Whether the plan's stage ``index`` spawns readers (a burst has none: the drill's own read arms it at once)."""
    stages = _plan_stages(environment)
    if index >= len(stages) or stages[index].user_classes is None:
        return True
    return "MDKReader" in stages[index].user_classes


# -- SLO terms from the target's own figures -------------------------------------------------------------------
def _rows(environment: Environment, step: int | None, prefix: str, metric: str) -> dict[str, list[float]]:
    """Sampled values per series (one per Worker or component), optionally of one step only."""
    sampler = resources.sampler_for(environment)
    found: dict[str, list[float]] = {}
    for row in sampler.rows:
        if row.source.startswith(prefix) and row.metric.split("{")[0] == metric and (step is None or row.step == step):
            key = row.metric if prefix == "prom:" else row.source
            found.setdefault(key, []).append(row.value)
    return found


def headroom_by_worker(environment: Environment, step: int | None = None) -> dict[str, float]:
    """Mean sampled cycle time / interval per Worker (the page averages its sweep rounds)."""
    found = _rows(environment, step, "prom:", "mdk_worker_headroom")
    return {re.sub(r'.*worker="([^"]+)".*', r"\1", k): sum(v) / len(v) for k, v in found.items() if v}


def _headroom(environment: Environment, step: int | None) -> float | None:
    values = headroom_by_worker(environment, step)
    return max(values.values()) if values else None


def cpu_by_component(environment: Environment, step: int | None = None) -> dict[str, float]:
    found = _rows(environment, step, "psutil:pidfile=", "cpu_percent")
    return {Path(k.split("=", 1)[1]).stem: sum(v) / len(v) for k, v in found.items() if v}


def _busiest_cpu(environment: Environment, step: int | None) -> float | None:
    values = cpu_by_component(environment, step)
    return max(values.values()) / 100.0 if values else None


def error_counts(environment: Environment) -> dict[str, int]:
    """Locust's failures by recorded error text, e.g. ``Rejected(ERR_WORKER_NOT_ROUTABLE)``."""
    counts: dict[str, int] = {}
    for entry in environment.stats.errors.values():
        if entry.method == REQUEST_TYPE:
            counts[str(entry.error)] = counts.get(str(entry.error), 0) + entry.occurrences
    return counts


def _rejected_ratio(environment: Environment, step: int | None) -> float | None:
    """(Rejected + timed out) / attempted, over reads and actions, as the page's fourth row."""
    if step is not None:
        return None
    attempted = sum(environment.stats.get(name, REQUEST_TYPE).num_requests for name in ("telemetry", "action"))
    if not attempted:
        return None
    bad = sum(
        n
        for error, n in error_counts(environment).items()
        if error.startswith(("Rejected(", "GatewayTimeout(")) or "TIMEOUT" in error
    )
    return bad / attempted


slo.register_metric("headroom", _headroom)
slo.register_metric("busiest_cpu", _busiest_cpu)
slo.register_metric("mdk_rejected_ratio", _rejected_ratio)


# -- results ---------------------------------------------------------------------------------------------------
def kernel_counts(url: str) -> dict[str, Any] | None:
    """The stand-in's own command counters from its ``/metrics`` (None for a Gateway that has none)."""
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/metrics", timeout=5) as response:
            text = response.read().decode()
    except (OSError, ValueError):
        return None
    counts: dict[str, Any] = {"commands": {}, "rejected": {}, "accept_ms": {}}
    for line in text.splitlines():
        own = re.match(r'^mdk_kernel_(?:accept_ms\{quantile="([^"]+)"\}|(missed_pings)_total) (\S+)$', line)
        if own and own.group(1):
            counts["accept_ms"][own.group(1)] = float(own.group(3))
        elif own:
            counts["missed_pings"] = int(float(own.group(3)))
        match = re.match(r'^mdk_commands_(total|rejected_total)\{(?:status|code)="([^"]+)"\} (\S+)$', line)
        if match:
            counts["commands" if match.group(1) == "total" else "rejected"][match.group(2)] = int(float(match.group(3)))
    return counts


def cpu_by_step(environment: Environment) -> dict[str, dict[str, float]]:
    """Each step's mean CPU per stand-in component and of the generator (``generator``), so the index can tell a
    fleet the 2-core machine could not hold from one the stand-in's model makes red."""
    sampler = resources.sampler_for(environment)
    found: dict[int, dict[str, list[float]]] = {}
    for row in sampler.rows:
        if row.step is None or row.metric != "cpu_percent":
            continue
        if row.source.startswith("psutil:pidfile="):
            name = Path(row.source.split("=", 1)[1]).stem
        elif row.source == GENERATOR_SOURCE:
            name = GENERATOR_SOURCE
        else:
            continue
        found.setdefault(row.step, {}).setdefault(name, []).append(row.value)
    return {str(step): {k: sum(v) / len(v) for k, v in names.items()} for step, names in sorted(found.items())}


def result_doc(environment: Environment) -> dict[str, Any]:
    action = environment.stats.get("action", REQUEST_TYPE)
    headroom = headroom_by_worker(environment)
    return {
        "load_avg": os.getloadavg()[0],
        "cpu_by_step": cpu_by_step(environment),
        "url": _target.url,
        "profile": getattr(environment.parsed_options, "mdk_profile", None) if _target.root else None,
        "headroom": {"value": max(headroom.values()) if headroom else None, "by_worker": headroom},
        "cpu_percent": cpu_by_component(environment),
        "actions": {"submitted": action.num_requests, "queued": action.num_requests - action.num_failures},
        "errors": error_counts(environment),
        "rejected_ratio": _rejected_ratio(environment, None),
        "kernel": kernel_counts(_target.url) if _target.url else None,
    }


def write_results(environment: Environment) -> None:
    if _target.drill is not None:
        _target.drill.join(timeout=60)
    directory = rundir.run_dir(environment)
    if directory is None:
        return
    if _target.drill_results:
        save_results(directory / DRILLS_NAME, _target.drill_results)
    rundir.write_atomic(directory / RESULT_NAME, json.dumps(result_doc(environment), indent=1, default=str))


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    stop_on_usage_error(start_target, environment)
    environment.events.request.add_listener(_target.on_request)


@events.test_stop.add_listener
def _on_test_stop(environment: Environment, **_kwargs: Any) -> None:
    if not isinstance(environment.runner, WorkerRunner) and _target.drill is not None:
        _target.drill.join(timeout=60)


@events.quitting.add_listener
def _on_quitting(environment: Environment, **_kwargs: Any) -> None:
    if isinstance(environment.runner, WorkerRunner):
        return
    try:
        write_results(environment)
    except Exception as exc:  # noqa: BLE001 - the run's other files must still be written
        log.warning("could not write %s: %s", RESULT_NAME, exc)
