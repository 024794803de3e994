"""The MDK stand-in's start, its components one after the other against side by side (``MDKStack.start_stages``),
alternating, at a few fleets: seconds from ``start()`` to every Worker READY, with the load average. Figures only;
writes the JSON.

    python -m benchmarks.mdk_stack_start [--fleets 10x1,2000x4,5000x5] [--repeats 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

from swarmgauge.files import write_json
from swarmgauge.targets.mdk.stack import MDKStack

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "mdk_stack_start.json"


class OneAfterTheOther(MDKStack):
    """The stand-in as it started before: each component waited for before the next one is spawned."""

    @property
    def start_stages(self) -> list[list[str]]:
        return [[component] for component in self.components]


def start_seconds(kind: type[MDKStack], devices: int, workers: int) -> float:
    stack = kind(devices=devices, workers=workers)
    began = time.monotonic()
    stack.start()
    took = time.monotonic() - began
    stack.stop()
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fleets", default="10x1,2000x4,5000x5", help="DEVICESxWORKERS, comma separated")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    args = parser.parse_args()
    results: dict[str, Any] = {}
    for fleet in args.fleets.split(","):
        devices, workers = (int(part) for part in fleet.split("x"))
        runs: dict[str, list[float]] = {"one_after_the_other": [], "side_by_side": []}
        for _ in range(args.repeats):
            for name, kind in (("one_after_the_other", OneAfterTheOther), ("side_by_side", MDKStack)):
                runs[name].append(round(start_seconds(kind, devices, workers), 2))
                time.sleep(0.3)  # the stopped stack's processes out of the next start's way
        medians = {name: statistics.median(values) for name, values in runs.items()}
        results[fleet] = {**runs, "median": medians, "load_avg": round(os.getloadavg()[0], 1)}
        print(f"{fleet}: {results[fleet]}", flush=True)
    print(f"written {write_json(Path(args.out), results)}")


if __name__ == "__main__":
    main()
