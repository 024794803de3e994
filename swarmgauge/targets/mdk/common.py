"""The stand-in stack's on-disk layout and settings, shared by the launcher, every component and the drills.

``<root>/stack.json`` is the device plan (ports, Workers, device ids, knobs), written once by the launcher; each
component reads it at start, so a restarted process comes back with the same ports and device identities.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from swarmgauge.errors import SwarmgaugeError, UsageError

HOST = "127.0.0.1"
READY_MARK = "MDK_READY"


class StackError(SwarmgaugeError):
    """A stand-in component did not start, or its state on disk is unreadable."""


@dataclass
class WorkerPlan:
    id: str
    port: int
    mock_port: int
    devices: list[str]


@dataclass
class StackPlan:
    """Everything a component needs; the defaults are the MDK benchmark page's operating parameters."""

    gateway_port: int
    kernel_port: int
    workers: list[WorkerPlan]
    host: str = HOST
    read_cost_ms: tuple[float, float] = (220.0, 390.0)
    read_cost_scale: float = 1.0
    cache_s: float = 5.0
    collect_interval_s: float = 10.0
    query_concurrency: int = 100
    health_ping_s: float = 5.0
    health_phase_s: float | None = None  # first ping after this; None: a random part of one period
    health_timeout_s: float = 3.0
    device_timeout_s: float = 10.0
    rate_limit_per_min: int = 0
    rate_window_s: float = 60.0
    scan_s: float = 0.25
    # The Kernel's dispatch lane (kernel.py): 0.845 ms + 0.087 us a device a turn. A 3 s burst at 1,000 submits/s
    # waits 1,500 x (turn - 1 ms) at p50 once a turn passes 1 ms: 1.019 ms at 2,000 devices, ~30 ms (the page's
    # "tens of ms", low in the band: a loaded machine's clumps and slower execution only add), 1.28 ms at 5,000,
    # ~420 ms (its green 5,000 / 5 run: 423 ms); 0.93 ms at 1,000 keeps up.
    accept_base_us: float = 845.0
    accept_us_per_device: float = 0.087
    # per command in the Kernel: 0.1 coupled acceptance to execution (a burst after 200 readers on 10 devices queued its
    # commands behind their reads, thousands unsettled, and its lane saturated at 185 ms p50); 0.02 keeps the growth
    accept_us_per_inflight: float = 0.02
    worker_read_us: float = 0.0  # a Worker's own time per read it serves, one read at a time (its one core)
    gateway_read_us: float = 0.0  # the Gateway's own time per device read it serves, one at a time (its one process)
    restart_boot_s: float = 0.0  # a restarted Kernel or Worker waits this long before it starts (a Node.js boot)
    extra: dict = field(default_factory=dict)

    def worker(self, worker_id: str) -> WorkerPlan:
        for plan in self.workers:
            if plan.id == worker_id:
                return plan
        raise StackError(f"no worker {worker_id!r} in the plan")

    @property
    def device_count(self) -> int:
        return sum(len(w.devices) for w in self.workers)

    def save(self, root: Path) -> None:
        data = json.dumps(asdict(self), indent=1)
        tmp = root / "stack.json.tmp"
        tmp.write_text(data)
        os.replace(tmp, root / "stack.json")

    @classmethod
    def load(cls, root: Path) -> StackPlan:
        try:
            data = json.loads((Path(root) / "stack.json").read_text())
        except (OSError, ValueError) as exc:
            raise StackError(f"cannot read {root}/stack.json: {exc}") from exc
        data["workers"] = [WorkerPlan(**w) for w in data["workers"]]
        data["read_cost_ms"] = tuple(data["read_cost_ms"])
        return cls(**data)


class Lane:
    """One process's one-at-a-time service: each turn starts when the one before it ends. Turns are booked on the
    lane's own timeline and the caller sleeps once until its turn ends, so the stand-in's event-loop lag under load
    does not add to the modelled cost (a Node.js process on its one core, as the MDK page's)."""

    def __init__(self) -> None:
        self.free_at = 0.0

    async def turn(self, cost_s: float) -> None:
        """Wait for this caller's turn of ``cost_s`` to end (at once when the cost is 0)."""
        if cost_s <= 0:
            return
        now = asyncio.get_running_loop().time()
        self.free_at = max(now, self.free_at) + cost_s
        await asyncio.sleep(self.free_at - now)


def parse_cost(text: str) -> tuple[float, float]:
    """``"220-390"`` or ``"300"`` (ms) -> (low, high)."""
    try:
        low, _, high = text.partition("-")
        pair = (float(low), float(high or low))
    except ValueError as exc:
        raise UsageError(f"--read-cost-ms wants LOW-HIGH in ms, got {text!r}") from exc
    if pair[0] < 0 or pair[1] < pair[0]:
        raise UsageError(f"--read-cost-ms wants 0 <= LOW <= HIGH, got {text!r}")
    return pair


def pid_path(root: Path, component: str) -> Path:
    return Path(root) / "pids" / f"{component}.pid"


def log_path(root: Path, component: str) -> Path:
    return Path(root) / "logs" / f"{component}.log"


def announce_ready(root: Path, component: str, detail: str = "") -> None:
    """Write the pid file and print the ready line the launcher and drills wait for."""
    path = pid_path(root, component)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(str(os.getpid()))
    print(f"{READY_MARK} {component} pid={os.getpid()} {detail}".rstrip(), flush=True)
    sys.stdout.flush()


def process_cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system
