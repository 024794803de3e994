"""What bounded a step: the generator's CPU, its stalls, or the target's CPU, read from a run directory's CSVs.

A step's figures describe the target only when neither side of the load ran out of room: a generator above 90 %
of a core, a generator whose event loop was held while requests were in flight (``steps.csv``'s
``generator_stalled``), or a target process above 90 % of its ceiling (one core, or its cgroup's CPU limit) during
the step. Each gets one sentence under the step tables; the target's CPU also feeds the trend sentence.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from swarmgauge.core import numbers
from swarmgauge.core.numbers import number
from swarmgauge.core.verdict import OWN_SOURCES
from swarmgauge.reports import trend
from swarmgauge.reports.resources import readable_source

TargetByStep = dict[int, trend.TargetCPU]


def target_cpu_by_step(run_dir: Path) -> TargetByStep:
    """Per step, the sampled target process busiest against its ceiling (the generator's own series left out).

    A process's ceiling is one core; a cgroup source that also sampled ``cpu_limit_percent`` (its ``cpu.max``) has
    that limit as its ceiling, so a container capped at half a core is bound at 45 %.
    """
    path = run_dir / "resources.csv"
    if not path.is_file():
        return {}
    frame = pd.read_csv(path)
    frame = frame[~frame["source"].isin(OWN_SOURCES)].dropna(subset=["step"])
    limits = frame[frame["metric"] == "cpu_limit_percent"].groupby("source")["value"].min().to_dict()
    cpu = frame[frame["metric"] == "cpu_percent"]
    found: TargetByStep = {}
    for (step, source), value in cpu.groupby(["step", "source"])["value"].max().items():
        target = trend.TargetCPU(float(value), readable_source(str(source)), float(limits.get(source, 100.0)))
        current = found.get(int(step))
        if current is None or target.cpu_percent / target.limit_percent > current.cpu_percent / current.limit_percent:
            found[int(step)] = target
    return found


def target_bound_sentence(steps: pd.DataFrame, target_cpu: TargetByStep) -> str | None:
    """The steps during which a sampled target ran above 90 % of its ceiling, said as generator-bound is."""
    labels = steps.drop_duplicates("step").set_index("step")["label"].to_dict() if not steps.empty else {}
    bound = [(step, target) for step, target in sorted(target_cpu.items()) if target.bound]
    if not bound:
        return None
    where = ", ".join(f"{labels.get(step, f'step {step}')} ({target.describe()})" for step, target in bound)
    return (
        f"Target-bound: a sampled target process ran above 90 % of its CPU ceiling during {where}; those steps "
        "measure the target's own CPU as the ceiling, not what is behind it (a store, a backend)."
    )


def generator_bound_sentence(steps: pd.DataFrame) -> str | None:
    bound = steps[(steps["name"] == "Aggregated") & (steps["generator_bound"].astype(str) == "True")]
    if bound.empty:
        return None
    labels = ", ".join(str(label) for label in bound["label"])
    return (
        f"Generator-bound: a load generator ran above 90 % CPU during {labels}; those steps' figures may "
        "describe the generator more than the target."
    )


def stalled_sentence(steps: pd.DataFrame) -> str | None:
    """Steps whose requests were in flight while the generator's own loop was held, with the longest hold."""
    if "generator_stalled" not in steps:
        return None
    rows = steps[(steps["name"] == "Aggregated") & (steps["generator_stalled"].astype(str) == "True")]
    if rows.empty:
        return None
    parts = [
        f"{r['label']} ({int(number(r.get('stalled_requests')) or 0)} requests, longest stall "
        f"{numbers.format_latency(number(r.get('generator_stall_ms')))})"
        for _, r in rows.iterrows()
    ]
    return (
        f"Generator-stalled: requests were in flight while the load generator's own event loop was held during "
        f"{', '.join(parts)}; their latency includes the stall, so those steps' tails may be the generator's."
    )
