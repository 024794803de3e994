"""Seconds from starting an embedded target to its ready line(s), the old start against this tree's, alternating:
the Mark server alone, the MCP gateway in front of a Mark server (one after the other, or side by side with the
gateway told the server's URL), and MDK stand-in fleets (``--components spawn`` or ``fork``). Figures only; writes
the JSON.

    python -m benchmarks.target_boot [--repeats 3] [--fleets 10x1,1000x2,5000x5] [--base-python PY] [--out FILE]

``--base-python`` runs the old side with another interpreter (``/work/main/.venv/bin/python``: main's tree as it is,
slower ready polls included); by default the old side is this tree with the old mechanisms chosen.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from swarmgauge.files import write_json
from swarmgauge.targets.launch import child_env, launch_target
from swarmgauge.targets.mcp_gateway import launch_beside_mark

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "target_boot.json"
MARK_ARGS = ["--port", "0", "--seed-corpus", "300"]
PAUSE_S = 0.3  # the stopped target's processes out of the next start's way


class Child:
    """``python -m swarmgauge.cli target ...`` with another interpreter, its stdout read line by line."""

    def __init__(self, python: str, args: list[str]) -> None:
        self.process = subprocess.Popen(
            [python, "-m", "swarmgauge.cli", "target", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=child_env(),
            start_new_session=True,
            cwd=tempfile.gettempdir(),  # not this tree: ``-m`` puts the working directory first on sys.path
        )
        self.lines: dict[str, str] = {}

    def wait_for(self, *words: str) -> Child:
        stdout = self.process.stdout
        assert stdout is not None
        while not all(word in self.lines for word in words):
            raw = stdout.readline()
            if not raw:
                raise RuntimeError(f"{self.process.args} exited before {words}")
            word, _, rest = raw.decode().strip().partition(" ")
            self.lines.setdefault(word, rest.strip())
        return self

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(15)


def timed(start) -> float:
    """Seconds ``start()`` takes to return the processes it started, which are then stopped."""
    began = time.monotonic()
    started = start()
    took = time.monotonic() - began
    for process in reversed(started):
        process.stop()
    time.sleep(PAUSE_S)
    return took


def cases(base_python: str | None, fleets: list[tuple[int, int]]) -> dict[str, dict[str, Any]]:
    """name -> {"old": start, "new": start}; each start returns what it started, last to stop first."""

    def old_mark():
        if base_python:
            return [Child(base_python, ["mark", *MARK_ARGS]).wait_for("ready")]
        return [launch_target("mark", MARK_ARGS)]

    def old_gateway():
        if base_python:
            mark = Child(base_python, ["mark", *MARK_ARGS]).wait_for("ready")
            return [mark, Child(base_python, ["mcp", "--mark", mark.lines["ready"]]).wait_for("ready", "mark")]
        mark = launch_target("mark", MARK_ARGS)
        return [mark, launch_target("mcp", ["--mark", mark.url], wait_for=("ready", "mark"))]

    def mdk(devices: int, workers: int, new: bool):
        args = ["--devices", str(devices), "--workers", str(workers)]
        if new:
            return lambda: [launch_target("mdk", [*args, "--components", "fork"], wait_for=("ready", "root"))]
        if base_python:
            return lambda: [Child(base_python, ["mdk", *args]).wait_for("ready", "root")]
        return lambda: [launch_target("mdk", [*args, "--components", "spawn"], wait_for=("ready", "root"))]

    table: dict[str, dict[str, Any]] = {
        "mark": {"old": old_mark, "new": lambda: [launch_target("mark", MARK_ARGS)]},
        "mcp_gateway_and_mark": {"old": old_gateway, "new": lambda: list(launch_beside_mark(MARK_ARGS))},
    }
    for devices, workers in fleets:
        table[f"mdk_{devices}x{workers}"] = {"old": mdk(devices, workers, False), "new": mdk(devices, workers, True)}
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--fleets", default="10x1,1000x2,5000x5", help="DEVICESxWORKERS, comma separated")
    parser.add_argument("--base-python", default=None, help="the old side's interpreter (default: this one)")
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    args = parser.parse_args()
    fleets = [tuple(int(part) for part in fleet.split("x")) for fleet in args.fleets.split(",")]
    table = cases(args.base_python, fleets)  # type: ignore[arg-type]
    results: dict[str, Any] = {
        "python": sys.executable,
        "base_python": args.base_python or sys.executable,
        "repeats": args.repeats,
        "load_avg_before": round(os.getloadavg()[0], 2),
    }
    for name, starts in table.items():
        runs: dict[str, list[float]] = {"old": [], "new": []}
        for _ in range(args.repeats):
            for side in ("old", "new"):
                runs[side].append(round(timed(starts[side]), 3))
        medians = {side: statistics.median(values) for side, values in runs.items()}
        results[name] = {**runs, "median": medians}
        print(
            f"{name}: old {runs['old']} new {runs['new']} median old {medians['old']} new {medians['new']}", flush=True
        )
    results["load_avg_after"] = round(os.getloadavg()[0], 2)
    print(f"written {write_json(Path(args.out), results)}")


if __name__ == "__main__":
    main()
