"""Where an MDK fleet's start-up goes: the stand-in's processes to every Worker READY, then the fleet discovery a run
does before its load (one summary that reads every device, as the page's harness checks every device answers), then
a second summary for comparison (warm device-data caches), with each component's CPU over the first summary and the
load average. The demo's fleet settings (``--worker-read-us 1040``, ``--query-concurrency 123``). Figures only;
writes the JSON.

    python -m benchmarks.mdk_startup_parts [--fleets 5000x1,5000x5,2000x1,50x1] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil

from swarmgauge.files import write_json
from swarmgauge.targets.mdk.stack import MDKStack

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "mdk_startup_parts.json"
SUMMARY_TIMEOUT_S = 60


def _summary_s(url: str) -> tuple[float, int]:
    began = time.monotonic()
    with urllib.request.urlopen(f"{url}/api/fleet/summary", timeout=SUMMARY_TIMEOUT_S) as response:
        body = json.loads(response.read())
    return time.monotonic() - began, int(body["deviceCount"])


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def measure(devices: int, workers: int) -> dict[str, Any]:
    stack = MDKStack(devices=devices, workers=workers, worker_read_us=1040, query_concurrency=123)
    began = time.monotonic()
    stack.start()
    try:
        started_s = time.monotonic() - began
        processes = {c: psutil.Process(pid) for c in stack.components if (pid := stack.pid(c)) is not None}
        before = {c: _cpu(p) for c, p in processes.items()}
        first_s, answered = _summary_s(stack.url)
        cpu = {c: round(_cpu(p) - before[c], 2) for c, p in processes.items()}
        second_s, _ = _summary_s(stack.url)
    finally:
        stack.stop()
    return {
        "stack_start_s": round(started_s, 2),
        "first_summary_s": round(first_s, 2),
        "devices_answered": answered,
        "second_summary_s": round(second_s, 2),
        "cpu_s_over_first_summary": cpu,
        "load_avg": round(os.getloadavg()[0], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fleets", default="5000x1,5000x5,2000x1,50x1", help="DEVICESxWORKERS, comma separated")
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    args = parser.parse_args()
    results: dict[str, Any] = {}
    for fleet in args.fleets.split(","):
        devices, workers = (int(part) for part in fleet.split("x"))
        results[fleet] = measure(devices, workers)
        print(f"{fleet}: {results[fleet]}", flush=True)
        time.sleep(0.3)  # the stopped stack's processes out of the next start's way
    print(f"written {write_json(Path(args.out), results)}")


if __name__ == "__main__":
    main()
