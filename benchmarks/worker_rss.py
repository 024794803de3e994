"""Resident memory a worker process pays for ``import swarmgauge.locust``, beside plain Locust, in one run.

    python -m benchmarks.worker_rss [--rounds 7] [--out benchmarks/results/worker_rss.json]

Each case is a fresh Python process (this venv's) that imports what a Locust worker imports, then reports its own
RSS and USS (psutil, after the imports) and which of pandas, numpy and matplotlib it loaded. The cases run
interleaved round by round, in a rotated order, so drift hits every column alike; medians over the rounds:

- ``locust``: ``import locust`` (the anchor: a plain Locust worker);
- ``swarmgauge.locust``: the same plus ``import swarmgauge.locust`` (the figure: at most 10 MiB more than ``locust``);
- ``+ api + http_ramp``: plus ``swarmgauge.api`` and the bundled ``locustfiles/http_ramp.py`` loaded as Locust does;
- ``+ api + demarkus_reads``: the same with the bundled Mark (QUIC) locustfile, which loads the QUIC engine;
- ``+ reports.report``: ``swarmgauge.locust`` plus the report module, i.e. what every worker imported before the
  report was made lazy (pandas, numpy, matplotlib): the cost the lazy import saves.

Figures only: nothing here asserts on memory.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from swarmgauge.files import write_json

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "worker_rss.json"
TARGET_MIB = 10.0
MIB = 1024 * 1024
HEAVY = ("pandas", "numpy", "matplotlib")
CHILD_SECONDS = 120

LOAD_LOCUSTFILE = "from locust.util.load_locustfile import load_locustfile\nload_locustfile({path!r})\n"
CASES: dict[str, str] = {
    "locust": "import locust\n",
    "swarmgauge.locust": "import locust\nimport swarmgauge.locust\n",
    "+ api + http_ramp": "import locust\nimport swarmgauge.locust\nimport swarmgauge.api\n"
    + LOAD_LOCUSTFILE.format(path="locustfiles/http_ramp.py"),
    "+ api + demarkus_reads": "import locust\nimport swarmgauge.locust\nimport swarmgauge.api\n"
    + LOAD_LOCUSTFILE.format(path="locustfiles/demarkus_reads.py"),
    "+ reports.report": "import locust\nimport swarmgauge.locust\nimport swarmgauge.reports.report\n",
}
ANCHOR = "locust"
FIGURE = "swarmgauge.locust"

# psutil first in every case, so its own pages count in every column alike
CHILD = """
import json, sys
import psutil
{imports}
memory = psutil.Process().memory_full_info()
heavy = sorted({{name.split(".")[0] for name in sys.modules}} & {heavy})
print(json.dumps({{"rss": memory.rss, "uss": memory.uss, "heavy": heavy}}))
"""


def measure(imports: str) -> dict[str, Any]:
    """One fresh process: its RSS and USS in bytes after ``imports``, and the heavy packages it loaded."""
    result = subprocess.run(
        [sys.executable, "-c", CHILD.format(imports=imports, heavy=set(HEAVY))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=CHILD_SECONDS,
    )
    if result.returncode != 0:
        raise RuntimeError(f"the measuring process failed: {result.stderr.strip()[-2000:]}")
    return json.loads(result.stdout.splitlines()[-1])


def run_rounds(rounds: int, cases: dict[str, str] = CASES) -> dict[str, list[dict[str, Any]]]:
    """Every case once per round, the order rotated by one each round."""
    names = list(cases)
    samples: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for round_index in range(rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(measure(cases[name]))
    return samples


def summarize(samples: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per case, median RSS and USS in MiB and the median of its per-round difference from the anchor."""
    anchor = samples[ANCHOR]
    rows = []
    for name, runs in samples.items():
        rows.append(
            {
                "case": name,
                "rss_mib": round(statistics.median(run["rss"] for run in runs) / MIB, 1),
                "uss_mib": round(statistics.median(run["uss"] for run in runs) / MIB, 1),
                "rss_added_mib": round(
                    statistics.median((run["rss"] - base["rss"]) / MIB for run, base in zip(runs, anchor, strict=True)),
                    1,
                ),
                "uss_added_mib": round(
                    statistics.median((run["uss"] - base["uss"]) / MIB for run, base in zip(runs, anchor, strict=True)),
                    1,
                ),
                "heavy_loaded": sorted({package for run in runs for package in run["heavy"]}),
            }
        )
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'case':24} {'RSS MiB':>8} {'+RSS MiB':>9} {'USS MiB':>8} {'+USS MiB':>9}  pandas/numpy/matplotlib"]
    for row in rows:
        lines.append(
            f"{row['case']:24} {row['rss_mib']:>8.1f} {row['rss_added_mib']:>+9.1f} {row['uss_mib']:>8.1f} "
            f"{row['uss_added_mib']:>+9.1f}  {', '.join(row['heavy_loaded']) or '-'}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    samples = run_rounds(args.rounds)
    rows = summarize(samples)
    figure = next(row for row in rows if row["case"] == FIGURE)
    print(table(rows))
    reached = figure["rss_added_mib"] <= TARGET_MIB and not figure["heavy_loaded"]
    print(
        f"import swarmgauge.locust adds {figure['rss_added_mib']:.1f} MiB RSS to a plain Locust process "
        f"(target <= {TARGET_MIB:g} MiB: {'reached' if reached else 'not reached'}); "
        f"median of {args.rounds} interleaved rounds, load average {load_before:.2f} -> {os.getloadavg()[0]:.2f}"
    )
    result = {
        "rounds": args.rounds,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "load_average_start": round(load_before, 2),
        "load_average_end": round(os.getloadavg()[0], 2),
        "anchor": ANCHOR,
        "figure": FIGURE,
        "target_rss_added_mib": TARGET_MIB,
        "reached": reached,
        "cases": rows,
        "samples": samples,
    }
    print(f"written to {write_json(args.out, result, indent=1)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
