"""The 2dph brain page's before/after search latency on the stand-in: the reload-per-search leak against the fix.

Each mode gets a fresh stand-in (``targets/brain.py``) and ``--searches`` sequential searches (the page's stress
tool with ``--mix search:1 --c 1``); prints p50/p95 per mode beside the page's (1,429 ms before, 6.0 ms after),
the model loads the stand-in counted, its RSS growth, and writes the JSON. ``--scale 0.1`` divides both the load
and the search time by ten (the ratio is the page's). Figures only: nothing here asserts on time.

    python -m benchmarks.brain_reload [--searches 13] [--scale 1] [--leak-kb 8192] [--out FILE]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import psutil
import requests

from swarmgauge.files import write_json
from swarmgauge.targets.launch import launch_target

PAGE_P50_MS = {"before (leak)": 1429.0, "after (fixed)": 6.0}
PAGE_LOAD_MS, PAGE_SEARCH_MS = 1429.0, 6.0
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "brain_reload.json"


def measure(args: list[str], searches: int) -> dict:
    target = launch_target("brain", ["--port", "0", *args])
    try:
        rss_before = psutil.Process(target.pid).memory_info().rss
        latencies = []
        for _ in range(searches):
            started = time.perf_counter()
            requests.get(target.url + "/search", params={"q": "heap memory"}, timeout=60).raise_for_status()
            latencies.append((time.perf_counter() - started) * 1000)
        stats = requests.get(target.url + "/stats", timeout=10).json()
        rss_growth = psutil.Process(target.pid).memory_info().rss - rss_before
    finally:
        target.stop()
    ordered = sorted(latencies)
    return {
        "searches": searches,
        "p50_ms": statistics.median(latencies),
        "p95_ms": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
        "model_loads": stats["model_loads"],
        "rss_growth_mib": rss_growth / 2**20,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.brain_reload", description=__doc__.splitlines()[0])
    parser.add_argument("--searches", type=int, default=13, help="sequential searches per mode (page: 13 before)")
    parser.add_argument("--scale", type=float, default=1.0, help="factor on the page's load and search times")
    parser.add_argument("--leak-kb", type=int, default=8192, help="matrix retained per leaking search")
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    args = parser.parse_args(argv)
    load_ms, search_ms = PAGE_LOAD_MS * args.scale, PAGE_SEARCH_MS * args.scale
    common = ["--model-load-ms", f"{load_ms:g}", "--search-ms", f"{search_ms:g}"]
    modes = {"before (leak)": [*common, "--leak-per-search", str(args.leak_kb)], "after (fixed)": common}
    rows = {}
    print(f"| mode | searches | p50 | p95 | page p50 x {args.scale:g} | model loads | RSS growth |")
    print("|---|---|---|---|---|---|---|")
    for mode, extra in modes.items():
        row = measure(extra, max(1, args.searches))
        row["page_p50_scaled_ms"] = PAGE_P50_MS[mode] * args.scale
        rows[mode] = row
        print(
            f"| {mode} | {row['searches']} | {row['p50_ms']:.1f} ms | {row['p95_ms']:.1f} ms | "
            f"{row['page_p50_scaled_ms']:.1f} ms | {row['model_loads']} | {row['rss_growth_mib']:.0f} MiB |"
        )
    doc = {"settings": vars(args), "model_load_ms": load_ms, "search_ms": search_ms, "rows": rows}
    print(f"written {write_json(Path(args.out), doc)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
