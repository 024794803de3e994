"""Pure arithmetic over sampled series: warm-up cut, least-squares slopes, deltas between marks.

Kept apart from the sampler so the verdict maths is tested without Locust, and the report reuses it over
``resources.csv``. Memory series are in bytes; slopes come out in bytes per hour and bytes per 1,000 requests.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import cast

from swarmgauge.core.durations import parse_duration
from swarmgauge.errors import UsageError

MIB = 1024 * 1024


@dataclass(frozen=True)
class Warmup:
    """How much of the start to ignore: a fixed number of seconds, or a fraction of the sampled span."""

    seconds: float = 0.0
    fraction: float = 0.0

    def cut(self, first_elapsed: float, last_elapsed: float) -> float:
        """The elapsed second from which samples count."""
        return first_elapsed + max(self.seconds, self.fraction * max(0.0, last_elapsed - first_elapsed))

    def __str__(self) -> str:
        return f"{self.fraction:.0%} of the run" if self.fraction else f"{self.seconds:g} s"


def parse_warmup(text: str) -> Warmup:
    """``30s``, ``2m``, ``45`` (seconds) or ``10%`` (of the sampled span)."""
    text = str(text).strip()
    if text.endswith("%"):
        try:
            value = float(text[:-1])
        except ValueError:
            raise UsageError(f"--sample-warmup {text!r}: expected e.g. 30s, 2m or 10%") from None
        if not 0 <= value < 100:
            raise UsageError(f"--sample-warmup {text!r}: a percentage must be in [0, 100)")
        return Warmup(fraction=value / 100)
    return Warmup(seconds=parse_duration(text, f"--sample-warmup {text!r} (e.g. 30s, 2m or 10%)"))


def least_squares_slope(xs: list[float], ys: list[float]) -> float | None:
    """Ordinary least-squares slope of ys over xs; ``None`` with fewer than two distinct xs."""
    n = len(xs)
    if n < 2:
        return None
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mean_x) ** 2 for x in xs)
    if sxx == 0:
        return None
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / sxx


def interpolate(x: float, xs: list[float], ys: list[float]) -> float | None:
    """Linear interpolation of a sorted series at ``x``, clamped to its ends; ``None`` when empty."""
    if not xs:
        return None
    i = bisect.bisect_left(xs, x)
    if i <= 0:
        return ys[0]
    if i >= len(xs):
        return ys[-1]
    x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
    return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)


@dataclass(frozen=True)
class Trend:
    """What one series did after warm-up."""

    points: int
    span_s: float
    first: float
    last: float
    maximum: float
    slope_per_hour: float | None
    slope_per_1k_requests: float | None
    requests: float | None

    @property
    def delta(self) -> float:
        return self.last - self.first


def trend(
    elapsed: list[float],
    values: list[float],
    *,
    warmup: Warmup = Warmup(),
    request_elapsed: list[float] | None = None,
    request_counts: list[float] | None = None,
) -> Trend | None:
    """The trend of one series (sorted by ``elapsed``) after ``warmup``; ``None`` with no point left.

    ``request_elapsed``/``request_counts`` is the run's cumulative request count over time (from Locust's stats);
    the per-1,000-requests slope regresses the values on it, interpolated at each sample's time.
    """
    if not elapsed:
        return None
    start = warmup.cut(elapsed[0], elapsed[-1])
    kept = [(t, v) for t, v in zip(elapsed, values) if t >= start]
    if not kept:
        return None
    ts, vs = [t for t, _ in kept], [v for _, v in kept]
    per_hour = least_squares_slope(ts, vs)
    per_1k = requests = None
    if request_elapsed and request_counts:
        # request_elapsed is non-empty here, so interpolate never returns None.
        counts = [cast(float, interpolate(t, request_elapsed, request_counts)) for t in ts]
        slope = least_squares_slope(counts, vs)
        per_1k = slope * 1000 if slope is not None else None
        requests = counts[-1] - counts[0]
    return Trend(
        len(kept),
        ts[-1] - ts[0],
        vs[0],
        vs[-1],
        max(vs),
        per_hour * 3600 if per_hour is not None else None,
        per_1k,
        requests,
    )


def format_bytes(value: float | None) -> str:
    """Bytes in MiB with one decimal (the unit the reference pages use); '-' for no value."""
    return "-" if value is None else f"{value / 1048576:,.1f} MiB"
