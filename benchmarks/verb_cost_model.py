"""The demarkus page's LOOKUP, FETCH and MCP rows against the stand-in's bucket, simulated: could a per-verb backend
cost (LOOKUP lighter than FETCH, as the real server's code has it) hold LOOKUP's 16-user p99 and ``mark_lookup_all``'s
8-worker p50 without breaking the rows that hold?

The real server (``bucketstore``) opens a read view with one bucket round trip, a Head of the world's head object
(``refreshSnapshot``, answered from the cached snapshot when its generation is unchanged); a LOOKUP is then answered
from the snapshot's in-memory catalog and a LIST from its directories, while a FETCH reads the document's objects
too. So "LOOKUP is lighter" has two readings, and this runs both beside the stand-in's model as it is:

- ``as-is``: every read holds a slot through two round trips (``MARK_BOTTLENECK``: 3 slots, 9.2 ms lognormal sigma
  0.2, a 45 ms stall of the whole backend after about every 640 reads);
- ``lookup-one-trip``: a LOOKUP holds its slot through one round trip (the Head only), a FETCH through two;
- ``lookup-fewer-stalls``: both two round trips, but a LOOKUP counts half a read towards the next stall (a collector
  paced by what the reads allocate, and a LOOKUP reads no object), stall lengths 40 to 50 ms;
- ``lookup-spread``: both two round trips of the same mean, a LOOKUP's spread tighter or wider than FETCH's (lognormal
  sigma 0.05, 0.4, 0.6 against 0.2): the page's LOOKUP rates equal FETCH's at every step, so a LOOKUP can differ only
  in its spread.

A closed loop as demarkus-loadtest and the demo's Users run it: each user sends its next request when its answer is
back, with the client's own time (``CLIENT_MS``: the QUIC client's, or the MCP gateway's and its client's) split
either side of the bucket. The stand-in's own ``Slots`` and ``StallSchedule`` (``swarmgauge/targets/mark/``) book the
reads, seeded, so the figures are the model's and not the machine's. A long run is cut into windows as long as the
demo's measured part of each step (9 s for QUIC LOOKUP/LIST/FETCH at 16 and 64 users, 4 s for the MCP steps), and each
row is shown as the median window's figures and the share of windows in which it holds its tolerance.

    python -m benchmarks.verb_cost_model
    python -m benchmarks.verb_cost_model --json benchmarks/results/verb_cost_model.json
"""

from __future__ import annotations

import argparse
import heapq
import json
import random
import statistics
from dataclasses import dataclass
from pathlib import Path

from swarmgauge.targets.mark.pacing import Slots
from swarmgauge.targets.mark.stalls import StallSchedule

SLOTS, ROUND_TRIP_S, SIGMA = 3, 0.0092, 0.2
STALL_S, STALL_READS = 0.045, 640
#: the client's own time per request, ms: QUIC from the stand-in's 1-user FETCH (p50 20 ms over 18.4 of round trips),
#: MCP from its 1-worker mark_fetch (24 ms)
CLIENT_MS = {"QUIC": 1.6, "MCP": 5.6}


@dataclass(frozen=True)
class Row:
    """One row of the page: ``verb`` at the bucket, ``users`` in a closed loop, (req/s, p50 ms, p99 ms)."""

    label: str
    path: str
    verb: str
    users: int
    page: tuple[float, float, float]
    tolerance: float
    window_s: float


ROWS = [
    Row("QUIC FETCH 16", "QUIC", "FETCH", 16, (159, 100, 166), 0.15, 9.0),
    Row("QUIC FETCH 64", "QUIC", "FETCH", 64, (158, 423, 486), 0.15, 8.0),
    Row("QUIC LOOKUP 16", "QUIC", "LOOKUP", 16, (159, 101, 124), 0.15, 9.0),
    Row("QUIC LOOKUP 64", "QUIC", "LOOKUP", 64, (158, 501, 506), 0.15, 9.0),
    Row("QUIC LIST 16", "QUIC", "LIST", 16, (159, 80, 185), 0.15, 9.0),
    Row("MCP mark_fetch 8", "MCP", "FETCH", 8, (160, 60, 85), 0.25, 4.0),
    Row("MCP mark_fetch 32", "MCP", "FETCH", 32, (160, 260, 268), 0.25, 4.0),
    Row("MCP mark_lookup_all 8", "MCP", "LOOKUP", 8, (160, 40, 104), 0.25, 4.0),
    Row("MCP mark_lookup_all 32", "MCP", "LOOKUP", 32, (160, 240, 287), 0.25, 4.0),
]


@dataclass(frozen=True)
class Model:
    """Round trips a verb holds its slot through, and what one read of it counts towards the next stall."""

    name: str
    trips: dict[str, int]
    stall_weight: dict[str, float]
    stall_s: float = STALL_S
    #: the lognormal sigma of a LOOKUP's round trips, its mean kept at the stand-in's (None: the stand-in's own)
    lookup_sigma: float | None = None


