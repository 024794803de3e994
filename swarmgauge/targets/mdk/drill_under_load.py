"""A failure drill run inside a Locust run of ``locustfiles/mdk_fleet.py``: armed by the readers' own good reads,
counting their failed reads from the kill to the drill's end.

:class:`FleetTarget` is what the run knows about the Gateway it loads (its URL, the stand-in's root); the locustfile
feeds it Locust's request events and starts the drill at its step. It imports no Locust (a target may not): the
runner's role comes in as arguments.
"""

from __future__ import annotations

import collections
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gevent

from swarmgauge.core import option_kinds
from swarmgauge.core.durations import parse_duration
from swarmgauge.core.options import add_option
from swarmgauge.core.request_names import MDK_REQUEST_TYPE
from swarmgauge.errors import SwarmgaugeError
from swarmgauge.targets.mdk.drills import DrillResult, format_result, outage_device, run_drill, save_results
from swarmgauge.targets.mdk.stack import MDKStack

log = logging.getLogger(__name__)
DRILLS_NAME = "mdk_drills.json"
ARM_TIMEOUT_S = 60.0
NO_READERS_S = 2.0
READ_LOG_SIZE = 200_000
JOIN_TIMEOUT_S = 60.0


def add_options(parser: Any) -> None:
    """Declare the drill's options; the locustfile calls this from Locust's parser event (a target imports no
    Locust)."""
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


class FleetTarget:
    """What this run knows about the Gateway it loads: its URL, and the stand-in's root when there is one."""

    def __init__(self) -> None:
        self.url = ""
        self.root: Path | None = None
        self.drill: gevent.Greenlet | None = None
        self.drill_results: list[DrillResult] = []
        self.read_ok: set[str] = set()
        self.reads_seen = 0
        self.failed_reads: collections.deque[tuple[float, str]] = collections.deque(maxlen=READ_LOG_SIZE)
        #: tells this process's readers to leave a device to the drill's own timed reads (the locustfile's hook)
        self.set_aside: Callable[[str], None] | None = None

    def on_request(
        self, request_type: str, name: str, exception: Any = None, context: Any = None, **_kwargs: Any
    ) -> None:
        """Remember which devices the readers have read, and when and where their reads failed."""
        if request_type != MDK_REQUEST_TYPE or name != "telemetry":
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

    def start_drill(self, options: Any, counted: bool) -> None:
        """Spawn the ``--mdk-drill`` once; ``counted``: this process sees the readers' reads (not a master's)."""
        if self.drill is None:
            self.drill = gevent.spawn(self.run_drill, options, counted)

    def run_drill(self, options: Any, counted: bool) -> None:
        """The drill; with readers counted it waits (bounded) for one of their good reads of the victim first."""
        gevent.sleep(parse_duration(options.mdk_drill_after, "--mdk-drill-after"))
        if self.root is None:
            log.error("drill %s could not run: no stand-in root", options.mdk_drill)
            return
        try:
            stack = MDKStack.attach(self.root)
            victims = set(stack.device_ids(options.mdk_drill_worker if options.mdk_drill == "worker-restart" else None))
            aside = options.mdk_drill == "device-outage" and counted and self.set_aside is not None
            if aside and self.set_aside is not None:
                self.set_aside(outage_device(stack))
            started = time.monotonic()
            while counted and not (self.read_ok & victims) and time.monotonic() < started + ARM_TIMEOUT_S:
                if not self.reads_seen and time.monotonic() > started + NO_READERS_S:
                    break  # a run without readers (the burst): the drill's own read arms it
                gevent.sleep(0.1)
            if counted and self.reads_seen and not (self.read_ok & victims):
                log.warning(
                    "drill %s: no reader read the victim's devices within %.0f s", options.mdk_drill, ARM_TIMEOUT_S
                )
            result = run_drill(options.mdk_drill, stack, self.url, worker_id=options.mdk_drill_worker)
        except SwarmgaugeError as exc:
            log.error("drill %s could not run: %s", options.mdk_drill, exc)
            return
        if counted:
            self.count_failed_reads(result, victims)
        if options.mdk_drill == "device-outage":
            result.device_set_aside = aside
        self.drill_results.append(result)
        log.info("drill %s", format_result(result))

    def join_drill(self) -> None:
        """Wait (bounded) for a drill still running, so its row is written."""
        if self.drill is not None:
            self.drill.join(timeout=JOIN_TIMEOUT_S)

    def save_drills(self, directory: Path) -> None:
        """Append the drills' rows to ``mdk_drills.json`` (nothing when no drill ran)."""
        if self.drill_results:
            save_results(directory / DRILLS_NAME, self.drill_results)
