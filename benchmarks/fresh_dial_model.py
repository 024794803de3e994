"""The demarkus page's fresh-connection rows against the stand-in's model, simulated: which share of lost first
flights (``--initial-loss``) could hold both rows within their tolerance?

A closed loop as demarkus-loadtest's ``-fresh`` workers run it: each worker dials (a share of dials lose their first
flight and wait the client's retransmit timer, quic-go's 200 ms), shakes hands, then reads through the stand-in's
bucket (3 slots, each read holding one through two lognormal round trips of 9.2 ms, sigma 0.2: ``MARK_BOTTLENECK``),
and dials again at once. No network and no QUIC: the model alone, seeded, so the figures are the model's and not the
machine's. The backend's stalls are left out (they only add to the tail).

    python -m benchmarks.fresh_dial_model                       # 16 and 64 users, shares 0 to 0.6
    python -m benchmarks.fresh_dial_model --json benchmarks/results/fresh_dial_model.json

Prints a row per (users, share) with req/s, p50, p99 and mean, each against the page's row, and whether all three
fall within the fresh rows' tolerance (25 %, ``reports/index_demarkus_reads.py``).
"""

from __future__ import annotations

import argparse
import heapq
import json
import random
import statistics
from pathlib import Path

#: the page's fresh rows: users -> (req/s, p50 ms, p99 ms)
PAGE = {16: (157.0, 23.0, 323.0), 64: (159.0, 343.0, 1160.0)}
TOLERANCE = 0.25
SLOTS, ROUND_TRIP_S, SIGMA = 3, 0.0092, 0.2
TIMER_S = 0.2  # quic-go resends an unanswered first Initial after twice its 100 ms initial RTT
HANDSHAKE_S = 0.0028  # the stand-in's handshake p50 on loopback (the page's Go server: about 0.5 ms of CPU)
WARMUP_S = 10.0


def _dialled(start: float, share: float, rng: random.Random, handshake_s: float) -> float:
    """When a dial begun at ``start`` is done: its handshake, after the retransmit timer for a share of dials."""
    return start + handshake_s + (TIMER_S if rng.random() < share else 0.0)


def simulate(
    users: int, share: float, seconds: float = 300.0, seed: int = 6309, handshake_s: float = HANDSHAKE_S
) -> dict[str, float]:
    """Run the closed loop for ``seconds`` of simulated time; figures over the reads begun after the warm-up."""
    rng = random.Random(seed)
    free_at = [0.0] * SLOTS
    # (when, user, when its dial began): a user is queued here once its dial is done, so the bucket books reads in
    # the order they reach it
    ready = []
    for user in range(users):
        start = rng.random() * 0.01
        heapq.heappush(ready, (_dialled(start, share, rng, handshake_s), user, start))
    latencies: list[float] = []
    while ready:
        at, user, start = heapq.heappop(ready)
        if at > seconds:
            break
        hold = sum(ROUND_TRIP_S * rng.lognormvariate(0.0, SIGMA) for _ in range(2))
        slot = min(range(SLOTS), key=free_at.__getitem__)
        done = max(at, free_at[slot]) + hold
        free_at[slot] = done
        if start >= WARMUP_S:
            latencies.append(done - start)
        heapq.heappush(ready, (_dialled(done, share, rng, handshake_s), user, done))
    latencies.sort()
    count = len(latencies)
    return {
        "users": users,
        "share": share,
        "rps": count / (seconds - WARMUP_S),
        "p50_ms": 1000 * latencies[count // 2],
        "p99_ms": 1000 * latencies[min(count - 1, int(0.99 * count))],
        "mean_ms": 1000 * statistics.fmean(latencies),
    }


def holds(row: dict[str, float]) -> bool:
    """All three figures within the fresh rows' tolerance of the page's."""
    page = PAGE[int(row["users"])]
    figures = (row["rps"], row["p50_ms"], row["p99_ms"])
    return all(abs(measured / published - 1.0) <= TOLERANCE for measured, published in zip(figures, page, strict=True))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shares", default="0,0.1,0.2,0.25,0.3,0.35,0.4,0.45,0.5,0.55,0.6")
    parser.add_argument("--seconds", type=float, default=300.0, help="simulated seconds per setting")
    parser.add_argument(
        "--handshake-ms",
        type=float,
        default=HANDSHAKE_S * 1000,
        help="a dial's handshake (default the stand-in's 2.8; the page's Go server spends about 0.5 of CPU)",
    )
    parser.add_argument("--json", type=Path, help="write the rows here too")
    args = parser.parse_args(argv)
    rows = []
    for users in PAGE:
        for share in (float(s) for s in args.shares.split(",")):
            row = simulate(users, share, args.seconds, handshake_s=args.handshake_ms / 1000)
            row["holds"] = holds(row)
            rows.append(row)
            page = PAGE[users]
            print(
                f"{users:3d} users, share {share:.2f}: {row['rps']:6.1f} req/s ({row['rps'] / page[0]:.2f}x), "
                f"p50 {row['p50_ms']:6.1f} ms ({row['p50_ms'] / page[1]:.2f}x), p99 {row['p99_ms']:7.1f} ms "
                f"({row['p99_ms'] / page[2]:.2f}x), mean {row['mean_ms']:6.1f} ms{'  holds' if row['holds'] else ''}"
            )
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {"page": PAGE, "tolerance": TOLERANCE, "handshake_ms": args.handshake_ms, "rows": rows}, indent=1
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
