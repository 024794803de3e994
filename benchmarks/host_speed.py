"""The host-speed probe (``swarmgauge/core/host_speed.py``) beside the MDK stand-in's CPU a read, in turn: the
figure the probe's reference comes from, and whether the two move together over the repeats. Figures only; prints
and writes the JSON.

    python -m benchmarks.host_speed [--repeats 3] [--fleet 2000x4] [--readers 1000] [--seconds 8] [--out FILE]

Each run writes a file of its own (the host's speed is what differs between them).

The probe runs in this process with nothing else of ours running; the read figure is
``benchmarks/mdk_read_cpu.measure`` with the components forked, as ``swarmgauge target mdk`` starts them. Run it
alone on the machine (``flock -x`` on the shared lock): on a shared host both figures move with the neighbours.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from benchmarks.mdk_read_cpu import measure
from swarmgauge.core.host_speed import REFERENCE_MS, probe_ms
from swarmgauge.files import write_json

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.host_speed", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--fleet", default="2000x4", help="DEVICESxWORKERS")
    parser.add_argument("--readers", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--out", type=Path, help="default: results/host_speed_HHMM.json (UTC), one file a run")
    args = parser.parse_args()
    if not 1 <= args.repeats <= 20:
        parser.error("--repeats 1 to 20")
    devices, workers = (int(part) for part in args.fleet.split("x"))
    rows = []
    for repeat in range(args.repeats):
        before = probe_ms()
        read = measure(devices, workers, args.readers, args.seconds, fork=True)
        after = probe_ms()
        row = {
            "probe_ms_before": round(before, 1),
            "probe_ms_after": round(after, 1),
            "stand_in_ms_per_read": read["stand_in_ms_per_read"],
            "reads_per_s": read["reads_per_s"],
            "load_avg": round(os.getloadavg()[0], 1),
        }
        rows.append(row)
        print(
            f"repeat {repeat + 1}: probe {before:.1f} ms before, {after:.1f} after (reference {REFERENCE_MS:g}); "
            f"stand-in {row['stand_in_ms_per_read']} ms of CPU a read at {row['reads_per_s']:.0f} reads/s; "
            f"load {row['load_avg']:.1f}",
            flush=True,
        )
    probes = [value for row in rows for value in (row["probe_ms_before"], row["probe_ms_after"])]
    reads = [row["stand_in_ms_per_read"] for row in rows if row["stand_in_ms_per_read"]]
    summary = {
        "probe_ms_median": round(statistics.median(probes), 1),
        "probe_ms_range": [min(probes), max(probes)],
        "stand_in_ms_per_read_median": round(statistics.median(reads), 3) if reads else None,
        "stand_in_ms_per_read_range": [min(reads), max(reads)] if reads else None,
        "reference_ms": REFERENCE_MS,
    }
    print(
        f"probe median {summary['probe_ms_median']} ms (range {summary['probe_ms_range']}), stand-in median "
        f"{summary['stand_in_ms_per_read_median']} ms a read (range {summary['stand_in_ms_per_read_range']})"
    )
    out = args.out or RESULTS / time.strftime("host_speed_%H%M.json", time.gmtime())
    print(f"written {write_json(out, {'fleet': args.fleet, 'runs': rows, 'summary': summary})}")


if __name__ == "__main__":
    main()
