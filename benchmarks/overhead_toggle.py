"""What one part of swarmgauge costs a FastHttpUser GET where it runs: switched off and on within one process.

``python -m benchmarks.overhead_toggle [--toggles noop steps] [--pairs 50] [--half 0.3] [--warmup 8]
[--out benchmarks/results/overhead_toggle.json]``

Each toggle is one ``locust --headless`` process (``benchmarks/overhead_toggle_locustfile.py``, 16 users, pinned as
``benchmarks.overhead`` pins: generator CPU 1, nginx CPU 0) whose probe alternates windows with the part on and off
in random order within each pair. The figures: the on/off ratio of the CPU per request summed over all windows, the
median and mean of the pairs' ratios with the mean's standard error, and the load average. ``noop`` switches nothing:
its ratio is the method's own bias. Figures only: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.overhead import GENERATOR_CPU, ROOT, pin_nginx, pinned
from benchmarks.scaling import Nginx, NginxUnavailable
from swarmgauge.files import write_json

DEFAULT_OUT = ROOT / "benchmarks" / "results" / "overhead_toggle.json"
LOCUSTFILE = ROOT / "benchmarks" / "overhead_toggle_locustfile.py"


def run_toggle(toggle: str, url: str, opts: argparse.Namespace) -> dict[str, Any]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "SG_TOGGLE": toggle,
        "SG_TOGGLE_WARMUP": str(opts.warmup),
        "SG_TOGGLE_HALF": str(opts.half),
        "SG_TOGGLE_PAIRS": str(opts.pairs),
    }
    limit = opts.warmup + 2 * opts.pairs * opts.half + 30
    command = pinned(GENERATOR_CPU) + [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless"]
    command += ["--only-summary", "-u", "16", "-r", "16", "-t", f"{int(limit)}s", "--host", url, "--stop-timeout", "1"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=limit + 60)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if not lines:
        raise RuntimeError(f"toggle {toggle} reported nothing (exit {done.returncode}): {done.stderr.strip()[-1500:]}")
    windows = json.loads(lines[-1][len("RESULT ") :])["windows"]
    return {"toggle": toggle, "load_average": round(os.getloadavg()[0], 2), **summarize(windows), "windows": windows}


def summarize(windows: list[dict[str, Any]]) -> dict[str, Any]:
    """The on/off ratios of a run's windows (in pairs, as they ran)."""

    def per_request(on: bool) -> float:
        chosen = [w for w in windows if w["on"] is on]
        cpu = sum(w["cpu_us_per_request"] * w["requests"] for w in chosen)
        return cpu / max(1, sum(w["requests"] for w in chosen))

    pairs = [windows[i : i + 2] for i in range(0, len(windows) - 1, 2)]
    ratios = [
        next(w for w in pair if w["on"])["cpu_us_per_request"]
        / next(w for w in pair if not w["on"])["cpu_us_per_request"]
        for pair in pairs
    ]
    on_us, off_us = per_request(True), per_request(False)
    return {
        "on_us": round(on_us, 2),
        "off_us": round(off_us, 2),
        "ratio": round(on_us / off_us, 4),
        "pair_median": round(statistics.median(ratios), 4),
        "pair_mean": round(statistics.fmean(ratios), 4),
        "pair_mean_se": round(statistics.stdev(ratios) / len(ratios) ** 0.5, 4) if len(ratios) > 1 else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.overhead_toggle", description=__doc__.splitlines()[0])
    parser.add_argument("--toggles", nargs="+", default=["noop", "steps"], choices=["noop", "steps"])
    parser.add_argument("--pairs", type=int, default=50, help="pairs of windows per toggle (default 50)")
    parser.add_argument("--half", type=float, default=0.3, help="seconds of one window (default 0.3)")
    parser.add_argument("--warmup", type=float, default=8.0, help="seconds before the first window (default 8)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    opts = parser.parse_args(argv)
    try:
        nginx = Nginx(workers=1)
    except NginxUnavailable as exc:
        print(f"benchmarks.overhead_toggle: {exc}", file=sys.stderr)
        return 1
    try:
        pin_nginx(nginx)
        results = [run_toggle(toggle, nginx.url, opts) for toggle in opts.toggles]
    finally:
        nginx.stop()
    doc = {
        "benchmark": "overhead_toggle",
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "settings": {"pairs": opts.pairs, "half_s": opts.half, "warmup_s": opts.warmup, "users": 16, "pinned": True},
        "load_average": [round(value, 2) for value in os.getloadavg()],
        "toggles": results,
    }
    for r in results:
        print(
            f"{r['toggle']}: on {r['on_us']:.1f} µs, off {r['off_us']:.1f} µs CPU/request: ratio {r['ratio']:.4f}; "
            f"pairs median {r['pair_median']:.4f}, mean {r['pair_mean']:.4f} ± {r['pair_mean_se']} (load {r['load_average']})"
        )
    print(f"written to {write_json(opts.out, doc)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