def _models() -> list[Model]:
    two = {"FETCH": 2, "LOOKUP": 2, "LIST": 2}
    whole = {"FETCH": 1.0, "LOOKUP": 1.0, "LIST": 1.0}
    models = [Model("as-is", two, whole), Model("lookup-one-trip", {**two, "LOOKUP": 1, "LIST": 1}, whole)]
    for stall_ms in (40, 45, 50):
        half = {**whole, "LOOKUP": 0.5, "LIST": 0.5}
        models.append(Model(f"lookup-fewer-stalls {stall_ms} ms", two, half, stall_ms / 1000))
    for sigma in (0.05, 0.4, 0.6):
        models.append(Model(f"lookup-spread sigma {sigma:g}", two, whole, lookup_sigma=sigma))
    return models


def _trip(rng: random.Random, sigma: float | None) -> float:
    """One round trip: the stand-in's (lognormal, sigma ``SIGMA``), or one of another spread with the same mean."""
    if sigma is None:
        return ROUND_TRIP_S * rng.lognormvariate(0.0, SIGMA)
    return ROUND_TRIP_S * rng.lognormvariate((SIGMA**2 - sigma**2) / 2, sigma)


def simulate(row: Row, model: Model, seconds: float, seed: int) -> list[float]:
    """(begun at, latency) of every request of a closed loop of ``row.users`` over ``seconds``, as a flat list of
    pairs [t0, l0, t1, l1, ...]."""
    rng = random.Random(seed)
    stalls = StallSchedule(model.stall_s, STALL_READS, seed=seed)
    slots = Slots(SLOTS, finish=stalls.finish)
    half = CLIENT_MS[row.path] / 2000
    weight = model.stall_weight[row.verb]
    owed = 0.0  # the part of a read not yet counted towards the stalls
    arrivals = [(rng.random() * 0.01 + half, user, 0.0) for user in range(row.users)]
    heapq.heapify(arrivals)
    out: list[float] = []
    while arrivals:
        at, user, begun = heapq.heappop(arrivals)
        if at > seconds:
            break
        owed += weight
        while owed >= 1.0:
            owed -= 1.0
            stalls.read_booked(max(at, *slots.free_at))
        sigma = model.lookup_sigma if row.verb == "LOOKUP" else None
        hold = sum(_trip(rng, sigma) for _ in range(model.trips[row.verb]))
        done = at + (slots.reserve(at, hold, float("inf")) or 0.0) + half
        out += (begun, done - begun)
        heapq.heappush(arrivals, (done + half, user, done))
    return out


def windows(row: Row, model: Model, seconds: float, seed: int, warmup_s: float = 5.0) -> list[tuple[float, ...]]:
    """(req/s, p50 ms, p99 ms) of each window of ``row.window_s`` after the warm-up."""
    pairs = simulate(row, model, seconds, seed)
    figures = []
    start = warmup_s
    while start + row.window_s <= seconds - 3.0:
        lat = sorted(pairs[i + 1] for i in range(0, len(pairs), 2) if start <= pairs[i] < start + row.window_s)
        if lat:
            n = len(lat)
            figures.append((n / row.window_s, 1000 * lat[n // 2], 1000 * lat[min(n - 1, int(0.99 * n))]))
        start += row.window_s
    return figures


def holds(row: Row, figures: tuple[float, ...]) -> bool:
    """Every figure within the row's tolerance, as the index rounds its ratio (two decimals)."""
    return all(
        abs(round(measured / published, 2) - 1.0) <= row.tolerance + 1e-9
        for measured, published in zip(figures, row.page, strict=True)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=400.0, help="simulated seconds per row and model")
    parser.add_argument("--seed", type=int, default=6309)
    parser.add_argument("--json", type=Path, help="write the rows here too")
    args = parser.parse_args(argv)
    results = []
    for model in _models():
        print(f"== {model.name}")
        held = 0
        for row in ROWS:
            each = windows(row, model, args.seconds, args.seed)
            share = sum(holds(row, w) for w in each) / len(each)
            median = tuple(statistics.median(w[i] for w in each) for i in range(3))
            held += holds(row, median)
            ratios = " ".join(f"{m / p:.2f}x" for m, p in zip(median, row.page, strict=True))
            print(
                f"  {row.label:24} {median[0]:6.1f} req/s  p50 {median[1]:6.1f}  p99 {median[2]:6.1f} ms  "
                f"({ratios})  holds in {share:4.0%} of {len(each)} windows"
            )
            results.append(
                {
                    "model": model.name,
                    "row": row.label,
                    "page": row.page,
                    "median_window": median,
                    "holds_share": share,
                    "windows": len(each),
                }
            )
        print(f"  rows whose median window holds: {held} of {len(ROWS)}")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"seconds": args.seconds, "seed": args.seed, "rows": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
