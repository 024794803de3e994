"""The trend sentence under a step table: rising, flat (the knee, with Little's law), falling, or noisy.

One sentence per request type, read from the same figures the table shows, so the words can never contradict the
numbers: a fall is called a fall (from which step, by how much, and whether the generator or the target ran out of
CPU there), and when the variation inside a step is larger than the difference the sentence rests on, it says the
run is too noisy to read a trend instead of inventing one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from swarmgauge.core.numbers import format_latency, format_rate

KNEE_GAIN = 0.10  # a step that adds less than 10 % throughput has stopped growing
FALL = 0.10  # the last step more than 10 % under the peak is a fall
SATURATED_CPU = 90.0  # % of one core, as steps.csv's generator_bound
BOUND_SHARE = 0.9  # a target above 90 % of its ceiling (one core, or its cgroup's CPU limit) is target-bound


@dataclass(frozen=True)
class TargetCPU:
    """The busiest sampled target process of a step: its CPU (% of one core) and the most it may use.

    ``limit_percent`` is 100 for a process (one core) and the cgroup's ``cpu.max`` quota as % of a core when the
    source is a cgroup with a limit; ``name`` says which source it was.
    """

    cpu_percent: float
    name: str = "the target"
    limit_percent: float = 100.0

    @property
    def bound(self) -> bool:
        return self.cpu_percent > BOUND_SHARE * self.limit_percent

    def describe(self) -> str:
        limit = "a core" if self.limit_percent == 100.0 else f"its {self.limit_percent / 100:g}-CPU cgroup limit"
        share = self.cpu_percent / self.limit_percent * 100.0 if self.limit_percent != 100.0 else self.cpu_percent
        return f"{self.name} at {share:.0f} % of {limit}"


@dataclass(frozen=True)
class StepPoint:
    """One closed-model step of one request type; ``spread`` is the in-step standard deviation of req/s."""

    users: float
    rps: float
    p50_ms: float | None = None
    spread: float = 0.0
    generator_cpu: float | None = None
    target_cpu: float | None = None
    target: TargetCPU | None = None

    def target_bound(self) -> bool:
        return self.target.bound if self.target is not None else (self.target_cpu or 0.0) > SATURATED_CPU


def _users(value: float) -> str:
    return f"{value:g} user" + ("" if value == 1 else "s")


def _noise(points: Sequence[StepPoint], *indexes: int) -> float:
    return max(points[i].spread for i in indexes)


def _noisy(points: Sequence[StepPoint], first: int, second: int, everywhere: bool = False) -> str:
    a, b = points[first], points[second]
    noise = max(p.spread for p in points) if everywhere else _noise(points, first, second)
    return (
        f"Too noisy to read a trend: req/s varies by ±{format_rate(noise)} within a step, "
        f"more than the {format_rate(abs(b.rps - a.rps))} req/s between {_users(a.users)} and {_users(b.users)}; "
        "run longer steps (--step-time) before drawing a conclusion."
    )


def _saturation(points: Sequence[StepPoint], start: int) -> str:
    """Who ran out of CPU in the steps from ``start`` on: the generator, the target, or neither (as far as sampled)."""
    later = points[start:]
    generator = max((p.generator_cpu for p in later if p.generator_cpu is not None), default=None)
    target = max((p.target_cpu for p in later if p.target_cpu is not None), default=None)
    if generator is not None and generator > SATURATED_CPU:
        return f"the load generator was saturated there ({generator:.0f} % of a core), so the fall may be its own"
    bound = _target_ceiling(later)
    if bound is not None:
        return f"the target was saturated there ({bound})"
    known = [f"{side} {cpu:.0f} %" for side, cpu in (("generator", generator), ("target", target)) if cpu is not None]
    if known:
        return f"neither generator nor target was CPU-saturated ({', '.join(known)} of a core at most)"
    return "the target's CPU was not sampled, so which side saturated is unknown"


def _target_ceiling(points: Sequence[StepPoint]) -> str | None:
    """``kneo-serv at 97 % of a core`` for the busiest target-bound step among ``points``; None if none is bound."""
    bound = [p for p in points if p.target_bound()]
    if not bound:
        return None
    busiest = max(bound, key=lambda p: p.target.cpu_percent if p.target else (p.target_cpu or 0.0))
    return busiest.target.describe() if busiest.target else f"{busiest.target_cpu:.0f} % of a core"


def _ceiling_clause(points: Sequence[StepPoint]) -> str:
    """``; the ceiling is the target's own CPU (...)`` when the target was CPU-bound in these steps, else nothing."""
    bound = _target_ceiling(points)
    return f"; the ceiling is the target's own CPU ({bound})" if bound else ""


def knee_index(points: Sequence[StepPoint]) -> int | None:
    """The first step from which no later step adds :data:`KNEE_GAIN` throughput (the knee), or None (still rising)."""
    last = len(points) - 1
    return next(
        (i for i in range(last) if all(points[j + 1].rps < (1.0 + KNEE_GAIN) * points[j].rps for j in range(i, last))),
        None,
    )


def trend_sentence(points: Sequence[StepPoint]) -> str | None:
    """The sentence for steps in run order (users growing); None with fewer than two steps or no throughput."""
    points = [p for p in points if p.rps is not None and not math.isnan(p.rps)]
    if len(points) < 2 or not all(b.users > a.users for a, b in zip(points, points[1:])):
        return None
    if max(p.rps for p in points) <= 0:
        return None
    last = len(points) - 1
    peak = max(range(len(points)), key=lambda i: points[i].rps)
    low = min(range(len(points)), key=lambda i: points[i].rps)
    if max(p.spread for p in points) > points[peak].rps - points[low].rps:
        first, second = sorted((low, peak))
        return _noisy(points, first, second, everywhere=True)
    if peak < last and points[last].rps < (1.0 - FALL) * points[peak].rps:
        top, end = points[peak], points[last]
        if _noise(points, peak, last) > top.rps - end.rps:
            return _noisy(points, peak, last)
        drop = (top.rps - end.rps) / top.rps * 100.0
        return (
            f"Throughput falls: it peaks at {format_rate(top.rps)} req/s at {_users(top.users)}, then drops from "
            f"the {points[peak + 1].users:g}-user step on, to {format_rate(end.rps)} req/s at "
            f"{_users(end.users)} ({drop:.0f} % lower); {_saturation(points, peak + 1)}."
        )
    knee = knee_index(points)
    if knee is None:
        before, top = points[last - 1], points[last]
        if _noise(points, last - 1, last) > top.rps - before.rps:
            return _noisy(points, last - 1, last)
        bound = _target_ceiling(points[last:])
        headroom = (
            f"but the target's own CPU is at its ceiling there ({bound})"
            if bound
            else "the target has headroom beyond the last step"
        )
        return (
            f"Throughput rises, from {format_rate(points[0].rps)} req/s at "
            f"{_users(points[0].users)} to {format_rate(top.rps)} req/s at {_users(top.users)}: no knee yet, "
            f"{headroom}."
        )
    if knee > 0 and _noise(points, 0, knee) > points[knee].rps - points[0].rps:
        return _noisy(points, 0, knee)
    at, after = points[knee], points[knee + 1]
    little = after.users / after.rps * 1000.0 if after.rps > 0 else None
    measured = f", measured p50 {format_latency(after.p50_ms)}" if after.p50_ms is not None else ""
    return (
        f"Throughput flattens at about {format_rate(at.rps)} req/s from {_users(at.users)} on; more users only "
        f"queue (at {_users(after.users)} Little's law gives {format_latency(little)}{measured})"
        f"{_ceiling_clause(points[knee:])}."
    )
