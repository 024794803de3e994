"""The kneo sync sweeps' anchor: the concurrency-1 step, measured between the sweep's steps (or at its start and end).

Every other step of a sweep is read against it (runs/s ÷ c=1, p50 ÷ (c × p50 at 1)), so whatever moved it moves every
row. kneo-serv's one process runs near a full core at every step, so its runs/s is its share of a core over its CPU
a run, and its CPU a run is not this machine's constant: on this shared 2-core VM a probe's fixed loops slowed up to
54 % for tens of seconds with no steal and the guest not full, and kneo-serv's CPU a run moved 20-50 % between steps
while it showed no warm-up of its own (``benchmarks/kneo_anchor_drift.py``). So each step is read against the
concurrency-1 steps just before and after it (:func:`anchor_at`: their runs summed over their measured seconds,
latencies weighted by runs), measured side by side with it: at scale 1 the sweep interleaves them (1, 4, 1, 8, ...),
below it they are the sweep's two ends. When a step's two neighbours disagree past the flat tolerance its row says
so if it strays, with both figures: the machine moved under the step, not the store's shape. The sweep's
concurrency-1 row itself pools every concurrency-1 step (:func:`fold_anchor`).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

ANCHOR_USERS = 1
#: figures a step's row carries that pool as a per-run mean (weighted by the runs in each step)
WEIGHTED = ("p50_ms", "p90_ms", "p99_ms", "p999_ms", "avg_ms")
#: the column a folded anchor row lists its steps in ("0 4"), so per-step figures can be pooled the same way
STEPS = "anchor_steps"


def anchor_blocks(rows: pd.DataFrame) -> pd.DataFrame:
    """The concurrency-1 steps of one sweep's rows (one request type), in step order."""
    if rows.empty or "users" not in rows:
        return rows.iloc[0:0]
    return rows[pd.to_numeric(rows["users"]) == ANCHOR_USERS].sort_values("step")


def fold_anchor(rows: pd.DataFrame) -> pd.DataFrame:
    """One sweep's rows with its concurrency-1 steps pooled into one row (the first one's step and place): runs summed
    over their measured seconds, the latency figures their per-run weighted means, max the larger; its steps listed
    in :data:`STEPS`. Rows with one concurrency-1 step come back as they are (with that step listed)."""
    blocks = anchor_blocks(rows)
    if blocks.empty:
        return rows
    first = blocks.index[0]
    out = rows.drop(index=[i for i in blocks.index if i != first]).copy()
    out[STEPS] = ""
    out.loc[first, STEPS] = " ".join(str(int(step)) for step in blocks["step"])
    if len(blocks) == 1:
        return out
    runs = pd.to_numeric(blocks["requests"]).astype(float)
    seconds = pd.to_numeric(blocks["duration_s"]).astype(float)
    out.loc[first, "requests"] = int(runs.sum())
    out.loc[first, "duration_s"] = float(seconds.sum())
    out.loc[first, "rps"] = float(runs.sum() / seconds.sum()) if seconds.sum() > 0 else 0.0
    for column in WEIGHTED:
        if column in blocks:
            values = pd.to_numeric(blocks[column], errors="coerce")
            out.loc[first, column] = float((values * runs).sum() / runs.sum()) if runs.sum() > 0 else float("nan")
    if "max_ms" in blocks:
        out.loc[first, "max_ms"] = float(pd.to_numeric(blocks["max_ms"], errors="coerce").max())
    return out


def cpu_ms_a_run(share: float, rps: float) -> float:
    """Milliseconds of a side's CPU a run, from its share of a core (%) and the runs a second."""
    return share * 10 / rps


def at_steps(frame: pd.DataFrame, steps: tuple[int, ...]) -> pd.DataFrame:
    """The rows of ``frame`` whose step is one of ``steps``."""
    return frame[pd.to_numeric(frame["step"]).astype(int).isin(steps)]


def sides_over(by_side: dict[int, dict[str, float]], rows: pd.DataFrame, steps: tuple[int, ...]) -> dict[str, float]:
    """Each side's CPU over the concurrency-1 ``steps``, its mean weighted by the steps' measured seconds (the sides
    every one of them saw)."""
    blocks = at_steps(anchor_blocks(rows), steps)
    weights = {int(r["step"]): float(r.get("duration_s", 1.0)) for _, r in blocks.iterrows()}
    if not weights or sum(weights.values()) <= 0:
        return {}
    sides = set.intersection(*(set(by_side.get(step, {})) for step in weights))
    return {
        side: sum(by_side[step][side] * weight for step, weight in weights.items()) / sum(weights.values())
        for side in sides
    }


def pooled_sides(by_side: dict[int, dict[str, float]], rows: pd.DataFrame) -> dict[int, dict[str, float]]:
    """Per-step CPU by side with the concurrency-1 steps' figures pooled under the first one's step (each side's
    mean weighted by the steps' measured seconds), as :func:`fold_anchor` pools their runs."""
    blocks = anchor_blocks(rows)
    if len(blocks) < 2:
        return by_side
    steps = tuple(int(step) for step in blocks["step"])
    out = dict(by_side)
    out[min(steps)] = sides_over(by_side, rows, steps)
    return out


