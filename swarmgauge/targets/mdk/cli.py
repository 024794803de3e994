"""``swarmgauge target mdk``: start the MDK stand-in (mocks, Kernel, Workers, Gateway) and keep it up until killed.

Prints ``ready URL`` (the Gateway) and ``root DIR`` (pids, logs and the device plan, which ``swarmgauge drill``
needs) once every Worker is READY with all its devices. The defaults are the MDK benchmark page's operating
parameters; the knobs exist so tests and small profiles can run in seconds.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from swarmgauge.errors import SwarmgaugeError, UsageError
from swarmgauge.targets.mdk.common import parse_cost
from swarmgauge.targets.mdk.stack import MDKStack

MAX_DEVICES = 20_000


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="swarmgauge target mdk", description="A stand-in for the Tether MDK Gateway, Kernel, Workers and devices."
    )
    parser.add_argument("--devices", type=int, default=20, help="devices in the fleet (default 20)")
    parser.add_argument("--workers", type=int, default=1, help="Worker processes the devices are split over")
    parser.add_argument("--port", type=int, default=0, help="Gateway port (0: a free one)")
    parser.add_argument("--root", type=Path, default=None, help="state directory (default: a temp dir)")
    parser.add_argument("--read-cost-ms", default="220-390", help="live snap read cost LOW-HIGH ms (default 220-390)")
    parser.add_argument("--read-cost-scale", type=float, default=1.0, help="multiply the read cost (default 1)")
    parser.add_argument("--cache-s", type=float, default=5.0, help="device-data cache of the non-snap channels")
    parser.add_argument("--collect-interval-s", type=float, default=10.0, help="Worker collection interval")
    parser.add_argument("--query-concurrency", type=int, default=100, help="reads in flight per collection cycle")
    parser.add_argument("--health-ping-s", type=float, default=5.0, help="Kernel health ping interval")
    parser.add_argument(
        "--health-phase-s",
        type=float,
        default=None,
        help="Kernel's first health ping after this (default: a random part of one interval, as a Kernel started "
        "at no particular moment)",
    )
    parser.add_argument("--health-timeout-s", type=float, default=3.0, help="health ping timeout (a miss: SICK)")
    parser.add_argument("--device-timeout-s", type=float, default=10.0, help="per-device call timeout")
    parser.add_argument(
        "--rate-limit",
        type=int,
        default=0,
        help="per-IP requests per --rate-window-s before 429 (0: off, as the harness; MDK: 300)",
    )
    parser.add_argument("--rate-window-s", type=float, default=60.0, help="rate-limit window (default 60 s)")
    parser.add_argument(
        "--accept-base-us",
        type=float,
        default=845.0,
        help="Kernel dispatch lane time of every turn, a command or a ping (default 845 us)",
    )
    parser.add_argument(
        "--accept-us-per-device",
        type=float,
        default=0.087,
        help="Kernel dispatch lane time per fleet device, per turn (default 0.087 us)",
    )
    parser.add_argument(
        "--accept-us-per-inflight",
        type=float,
        default=0.02,
        help="Kernel dispatch lane time per command in the Kernel, per turn (default 0.02 us)",
    )
    parser.add_argument(
        "--worker-read-us",
        type=float,
        default=0.0,
        help="a Worker's own time per read it serves, one at a time as on its one core: it serves at most 1e6 / "
        "this reads/s (default 0: no limit)",
    )
    parser.add_argument(
        "--gateway-read-us",
        type=float,
        default=0.0,
        help="the Gateway's own time per device read it serves, one at a time as in its one process: with any number "
        "of Workers it serves at most 1e6 / this reads/s (default 0: no limit)",
    )
    parser.add_argument(
        "--restart-boot-s",
        type=float,
        default=0.0,
        help="a Kernel or Worker restarted by a drill waits this long before it starts, as a Node.js process boots "
        "(default 0)",
    )
    parser.add_argument(
        "--components",
        choices=("fork", "spawn"),
        default="fork",
        help="fork: the components forked from this process once it imported them (default; up in milliseconds); "
        "spawn: a fresh interpreter each, as a drill's restart",
    )
    return parser


def stack_from_args(args: argparse.Namespace) -> MDKStack:
    """The stack the options describe; a bad value is a UsageError naming the option."""
    if not 1 <= args.devices <= MAX_DEVICES:
        raise UsageError(f"--devices must be 1..{MAX_DEVICES}, got {args.devices}")
    if not 1 <= args.workers <= args.devices:
        raise UsageError(f"--workers must be 1..--devices, got {args.workers}")
    positive = {
        "--collect-interval-s": args.collect_interval_s,
        "--health-ping-s": args.health_ping_s,
        "--health-timeout-s": args.health_timeout_s,
        "--device-timeout-s": args.device_timeout_s,
        "--rate-window-s": args.rate_window_s,
        "--read-cost-scale": args.read_cost_scale + 1e-12,
    }
    for flag, value in positive.items():
        if value <= 0:
            raise UsageError(f"{flag} must be positive, got {value}")
    if min(args.accept_base_us, args.accept_us_per_device, args.accept_us_per_inflight) < 0:
        raise UsageError("--accept-base-us, --accept-us-per-device and --accept-us-per-inflight must be >= 0")
    at_least_zero = {
        "--restart-boot-s": args.restart_boot_s,
        "--worker-read-us": args.worker_read_us,
        "--gateway-read-us": args.gateway_read_us,
    }
    for flag, value in at_least_zero.items():
        if value < 0:
            raise UsageError(f"{flag} must be >= 0, got {value:g}")
    if args.health_phase_s is not None and args.health_phase_s < 0:
        raise UsageError(f"--health-phase-s must be >= 0, got {args.health_phase_s}")
    if args.cache_s < 0 or args.rate_limit < 0 or args.query_concurrency < 1 or not 0 <= args.port < 65536:
        raise UsageError("--cache-s and --rate-limit must be >= 0, --query-concurrency >= 1, --port 0..65535")
    return MDKStack(
        root=args.root,
        devices=args.devices,
        workers=args.workers,
        gateway_port=args.port,
        read_cost_ms=parse_cost(args.read_cost_ms),
        read_cost_scale=args.read_cost_scale,
        cache_s=args.cache_s,
        collect_interval_s=args.collect_interval_s,
        query_concurrency=args.query_concurrency,
        health_ping_s=args.health_ping_s,
        health_phase_s=args.health_phase_s,
        health_timeout_s=args.health_timeout_s,
        device_timeout_s=args.device_timeout_s,
        rate_limit_per_min=args.rate_limit,
        rate_window_s=args.rate_window_s,
        accept_base_us=args.accept_base_us,
        accept_us_per_device=args.accept_us_per_device,
        accept_us_per_inflight=args.accept_us_per_inflight,
        restart_boot_s=args.restart_boot_s,
        worker_read_us=args.worker_read_us,
        gateway_read_us=args.gateway_read_us,
        fork=args.components == "fork",
    )


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        stack = stack_from_args(args)
    except UsageError as exc:
        print(f"swarmgauge target mdk: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        stack.start()
    except SwarmgaugeError as exc:
        lines = [line for line in str(exc).splitlines() if line.strip()]
        print(f"swarmgauge target mdk: {lines[0]}{' - ' + lines[-1] if len(lines) > 1 else ''}", file=sys.stderr)
        return 1
    try:
        print(f"root {stack.root}", flush=True)
        print(f"devices {stack.plan.device_count} workers {len(stack.plan.workers)}", flush=True)
        print(f"ready {stack.url}", flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        stack.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
