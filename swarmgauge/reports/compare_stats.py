"""The statistics behind ``swarmgauge compare``: a step's per-second samples, and whether NEW's differ from BASE's.

A step's one p99 is one draw: a stall of one second on a loaded machine doubles it, and a flat tolerance on it fires
on noise. ``timeline.csv`` keeps each second's request count, p50 and p99; the seconds of a step are the sample, and a
change is a regression only when the Mann-Whitney U test (normal approximation with tie correction; no scipy) finds
the two samples differ (p below :data:`ALPHA`) AND the Hodges-Lehmann shift (the median of every NEW - BASE pair) is
worse than the tolerance with its whole 95 % confidence interval (:meth:`Shift.beyond`): a shift whose interval
reaches back inside the tolerance may be noise of that size. One slow second moves a rank, not the verdict; a doubled
delay moves every second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

ALPHA = 0.05
#: Requests a second (a timeline bucket) needs on every second of both sides before its p99 is tested: the p99 of n
#: requests rests on its n / 100 slowest, and a quantile estimate wants about ten beyond it. With fewer, each
#: second's p99 is its one or two slowest requests, one scheduler hiccup each: on a loaded 2-core machine two
#: identical 6 s runs at ~170 req/s moved their p99 seconds by up to +60 % together (benchmarks/compare_noise.py),
#: as far as a doubled delay moves them.
MIN_TAIL_REQUESTS = 1000
#: Seconds a step needs on each side before it is tested: with 4 and 4 the smallest two-sided p (complete
#: separation) is 0.021, under ALPHA; with 3 and 3 it is 0.05, so no change could ever be told from noise.
MIN_SECONDS = 4
Z_95 = 1.959964


@dataclass(frozen=True)
class Shift:
    """One metric of one step compared: the shift of NEW's seconds from BASE's, as % of BASE's median, its 95 %
    confidence interval, and the Mann-Whitney p-value."""

    shift_percent: float
    low_percent: float
    high_percent: float
    p_value: float
    base_seconds: int
    new_seconds: int

    def beyond(self, tolerance_percent: float, worse: int) -> bool:
        """Significant, and the whole confidence interval worse than the tolerance (``worse``: +1 up, -1 down)."""
        nearest = min(self.low_percent * worse, self.high_percent * worse)
        return self.p_value < ALPHA and nearest > tolerance_percent

    def shown(self) -> str:
        return (
            f"{self.shift_percent:+.1f} % [{self.low_percent:+.1f}, {self.high_percent:+.1f}] "
            f"p={self.p_value:.3f} ({self.base_seconds}/{self.new_seconds} s)"
        )

    def described(self) -> str:
        return (
            f"per-second shift {self.shift_percent:+.1f} % (95 % CI {self.low_percent:+.1f} to "
            f"{self.high_percent:+.1f} %), Mann-Whitney p = {self.p_value:.3f} over {self.base_seconds} and "
            f"{self.new_seconds} s"
        )


def mann_whitney_p(base: np.ndarray, new: np.ndarray) -> float:
    """Two-sided p-value of the Mann-Whitney U test, normal approximation with the tie correction of the variance."""
    n1, n2 = len(base), len(new)
    ranks = pd.Series(np.concatenate([base, new])).rank(method="average").to_numpy()
    u = ranks[n1:].sum() - n2 * (n2 + 1) / 2.0
    n = n1 + n2
    _, ties = np.unique(np.concatenate([base, new]), return_counts=True)
    tie_term = float(((ties**3) - ties).sum()) / (n * (n - 1))
    variance = n1 * n2 / 12.0 * ((n + 1) - tie_term)
    if variance <= 0:
        return 1.0  # every value tied: nothing tells the samples apart
    z = (u - n1 * n2 / 2.0) / math.sqrt(variance)
    return float(math.erfc(abs(z) / math.sqrt(2.0)))


def hodges_lehmann(base: np.ndarray, new: np.ndarray) -> tuple[float, float, float]:
    """(shift, low, high): the median of the pairwise differences NEW - BASE, and its 95 % confidence interval from
    their order statistics (the normal approximation of the rank-sum's critical value)."""
    differences = np.sort(np.subtract.outer(new, base).ravel())
    n1, n2 = len(base), len(new)
    k = int(math.floor(n1 * n2 / 2.0 - Z_95 * math.sqrt(n1 * n2 * (n1 + n2 + 1) / 12.0)))
    k = min(max(k, 1), len(differences))
    return float(np.median(differences)), float(differences[k - 1]), float(differences[len(differences) - k])


def compare_samples(base: np.ndarray, new: np.ndarray) -> Shift | None:
    """The comparison of two samples of one metric, or None when either has fewer than MIN_SECONDS or BASE's median is
    zero (no scale to state a shift in %)."""
    base, new = base[~np.isnan(base)], new[~np.isnan(new)]
    if len(base) < MIN_SECONDS or len(new) < MIN_SECONDS:
        return None
    scale = float(np.median(base))
    if scale == 0:
        return None
    shift, low, high = hodges_lehmann(base, new)
    return Shift(
        shift / scale * 100.0,
        low / scale * 100.0,
        high / scale * 100.0,
        mann_whitney_p(base, new),
        len(base),
        len(new),
    )


def fewest_requests(seconds: pd.DataFrame) -> float | None:
    """The fewest requests in any of a step's seconds (None when the timeline did not say)."""
    if "requests" not in seconds or seconds.empty:
        return None
    return float(seconds["requests"].min())


def step_seconds(run_dir: Path) -> dict[int, pd.DataFrame]:
    """Per step index, its whole seconds from ``timeline.csv`` (``rps``, ``p50_ms``, ``p99_ms``, ``requests``), {}
    without one.

    A bucket is labelled with the step current when it closed, so each step's first bucket straddles the change of
    users (or the run's start) and is left out, as is the run's last bucket (cut by the stop)."""
    path = run_dir / "timeline.csv"
    if not path.is_file():
        return {}
    timeline = pd.read_csv(path)
    if timeline.empty or not {"time", "step", "requests", "p50_ms", "p99_ms"} <= set(timeline):
        return {}
    timeline = timeline.sort_values("time").iloc[:-1]
    gaps = timeline["time"].diff().dropna()
    bucket = float(gaps[gaps > 0].min()) if (gaps > 0).any() else 1.0
    found = {}
    for step, group in timeline.groupby("step"):
        inner = group.iloc[1:]
        found[int(step)] = pd.DataFrame(
            {
                "rps": inner["requests"].to_numpy(dtype=float) / bucket,
                "p50_ms": pd.to_numeric(inner["p50_ms"], errors="coerce").to_numpy(dtype=float),
                "p99_ms": pd.to_numeric(inner["p99_ms"], errors="coerce").to_numpy(dtype=float),
                "requests": inner["requests"].to_numpy(dtype=float),
            }
        )
    return found
