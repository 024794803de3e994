"""The MDK benchmark's failure drills against the stand-in: kill a component by its pid while load runs, restart it
where the drill says so, and time what a user of the fleet sees, every time counted from the kill.

``worker-restart`` and ``kernel-restart`` report two separate events, as the MDK page advises: READY (the Kernel
shows the Worker routable with all its devices; for the Kernel, ``getStatus`` answers) and the first successful
device read through the Gateway. ``device-outage`` stops the mocks process (every device refuses at once) and times
the first failed live ``snap`` read, the moment the cached channels fail too, and, after the mocks come back, the
first good read again: one read of one device, as the page's drill timed one telemetry call after its load had
finished (a run with readers leaves that device to the drill, ``outage_device``). No drill kills before a read of the victim's devices has succeeded (``armed_s``: how long that
took), so a drill started while the fleet is still being discovered still hits readers that were reading; a run
that counts its readers' failed reads during the drill adds them (``failed_reads``). Results are JSON rows appended
to ``mdk_drills.json`` in the run directory.

    swarmgauge drill worker-restart --root DIR [--worker worker-0] [--run-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from swarmgauge.errors import SwarmgaugeError, UsageError
from swarmgauge.targets.mdk import rpc
from swarmgauge.targets.mdk.common import StackError
from swarmgauge.targets.mdk.stack import MDKStack

DRILLS = ("worker-restart", "kernel-restart", "device-outage")
RESULT_NAME = "mdk_drills.json"
POLL_S = 0.05
READ_TIMEOUT_S = 3.0
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_OUTAGE_S = 2.0


class DrillError(SwarmgaugeError):
    """A drill could not run (no such component, no device to read, the stack is not reachable)."""


@dataclass
class DrillResult:
    """One drill; every ``*_s`` counts seconds from the kill and is None when it did not happen in time."""

    drill: str
    component: str
    device_id: str
    killed_at: float
    recovered: bool = False
    ready_s: float | None = None
    first_read_s: float | None = None
    snap_failed_s: float | None = None
    cached_failed_s: float | None = None
    restored_s: float | None = None
    restored_read_s: float | None = None
    armed_s: float | None = None
    failed_reads: int | None = None
    #: the drill's own telemetry reads through the Gateway (arming, timing): requests the run's figures do not hold
    probe_reads: int = 0
    victim_failed_reads: int | None = None
    device_set_aside: bool | None = None
    #: the restarted component's modelled boot (``--restart-boot-s``): READY and the first read are set by it
    boot_s: float | None = None
    ended_at: float | None = None
    note: str = ""

    @property
    def read_after_ready_s(self) -> float | None:
        if self.ready_s is None or self.first_read_s is None:
            return None
        return self.first_read_s - self.ready_s

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "read_after_ready_s": self.read_after_ready_s}


class _ProbeCount:
    """The drills' reads through the Gateway so far (a drill's ``probe_reads`` is its difference), under a lock: a
    restart drill reads while a thread waits for READY."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reads = 0

    def add(self) -> None:
        with self.lock:
            self.reads += 1


PROBES = _ProbeCount()


def read_state(url: str, device_id: str, timeout: float = READ_TIMEOUT_S) -> str:
    """One telemetry read, classified: ``ok``, ``snap_failed`` (live channel down, cached ones still answer),
    ``cached_failed`` (every channel carries an error), ``null`` (no metrics) or ``error`` (non-200 / no answer).
    Counted in :data:`PROBES`: the Gateway sees it, no run's figure holds it."""
    PROBES.add()
    try:
        with urllib.request.urlopen(f"{url}/api/fleet/device/{device_id}/telemetry", timeout=timeout) as response:
            body = json.loads(response.read())
    except (urllib.error.URLError, OSError, ValueError):
        return "error"
    metrics = body.get("metrics") if isinstance(body, dict) else None
    if not isinstance(metrics, dict):
        return "null"
    raw_snap = metrics.get("snap")
    snap = raw_snap if isinstance(raw_snap, dict) else {}
    cached = {k: v for k, v in metrics.items() if k != "snap"}
    cached_bad = [isinstance(v, dict) and "error" in v for v in cached.values()]
    if cached_bad and all(cached_bad):
        return "cached_failed"
    if snap.get("success") is not True or any(cached_bad):
        return "snap_failed"
    return "ok"


def _poll_until(condition: Callable[[], bool], since: float, deadline: float) -> float | None:
    """Seconds from ``since`` (a monotonic time) until ``condition()`` holds, or None at ``deadline``."""
    while time.monotonic() < deadline:
        if condition():
            return time.monotonic() - since
        time.sleep(POLL_S)
    return None


