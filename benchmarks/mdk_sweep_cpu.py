"""The MDK stand-in's own CPU while its Workers sweep their devices: CPU seconds of the mocks and of the Workers per
device pull, and the cycle time, at a fleet with the demo's embedded settings (``cli/demo_mdk.py``). On 2 shared
cores the sweep's CPU is what the 5,000 / 5 burst competes with. Figures only; prints and writes the JSON.

    python -m benchmarks.mdk_sweep_cpu [--fleet 5000x5] [--seconds 20] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

import psutil

from swarmgauge.files import write_json
from swarmgauge.targets.mdk import rpc
from swarmgauge.targets.mdk.common import pid_path
from swarmgauge.targets.mdk.stack import MDKStack

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "mdk_sweep_cpu.json"
#: the demo's embedded settings of every fleet (cli/demo_mdk.py WORKER_READ, SWEEP), no ping in the window
SETTINGS = {"worker_read_us": 1040.0, "query_concurrency": 123, "health_phase_s": 600.0}


def cpu_seconds(stack: MDKStack) -> dict[str, float]:
    found = {}
    for component in stack.components:
        times = psutil.Process(int(pid_path(stack.root, component).read_text())).cpu_times()
        found[component] = times.user + times.system
    return found


def measure(devices: int, workers: int, seconds: float) -> dict[str, Any]:
    stack = MDKStack(devices=devices, workers=workers, **SETTINGS)
    stack.start()
    try:
        time.sleep(2.0)  # the first sweep begins with the Workers: measured in whole intervals from here
        before, cycles_before = cpu_seconds(stack), _cycles(stack)
        began = time.monotonic()
        time.sleep(seconds)
        took = time.monotonic() - began
        after, status = cpu_seconds(stack), rpc.call_blocking(stack.plan.host, stack.plan.kernel_port, "getStatus")
    finally:
        stack.stop()
    used = {k: after[k] - before[k] for k in after}
    cycles = {w["workerId"]: w["cycles"] - cycles_before.get(w["workerId"], 0) for w in status["workers"]}
    pulls = sum(cycles[w.id] * len(w.devices) for w in stack.plan.workers)
    mocks, worker_cpu = used["mocks"], sum(v for k, v in used.items() if k.startswith("worker"))
    return {
        "fleet": f"{devices}x{workers}",
        "seconds": took,
        "cpu_s": used,
        "pulls": pulls,
        "cycle_s": [w["cycle_s"] for w in status["workers"]],
        "mocks_ms_per_pull": 1000 * mocks / pulls if pulls else None,
        "workers_ms_per_pull": 1000 * worker_cpu / pulls if pulls else None,
        "sweep_cpu_percent": 100 * (mocks + worker_cpu) / took,
        "load_avg": os.getloadavg()[0],
    }


def _cycles(stack: MDKStack) -> dict[str, int]:
    status = rpc.call_blocking(stack.plan.host, stack.plan.kernel_port, "getStatus")
    return {w["workerId"]: w["cycles"] or 0 for w in status["workers"]}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mdk_sweep_cpu", description=__doc__.splitlines()[0])
    parser.add_argument("--fleet", default="5000x5", help="DEVICESxWORKERS")
    parser.add_argument("--seconds", type=float, default=20.0, help="the window measured (whole 10 s intervals)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    devices, workers = (int(part) for part in args.fleet.split("x"))
    row = measure(devices, workers, args.seconds)
    print(
        f"{row['fleet']}: {row['pulls']:,} device pulls in {row['seconds']:.1f} s, mocks "
        f"{row['mocks_ms_per_pull']:.3f} ms + Workers {row['workers_ms_per_pull']:.3f} ms of CPU a pull, the sweep "
        f"{row['sweep_cpu_percent']:.0f} % of a core on average, cycles {row['cycle_s']}, load {row['load_avg']:.1f}"
    )
    print(f"written {write_json(args.out, row)}")


if __name__ == "__main__":
    main()