@dataclass(frozen=True)
class Bracket:
    """The sweep's opening and closing concurrency-1 steps: runs/s and kneo-serv's CPU a run (ms) of each."""

    rps: tuple[float, float]
    cpu_ms: tuple[float | None, float | None]

    def moved(self) -> tuple[float, float | None]:
        """How far the closing step's runs/s and CPU a run moved against the opening one's (a share: 0.1 is 10 %)."""
        cpu = None
        if self.cpu_ms[0] and self.cpu_ms[1] is not None:
            cpu = self.cpu_ms[1] / self.cpu_ms[0] - 1.0
        return self.rps[1] / self.rps[0] - 1.0, cpu

    def drifted(self, tolerance: float) -> bool:
        """The two disagree past ``tolerance`` (runs/s, or kneo-serv's CPU a run)."""
        rps, cpu = self.moved()
        return abs(rps) > tolerance or (cpu is not None and abs(cpu) > tolerance)

    def text(self) -> str:
        rps, cpu = self.moved()
        shown = f"runs/s {self.rps[0]:.1f} then {self.rps[1]:.1f} ({rps:+.0%})"
        if cpu is not None:
            shown = f"kneo-serv's CPU a run {self.cpu_ms[0]:.1f} then {self.cpu_ms[1]:.1f} ms ({cpu:+.0%}), " + shown
        return shown


def bracket_of(
    rows: pd.DataFrame, by_side: dict[int, dict[str, float]], steps: tuple[int, ...] | None = None
) -> Bracket | None:
    """The first and last of the concurrency-1 ``steps`` (every one of the sweep's when None) of a sweep's rows
    (unfolded), None with fewer than two."""
    blocks = anchor_blocks(rows)
    if steps is not None:
        blocks = at_steps(blocks, steps)
    if len(blocks) < 2:
        return None
    ends = [blocks.iloc[0], blocks.iloc[-1]]
    rps = tuple(float(end["rps"]) for end in ends)
    if min(rps) <= 0:
        return None
    shares = [by_side.get(int(end["step"]), {}).get("kneo-serv") for end in ends]
    cpu = tuple(cpu_ms_a_run(share, r) if share is not None else None for share, r in zip(shares, rps, strict=True))
    return Bracket((rps[0], rps[1]), (cpu[0], cpu[1]))


def neighbours(rows: pd.DataFrame, step: int) -> tuple[int, ...]:
    """The concurrency-1 steps just before and after ``step`` (one at a sweep's edge): what that step is read
    against."""
    steps = [int(s) for s in anchor_blocks(rows)["step"]]
    before = [s for s in steps if s < step][-1:]
    after = [s for s in steps if s > step][:1]
    return (*before, *after)


@dataclass(frozen=True)
class Anchor:
    """What one step is read against: the concurrency-1 ``steps`` beside it, pooled (runs/s, p50, each side's CPU),
    and the two of them side by side (None with one)."""

    steps: tuple[int, ...]
    rps: float
    p50_ms: float
    sides: dict[str, float]
    bracket: Bracket | None

    def text(self) -> str:
        """Which concurrency-1 steps of the run, and their runs/s."""
        if self.bracket is None:
            return f"c=1 step {self.steps[0]}: {self.rps:.1f} runs/s"
        first, last = self.bracket.rps
        return (
            f"c=1 steps {self.steps[0]} and {self.steps[-1]}: {first:.1f} and {last:.1f} runs/s, pooled {self.rps:.1f}"
        )


def anchor_at(rows: pd.DataFrame, by_side: dict[int, dict[str, float]], step: int) -> Anchor | None:
    """The anchor of ``step`` in a sweep's rows (unfolded): the concurrency-1 steps just before and after it, pooled
    as :func:`fold_anchor` pools (None when the sweep has no concurrency-1 step)."""
    steps = neighbours(rows, step)
    if not steps:
        return None
    pooled = fold_anchor(at_steps(rows, steps)).iloc[0]
    return Anchor(
        steps,
        float(pooled["rps"]),
        float(pooled["p50_ms"]),
        sides_over(by_side, rows, steps),
        bracket_of(rows, by_side, steps),
    )


def bracket_why(bracket: Bracket) -> str:
    """A straying row's reason when the concurrency-1 steps just before and after it disagree past the flat
    tolerance."""
    return (
        f"machine-bound: the c=1 steps just before and after this step disagree ({bracket.text()}), so the anchor it "
        "is read against is this machine's drift while it ran, not the store's shape"
    )


def bracket_note(store_mode: str, rows: pd.DataFrame, by_side: dict[int, dict[str, float]], tolerance: float) -> str:
    """What the anchor is, said once per sweep: each concurrency-1 step's figures, and which neighbouring pairs
    disagree past the flat tolerance."""
    blocks = anchor_blocks(rows)
    steps = [int(step) for step in blocks["step"]]
    shown = []
    for step, rps in zip(steps, pd.to_numeric(blocks["rps"]).astype(float), strict=True):
        share = by_side.get(step, {}).get("kneo-serv")
        cpu = f" ({cpu_ms_a_run(share, rps):.1f} ms of kneo-serv's CPU a run)" if share is not None and rps > 0 else ""
        shown.append(f"step {step} {rps:.1f} runs/s{cpu}")
    apart = []
    for pair in zip(steps, steps[1:], strict=False):
        bracket = bracket_of(rows, by_side, pair)
        if bracket is not None and bracket.drifted(tolerance):
            apart.append(f"steps {pair[0]} and {pair[1]}: {bracket.text()}")
    where = "between every two steps" if len(steps) > 2 else "at the sweep's start and again at its end"
    agreed = (
        f"apart past the flat tolerance of {tolerance:.0%}: " + "; ".join(apart)
        if apart
        else f"each neighbouring pair within the flat tolerance of {tolerance:.0%}"
    )
    return (
        f"{store_mode}: the concurrency-1 anchor is measured {where} ({'; '.join(shown)}), and each step is read "
        f"against the c=1 steps just before and after it, pooled, so a drift of the machine hits a step and its "
        f"anchor alike ({agreed})."
    )