def _in_background(fn: Callable[[], float | None]) -> Callable[[], float | None]:
    """Run ``fn`` in a thread (a greenlet under gevent) and return a join that gives its value."""
    box: list[float | None] = [None]
    thread = threading.Thread(target=lambda: box.__setitem__(0, fn()), daemon=True)
    thread.start()

    def join() -> float | None:
        thread.join()
        return box[0]

    return join


def _worker_ready(stack: MDKStack, worker_id: str, devices: int, old_pid: int | None) -> bool:
    """The Kernel shows the restarted Worker (not the killed one it may not have noticed yet) routable."""
    try:
        status = stack.kernel_status(timeout_s=0.5)
    except (rpc.RpcError, ValueError):
        return False
    return any(
        w["workerId"] == worker_id and w["routable"] and w["devices"] == devices and w["pid"] != old_pid
        for w in status["workers"]
    )


def _kernel_answers(stack: MDKStack, old_pid: int | None) -> bool:
    try:
        return stack.kernel_status(timeout_s=0.5)["kernel"]["pid"] != old_pid
    except (rpc.RpcError, ValueError, KeyError):
        return False


def await_read(url: str, device_ids: list[str], timeout_s: float, what: str) -> float:
    """Seconds until a read of one of ``device_ids`` succeeds; ``DrillError`` (and no kill) when none does."""
    started = time.monotonic()
    deadline = started + timeout_s
    for attempt in range(1_000_000):
        if read_state(url, device_ids[attempt % len(device_ids)]) == "ok":
            return time.monotonic() - started
        if time.monotonic() >= deadline:
            break
        time.sleep(POLL_S)
    raise DrillError(f"no read of {what} succeeded within {timeout_s:g} s, so the drill did not kill it")


def _restart_drill(
    stack: MDKStack,
    url: str,
    drill: str,
    component: str,
    device_id: str,
    ready: Callable[[], bool],
    timeout_s: float,
    armed_s: float,
) -> DrillResult:
    killed = stack.kill(component)
    result = DrillResult(
        drill, component, device_id, killed_at=time.time(), armed_s=armed_s, boot_s=stack.plan.restart_boot_s
    )
    deadline = killed + timeout_s
    try:
        stack.spawn(component, boot_s=stack.plan.restart_boot_s)
    except OSError as exc:
        result.note = f"restart failed: {exc}"
        return result
    wait_ready = _in_background(lambda: _poll_until(ready, killed, deadline))
    first_read = _poll_until(lambda: read_state(url, device_id) == "ok", killed, deadline)
    result.ready_s, result.first_read_s = wait_ready(), first_read
    result.recovered = result.ready_s is not None and result.first_read_s is not None
    if not result.recovered:
        result.note = f"not recovered within {timeout_s:g} s"
    result.ended_at = time.time()
    return result


def worker_restart(
    stack: MDKStack, url: str, worker_id: str = "worker-0", timeout_s: float = DEFAULT_TIMEOUT_S, **_: Any
) -> DrillResult:
    devices = stack.device_ids(worker_id)
    if not devices:
        raise DrillError(f"no devices on {worker_id!r} (Workers: {', '.join(w.id for w in stack.plan.workers)})")
    armed = await_read(url, devices, timeout_s, f"{worker_id}'s devices")
    old_pid = stack.pid(worker_id)
    return _restart_drill(
        stack,
        url,
        "worker-restart",
        worker_id,
        devices[0],
        lambda: _worker_ready(stack, worker_id, len(devices), old_pid),
        timeout_s,
        armed,
    )


def kernel_restart(stack: MDKStack, url: str, timeout_s: float = DEFAULT_TIMEOUT_S, **_: Any) -> DrillResult:
    armed = await_read(url, stack.device_ids(), timeout_s, "a device")
    old_pid = stack.pid("kernel")
    return _restart_drill(
        stack,
        url,
        "kernel-restart",
        "kernel",
        stack.device_ids()[0],
        lambda: _kernel_answers(stack, old_pid),
        timeout_s,
        armed,
    )


def outage_device(stack: MDKStack) -> str:
    """The device the outage drill times its reads on (a run with readers sets it aside for the drill)."""
    return stack.device_ids()[0]


