"""Fleet reads and action submits against an MDK Gateway, with the MDK benchmark's thresholds and failure drills.

Without ``--host`` the locustfile starts the MDK stand-in (``swarmgauge target mdk``; size it with
``--mdk-profile 1000x2`` or ``cap-1000devices-2workers``, knobs with ``--mdk-embedded-args``), samples its
``/metrics`` (Worker cycle time, headroom, routable) and every component's RSS and CPU by pid file, and stops it
when Locust quits; a local run reads the fleet's device ids (one fleet summary) at its start-up, before any load, so
no step waits for a summary of every device (``run.json`` ``mdk_discovered_before_load``, with the summaries it sent
the Gateway before the run, ``requests_before_the_run``: the run's counts do not hold them); ``--mdk-discover kernel``
takes them from the stand-in Kernel's worker list instead, reading no device. Scenarios (``--mdk-scenario``, when no ``--plan`` is given):

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

This file is the scenario (options, User classes, plan, the embedded target); the Users are in
``users/mdk_fleet_users.py``, the plans in ``shapes/mdk_plan.py``, the figures and gates in
``listeners/mdk_results.py``, the drill under load in ``targets/mdk/drill_under_load.py``.

    locust -f locustfiles/mdk_fleet.py --headless --mdk-profile 1000x2 --run-dir runs/mdk
"""

from __future__ import annotations

import logging
import re
import shlex
import time
from pathlib import Path
from typing import Any

from locust import events
from locust.env import Environment
from locust.runners import LocalRunner, MasterRunner, WorkerRunner

import swarmgauge.locust  # noqa: F401 - steps, SLOs, resources, run directory
from swarmgauge.core import hooks, option_kinds, run_context
from swarmgauge.core.durations import parse_duration
from swarmgauge.core.options import add_option
from swarmgauge.errors import SwarmgaugeError, UsageError, stop_on_usage_error
from swarmgauge.listeners import mdk_results, rundir
from swarmgauge.shapes import mdk_plan
from swarmgauge.targets.embedded import start_embedded
from swarmgauge.targets.mdk import drill_under_load
from swarmgauge.targets.mdk.stack import MDKStack
from swarmgauge.users import mdk_fleet_users
from swarmgauge.users import mdk_user as mdk

log = logging.getLogger(__name__)
STOP_TIMEOUT_S = 10.0
#: ``--mdk-discover``: a fleet summary until every device answered (the page's harness), or the Kernel's worker list
DISCOVER_SUMMARY, DISCOVER_KERNEL = "summary", "kernel"
_PROFILE = re.compile(r"^(?:cap-)?(\d+)(?:devices-|x)(\d+)(?:workers)?$")


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
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
        "--mdk-discover",
        default=DISCOVER_SUMMARY,
        choices=(DISCOVER_SUMMARY, DISCOVER_KERNEL),
        include_in_web_ui=False,
        help="how a local run with the embedded stand-in finds its device ids before the load: summary (fleet "
        "summaries until every device answered, each reading every device, as the page's harness) or kernel (the "
        "stand-in Kernel's worker list, the ids a summary reads, no device read; its start waited for every Worker "
        "routable with all its devices)",
    )
    drill_under_load.add_options(parser)


def parse_profile(text: str) -> tuple[int, int]:
    match = _PROFILE.match(text.strip())
    if not match or int(match.group(1)) < 1 or not 1 <= int(match.group(2)) <= int(match.group(1)):
        raise UsageError(f"--mdk-profile wants DEVICESxWORKERS (1000x2) or cap-1000devices-2workers, got {text!r}")
    return int(match.group(1)), int(match.group(2))


class MDKFleetUser(mdk.MDKUser):
    """The ``--mdk-weights`` mix of telemetry, summary, alerts and action."""


class MDKReader(mdk_fleet_users.MDKReader):
    """A closed-loop device reader (``users/mdk_fleet_users.py``)."""


class MDKOneAtATime(mdk_fleet_users.MDKOneAtATime):
    """The page's one-at-a-time latencies (``users/mdk_fleet_users.py``)."""


class MDKBurstUser(mdk_fleet_users.MDKBurstUser):
    """One action submit per open-model ticket (``users/mdk_fleet_users.py``)."""


class MDKPlan(mdk_plan.MDKPlan):
    """``--plan``/``--rate`` when given; otherwise the ``--mdk-scenario`` plan (``shapes/mdk_plan.py``)."""


_target = drill_under_load.FleetTarget()


