"""The MDK page's 10-device read load as a queue, to see what request timeout gives its 14 timed-out reads.

No stand-in runs: the page's harness (``runReadLoad``: 1,000 closed-loop readers for 3 s, each read of a random
device, then every read in flight awaited) against 10 devices whose reads run one after another at 220-390 ms (the
page's "reads to one device are serialized ... about 3 reads/s"). A read times out ``--timeouts`` seconds after it
was sent; with ``--drop`` the device skips a read whose caller has timed out, else it still serves it (a Node.js
Worker does not cancel one). Prints, per timeout, the timed-out reads over ``--runs`` seeds (p10, p50, p90) and the
share of runs the page's verdict row would call amber (some timed out, under 1 % of the attempted reads and the
burst's ~2,600 submits), and writes the JSON. Figures only.

    python -m benchmarks.mdk_ten_device_timeouts [--timeouts 10,30,32,34,36] [--runs 200] [--drop] [--out FILE]
"""

from __future__ import annotations

import argparse
import heapq
import random
from dataclasses import dataclass
from pathlib import Path

from swarmgauge.files import write_json

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "mdk_ten_device_timeouts.json"
#: the page's action load's accepted submits ("about 2,500 to 2,700"), attempted beside the reads in its verdict row
BURST_SUBMITS = 2600
AMBER_SHARE = 0.01


@dataclass(frozen=True)
class ReadLoad:
    readers: int = 1000
    devices: int = 10
    hold_s: float = 3.0
    read_s: tuple[float, float] = (0.22, 0.39)


def timed_out(load: ReadLoad, timeout_s: float, *, drop: bool, seed: int) -> tuple[int, int]:
    """(reads timed out, reads answered) of one run of the read load."""
    rng = random.Random(seed)
    free_at = [0.0] * load.devices  # each device serves its reads one after another, in the order they came
    sent = [(0.0, reader) for reader in range(load.readers)]
    heapq.heapify(sent)
    late = answered = 0
    while sent:
        at, reader = heapq.heappop(sent)
        if at >= load.hold_s:
            continue  # a reader sends no read after the hold; the ones in flight were all awaited
        device = rng.randrange(load.devices)
        start = max(at, free_at[device])
        if drop and start - at >= timeout_s:
            done, late = at + timeout_s, late + 1  # skipped at its turn: its caller is gone
        else:
            free_at[device] = start + rng.uniform(*load.read_s)
            if free_at[device] - at > timeout_s:
                done, late = at + timeout_s, late + 1
            else:
                done, answered = free_at[device], answered + 1
        heapq.heappush(sent, (done, reader))
    return late, answered


def amber(late: int, answered: int) -> bool:
    return 0 < late < AMBER_SHARE * (late + answered + BURST_SUBMITS)


def sweep(load: ReadLoad, timeouts: list[float], runs: int, *, drop: bool) -> list[dict]:
    """Per timeout: the timed-out reads' p10 / p50 / p90 over the seeds and the share of runs that are amber."""
    rows = []
    for timeout_s in timeouts:
        results = [timed_out(load, timeout_s, drop=drop, seed=seed) for seed in range(runs)]
        counts = sorted(late for late, _ in results)
        rows.append(
            {
                "timeout_s": timeout_s,
                "timed_out_p10": counts[len(counts) // 10],
                "timed_out_p50": counts[len(counts) // 2],
                "timed_out_p90": counts[(9 * len(counts)) // 10],
                "amber_share": round(sum(amber(*r) for r in results) / runs, 2),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeouts", default="10,30,32,33,34,35,36")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--readers", type=int, default=1000)
    parser.add_argument("--drop", action="store_true", help="a device skips a read whose caller has timed out")
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    args = parser.parse_args(argv)
    if args.runs < 1 or args.readers < 1:
        parser.error("--runs and --readers must be at least 1")
    try:
        timeouts = [float(t) for t in args.timeouts.split(",") if t.strip()]
    except ValueError:
        parser.error(f"--timeouts wants seconds, comma separated, got {args.timeouts!r}")
    load = ReadLoad(readers=args.readers)
    rows = sweep(load, timeouts, args.runs, drop=args.drop)
    print(f"{load.readers} readers x {load.hold_s:g} s on {load.devices} devices, drop={args.drop}, {args.runs} runs")
    for row in rows:
        print(
            f"timeout {row['timeout_s']:>5g} s: timed out p10 {row['timed_out_p10']:>4}  p50 {row['timed_out_p50']:>4}"
            f"  p90 {row['timed_out_p90']:>4}  amber in {row['amber_share']:.0%} of runs"
        )
    write_json(Path(args.out), {"readers": load.readers, "drop": args.drop, "runs": args.runs, "rows": rows})


if __name__ == "__main__":
    main()