def device_outage(
    stack: MDKStack, url: str, outage_s: float = DEFAULT_OUTAGE_S, timeout_s: float = DEFAULT_TIMEOUT_S, **_: Any
) -> DrillResult:
    """Stop every device (the mocks process), hold the outage, bring them back; reads are polled throughout."""
    device_id = outage_device(stack)
    armed = await_read(url, [device_id], timeout_s, "a device")
    killed = stack.kill("mocks")
    result = DrillResult("device-outage", "mocks", device_id, killed_at=time.time(), armed_s=armed)
    deadline = killed + timeout_s
    states: list[str] = []

    def seen(state: str) -> bool:
        states.append(read_state(url, device_id))
        return states[-1] in state.split("|")

    result.snap_failed_s = _poll_until(lambda: seen("snap_failed|cached_failed"), killed, deadline)
    if states and states[-1] == "cached_failed":
        result.cached_failed_s = result.snap_failed_s
    else:
        result.cached_failed_s = _poll_until(lambda: seen("cached_failed"), killed, deadline)
    hold = killed + outage_s - time.monotonic()
    if hold > 0:
        time.sleep(hold)
    offset = stack.spawn("mocks")
    try:
        stack.wait_ready("mocks", offset, max(1.0, deadline - time.monotonic()))
        result.restored_s = time.monotonic() - killed
    except StackError as exc:
        result.note = str(exc).splitlines()[0]
        return result
    result.restored_read_s = _poll_until(lambda: read_state(url, device_id) == "ok", killed, deadline)
    result.recovered = None not in (result.snap_failed_s, result.cached_failed_s, result.restored_read_s)
    if not result.recovered:
        result.note = f"not every event within {timeout_s:g} s"
    result.ended_at = time.time()
    return result


RUNNERS: dict[str, Callable[..., DrillResult]] = {
    "worker-restart": worker_restart,
    "kernel-restart": kernel_restart,
    "device-outage": device_outage,
}


def run_drill(name: str, stack: MDKStack, url: str | None = None, **kwargs: Any) -> DrillResult:
    if name not in RUNNERS:
        raise UsageError(f"unknown drill {name!r}; choose one of {', '.join(DRILLS)}")
    if name != "worker-restart":
        kwargs.pop("worker_id", None)
    before = PROBES.reads
    result = RUNNERS[name](stack, url or stack.url, **kwargs)
    result.probe_reads = PROBES.reads - before
    return result


def save_results(path: Path, results: list[DrillResult]) -> None:
    """Append rows to ``mdk_drills.json`` (written through a temp file, so a reader never sees half of it)."""
    path = Path(path)
    rows: list[dict] = []
    if path.is_file():
        try:
            rows = json.loads(path.read_text())["drills"]
        except (ValueError, KeyError, TypeError):
            rows = []
    rows += [r.as_dict() for r in results]
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=str(path.parent))
    with os.fdopen(fd, "w") as handle:
        json.dump({"drills": rows}, handle, indent=1)
    os.replace(tmp, path)


def format_result(result: DrillResult) -> str:
    def s(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f} s"

    failed = (
        ""
        if result.failed_reads is None
        else (f", {result.failed_reads} failed reader reads ({result.victim_failed_reads} of the victim's devices)")
    )
    note = f"; {result.note}" if result.note else ""
    if result.drill == "device-outage":
        return (
            f"{result.drill}: snap failed after {s(result.snap_failed_s)}, cached channels after "
            f"{s(result.cached_failed_s)}, devices back after {s(result.restored_s)}, reads again after "
            f"{s(result.restored_read_s)} (from the kill){failed}{note}"
        )
    return (
        f"{result.drill} ({result.component}): READY after {s(result.ready_s)}, first successful read after "
        f"{s(result.first_read_s)} (from the kill){failed}{note}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="swarmgauge drill", description="An MDK failure drill on the stand-in.")
    parser.add_argument("name", choices=DRILLS)
    parser.add_argument("--root", required=True, type=Path, help="the stand-in's root ('root DIR' of target mdk)")
    parser.add_argument("--url", default=None, help="Gateway base URL (default: the stand-in's)")
    parser.add_argument("--worker", default="worker-0", help="worker-restart: which Worker")
    parser.add_argument("--outage-s", type=float, default=DEFAULT_OUTAGE_S, help="device-outage: how long")
    parser.add_argument("--timeout-s", type=float, default=DEFAULT_TIMEOUT_S, help="give up after this")
    parser.add_argument("--run-dir", type=Path, default=None, help="append the result to DIR/mdk_drills.json")
    args = parser.parse_args(argv)
    try:
        if not (args.root / "stack.json").is_file():
            raise UsageError(f"--root {args.root}: no stack.json (start it with 'swarmgauge target mdk')")
        if args.timeout_s <= 0 or args.outage_s < 0:
            raise UsageError("--timeout-s must be positive and --outage-s not negative")
        stack = MDKStack.attach(args.root)
        result = run_drill(
            args.name, stack, args.url, worker_id=args.worker, outage_s=args.outage_s, timeout_s=args.timeout_s
        )
    except UsageError as exc:
        print(f"swarmgauge drill: {exc}", file=sys.stderr)
        return 2
    except SwarmgaugeError as exc:
        print(f"swarmgauge drill: {exc}", file=sys.stderr)
        return 1
    print(format_result(result), flush=True)
    print(json.dumps(result.as_dict()), flush=True)
    if args.run_dir is not None:
        save_results(args.run_dir / RESULT_NAME, [result])
    return 0 if result.recovered else 1


if __name__ == "__main__":
    sys.exit(main())