def start_target(environment: Environment) -> None:
    """Master or local run: start the stand-in without ``--host``, then sample it; validate the drill options."""
    if isinstance(environment.runner, WorkerRunner):
        return
    options = run_context.options(environment)
    devices, workers = parse_profile(getattr(options, "mdk_profile", "100x1") or "100x1")
    if getattr(options, "mdk_drill", "") and getattr(options, "mdk_drill_step", 0) < 0:
        raise UsageError("--mdk-drill-step must be 0 or more")
    parse_duration(getattr(options, "mdk_drill_after", "1s"), "--mdk-drill-after")
    args = ["--devices", str(devices), "--workers", str(workers)]
    args += shlex.split(getattr(options, "mdk_embedded_args", "") or "")
    try:
        target = start_embedded(
            environment, "mdk", args, describe=f"MDK stand-in, {devices} devices / {workers} Workers"
        )
    except (SwarmgaugeError, OSError) as exc:
        raise UsageError(f"could not start the embedded MDK stand-in: {exc}") from None
    if getattr(options, "mdk_discover", DISCOVER_SUMMARY) == DISCOVER_KERNEL and (
        target is None or not isinstance(environment.runner, LocalRunner)
    ):
        raise UsageError(
            "--mdk-discover kernel lists the embedded stand-in's devices in a local run: not with --host nor --master"
        )
    if target is not None:
        _target.root = Path(target.lines["root"])
        if isinstance(environment.runner, LocalRunner):
            _discover_first(environment, devices)
    elif getattr(options, "mdk_root", ""):
        _target.root = Path(options.mdk_root)
        if not (_target.root / "stack.json").is_file():
            raise UsageError(f"--mdk-root {options.mdk_root}: no stack.json there")
    _target.url = environment.host or ""
    _target.set_aside = mdk.fleet_cache(environment).set_aside  # the outage drill times a device no reader queues on
    if getattr(options, "mdk_drill", "") and _target.root is None:
        raise UsageError("--mdk-drill needs the stand-in's root: run without --host, or give --mdk-root")
    root = _target.root
    pid_files = [root / "pids" / f"{c}.pid" for c in MDKStack.attach(root).components] if root is not None else []
    mdk_results.watch_target(environment, _target.url, pid_files, mdk_plan.plan_submits_actions(environment))
    if not getattr(options, "stop_timeout", None):
        environment.stop_timeout = STOP_TIMEOUT_S  # in-flight submits finish: Locust counts each QUEUED the Kernel does


def _discover_first(environment: Environment, devices: int) -> None:
    """The embedded fleet's device ids before the load (``users/mdk_user.py``), what it found and the time it took in
    ``run.json``."""
    by = getattr(run_context.options(environment), "mdk_discover", DISCOVER_SUMMARY) or DISCOVER_SUMMARY
    if by == DISCOVER_KERNEL:
        found = _listed_by_kernel(environment)
    else:
        found = mdk.discover_before_load(environment, environment.host or "", devices)
    if found is None:
        log.warning("the fleet's discovery before the load failed: the users discover at their start")
        return
    answered, seconds, sent = found
    # the summaries sent come before the run: the Gateway saw them, the run's counts do not hold them
    info = {"devices": answered, "of": devices, "seconds": round(seconds, 2), "by": by, "requests_before_the_run": sent}
    hooks.add_run_info(environment, "mdk_discovered_before_load", info)
    log.log(
        logging.INFO if answered >= devices else logging.WARNING,
        "discovered %d of %d devices before the load in %.1f s",
        answered,
        devices,
        seconds,
    )


def _listed_by_kernel(environment: Environment) -> tuple[int, float, int] | None:
    """The embedded stand-in's device ids as its Kernel lists them, no device read (a summary of 5,000 devices reads
    each through its Worker, 5-6 s on one, 4-9 s on five on a loaded 2-core machine): (ids, seconds, no request to
    the Gateway), or None."""
    began = time.monotonic()
    try:
        ids = MDKStack.attach(_target.root or "").listed_device_ids()
    except (SwarmgaugeError, OSError, ValueError) as exc:
        log.warning("the stand-in Kernel's worker list failed: %s", exc)
        return None
    if not ids:
        return None
    mdk.fleet_cache(environment).device_ids = ids
    return len(ids), time.monotonic() - began, 0


@hooks.step_changed.add_listener
def _on_step_changed(environment: Environment, step: Any, **_kwargs: Any) -> None:
    options = run_context.options(environment)
    if isinstance(environment.runner, WorkerRunner) or not getattr(options, "mdk_drill", ""):
        return
    if step.index == options.mdk_drill_step and _target.drill is None:
        readers_run = mdk_plan.step_runs_readers(environment, step.index)
        _target.start_drill(options, counted=readers_run and not isinstance(environment.runner, MasterRunner))


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    stop_on_usage_error(start_target, environment)
    environment.events.request.add_listener(_target.on_request)


@events.test_stop.add_listener
def _on_test_stop(environment: Environment, **_kwargs: Any) -> None:
    if not isinstance(environment.runner, WorkerRunner):
        _target.join_drill()


@events.quitting.add_listener
def _on_quitting(environment: Environment, **_kwargs: Any) -> None:
    if isinstance(environment.runner, WorkerRunner):
        return
    try:
        _target.join_drill()
        directory = rundir.run_dir(environment)
        if directory is not None:
            _target.save_drills(directory)
            profile = getattr(environment.parsed_options, "mdk_profile", None) if _target.root else None
            probes = sum(r.probe_reads for r in _target.drill_results)
            mdk_results.write_result(environment, directory, _target.url, profile, probes)
    except Exception as exc:  # noqa: BLE001 - the run's other files must still be written
        log.warning("could not write %s: %s", mdk_results.RESULT_NAME, exc)
