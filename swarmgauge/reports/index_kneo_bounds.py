"""What bounds the kneo page's rows read over a drain or one step rather than a sweep (the queue batch, the worker
drain ratio, the soak's rate, the provider delay's overhead): kneo-serv's CPU over the window each figure is read in.

Each row keeps its figures and its colour unless its own measurements explain it: where kneo-serv's processes were
each near a full core (``CPU_CEILING_SHARE``, the sync sweeps' ceiling), the machine's cores were filled
(``MACHINE_SHARE``) or others filled them (the load average less our own sides), and the figure follows from the CPU
a run, the row is "machine-bound" with the figures (shown, never counted as holding); any other row that strays says
what was measured beside the model's figure and keeps its amber or red.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import pandas as pd

from swarmgauge.core.verdict import MACHINE_SOURCE
from swarmgauge.reports.index_figures import TOLERANCE
from swarmgauge.reports.index_grades import MACHINE, MACHINE_SHARE, misses
from swarmgauge.reports.index_kneo_profile import CPU_CEILING_SHARE, WHY
from swarmgauge.reports.index_kneo_rows import cpu_per_run_ms, side_of
from swarmgauge.reports.index_mdk_machine import unjudged

NEAR_CORE = "near a full core"


@dataclass(frozen=True)
class ServiceCpu:
    """kneo-serv's CPU over a figure's window: its processes summed (% of a core, the window's mean), how many, the
    window's length and how much of it the sampler covered; the generator's and PostgreSQL's CPU beside it
    (``others``), every process on the machine (``machine``, when sampled) and the load average the demo recorded at
    the workload's end."""

    share: float
    processes: int
    seconds: float
    sampled: float
    others: float = 0.0
    machine: float | None = None
    load: float | None = None

    def ms_a_run(self, runs_per_s: float) -> float | None:
        return cpu_per_run_ms({"kneo-serv": self.share}, runs_per_s)

    def bound(self, cores: int | None = None) -> str:
        """Why the machine, not the target, set the pace in the window ("" when nothing shows it did)."""
        cores = cores or os.cpu_count() or 1
        ours = self.share + self.others
        busy = max(ours, self.machine or 0.0)
        if self.share / self.processes >= CPU_CEILING_SHARE:
            return NEAR_CORE
        if busy >= MACHINE_SHARE * 100 * cores:
            return f"the machine {busy:.0f} % busy of {cores * 100} % (kneo-serv, the generator and PostgreSQL {ours:.0f} %)"
        if self.load is not None and self.load - ours / 100 >= cores:
            return f"others filled the machine (load average {self.load:.1f} on {cores} cores)"
        return ""

    def text(self) -> str:
        """``kneo-serv's one process at 84 % of a core`` (``its 8 processes at 8 % each, 62 % together``)."""
        if self.processes == 1:
            return f"kneo-serv's one process at {self.share:.0f} % of a core"
        return (
            f"kneo-serv's {self.processes} processes at {self.share / self.processes:.0f} % of a core each, "
            f"{self.share:.0f} % together"
        )

    def over(self, what: str) -> str:
        """``over the 24.6 s drain`` and, where the sampler stopped before it ended, how much of it it read."""
        said = f"over the {self.seconds:.1f} s {what}"
        if self.sampled < self.seconds - 0.05:
            said += f", sampled over its first {self.sampled:.1f} s and the rest taken at the last sample's share"
        return said


def window_cpu(
    resources: pd.DataFrame, length: float, load: float | None = None, start: float = 0.0
) -> ServiceCpu | None:
    """kneo-serv's CPU over ``length`` seconds from ``start`` (seconds into the run; a batch run's drain, first save
    to last terminal, starts as the run does, with its first submit): each sample weighted by the part of its interval
    (the round before it to its own) inside the window. Where the sampler stopped before the window ended (the run
    ends, the drain goes on), the rest is taken at the last sample's share. None without kneo-serv's CPU there."""
    if resources.empty or "elapsed_s" not in resources or length <= 0:
        return None
    ends = resources.groupby("round")["elapsed_s"].max().sort_index()
    begins = ends.shift().fillna(0.0)
    inside = (ends.clip(upper=start + length) - begins.clip(lower=start)).clip(lower=0.0)
    cpu = resources[resources["metric"] == "cpu_percent"]
    sides = cpu["source"].map(side_of)
    service = cpu[sides == "kneo-serv"]
    per_round = service.groupby("round")["value"].sum()
    weights = inside.reindex(per_round.index).fillna(0.0)
    if per_round.empty or weights.sum() <= 0:
        return None
    sampled = float(weights.sum())
    used = float((per_round * weights).sum()) + float(per_round[weights > 0].iloc[-1]) * max(0.0, length - sampled)
    others = mean_over(cpu[sides.isin(["generator", "PostgreSQL"])], inside)
    processes = max(1, service[service["round"].map(inside).fillna(0.0) > 0]["source"].nunique())
    machine = mean_over(cpu[cpu["source"] == MACHINE_SOURCE], inside)
    return ServiceCpu(used / length, processes, length, min(sampled, length), others or 0.0, machine, load)


def mean_over(samples: pd.DataFrame, inside: pd.Series) -> float | None:
    """The samples summed per round, their mean weighted by each round's seconds inside the window (None: none)."""
    per_round = samples.groupby("round")["value"].sum()
    weights = inside.reindex(per_round.index).fillna(0.0)
    return float((per_round * weights).sum() / weights.sum()) if weights.sum() > 0 else None


def step_start(resources: pd.DataFrame, started_at: Any, warmup_s: float) -> float:
    """Seconds into the run a step's measured part starts: its ``started_at`` (the run's clock) past the run's start,
    plus the plan's warm-up, which the step's figures leave out."""
    at = pd.to_numeric(started_at, errors="coerce")
    if resources.empty or "time" not in resources or pd.isna(at):
        return warmup_s
    return max(0.0, float(at) - float((resources["time"] - resources["elapsed_s"]).median())) + warmup_s


def why_last(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """A table's rows with its why column last, as the sync tables have it (a row's keys set its place otherwise)."""
    frame = pd.DataFrame(rows)
    return frame[[c for c in frame.columns if c != WHY] + [WHY]] if WHY in frame else frame


def mark(row: dict[str, Any], why: str, bound: bool) -> None:
    """The row's why; a row the machine bounded is shown, its ratio not judged (``unjudged``)."""
    row[WHY] = why
    if bound:
        unjudged(row, MACHINE)


def lead(cpu: ServiceCpu, what: str, cores: int | None) -> tuple[str, bool]:
    """kneo-serv's CPU over the window, said first, and whether it (or the machine) set the pace there."""
    reason = cpu.bound(cores)
    if not reason:
        return f"{cpu.text()} {cpu.over(what)}", False
    if reason == NEAR_CORE:
        return f"{MACHINE}: {cpu.text()}, {NEAR_CORE}, {cpu.over(what)}", True
    return f"{MACHINE}: {reason}; {cpu.text()} {cpu.over(what)}", True


def ceiling(per_run: float, page_rate: float, bound: bool) -> str:
    """What the CPU a run allows at a full core, what the page's rate would take here, and, where the process was
    not near a core, that its CPU did not set the rate."""
    said = (
        f"{per_run:.0f} ms of its CPU a run (the submit and the execution): a full core drains at most "
        f"{1000 / per_run:.0f} runs/s, and the page's {page_rate:.0f} runs/s would take {page_rate * per_run / 10:.0f} "
        "% of a core here"
    )
    return said if bound else f"{said}; below a core, its CPU alone did not set the rate"


def queue_bounds(
    throughput: dict[str, Any],
    waits: dict[str, tuple[dict[str, Any], float]],
    drain: dict[str, Any],
    cpu: ServiceCpu | None,
    page: tuple[float, int],
    cores: int | None = None,
) -> None:
    """The queue row's throughput and waits that stray, with why: the drain rate is kneo-serv's share of a core over
    its CPU a run; each wait is a share of the drain's length (half of it for the median run of a batch dispatched at
    once), so it is read as that share beside the page's (``page``: its runs/s and batch; ``waits``: each wait's row
    and the page's figure at that batch). A wait the drain explains (its share within the row's tolerance) is as
    bound as the drain."""
    rps, length = float(drain.get("runs_per_s") or 0.0), float(drain.get("drain_s") or 0.0)
    per_run = cpu.ms_a_run(rps) if cpu is not None else None
    if cpu is None or per_run is None or length <= 0:
        for stray in (r for r in [throughput, *(row for row, _ in waits.values())] if misses(r)):
            mark(stray, unsampled("drain"), False)
        return
    said, bound = lead(cpu, "drain", cores)
    if misses(throughput):
        mark(throughput, f"{said}; {ceiling(per_run, page[0], bound)}", bound)
    page_length = page[1] / page[0]
    for label, (row, page_wait) in waits.items():
        wait = pd.to_numeric(drain.get(f"wait_{label}_ms"), errors="coerce")
        if not misses(row) or pd.isna(wait):
            continue
        mine, theirs = float(wait) / 1000 / length, page_wait / 1000 / page_length
        tolerance = float(row[TOLERANCE])
        within = abs(mine / theirs - 1.0) <= tolerance
        shares = (
            f"{label} is {mine:.2f} of this {length:.1f} s drain, {theirs:.2f} of the page's {page_length:.1f} s "
            f"({mine / theirs:.2f}x, {'within' if within else 'outside'} ±{tolerance * 100:.0f} %)"
        )
        if not within:
            mark(row, f"{shares}: the drain rate does not explain it", False)
        elif bound:
            mark(row, f"{MACHINE}: the wait follows the drain: {shares}, and the drain's rate is kneo-serv's CPU", True)
        else:
            mark(row, f"the wait follows the drain: {shares}; the drain's rate is what strays ({said})", False)


def drain_bound(
    row: dict[str, Any],
    drains: dict[int, tuple[float, ServiceCpu | None]],
    delay_s: float | None,
    tolerance: float,
    cores: int | None = None,
) -> None:
    """Why N worker threads did not drain N x as fast as one, when they did not (``drains``: per worker count, the
    drain's runs/s and kneo-serv's CPU over it). Each run waits ``delay_s`` for its provider, which N threads overlap,
    and costs c of kneo-serv's CPU, which its one process runs in series: (d + c₁) / (d / N + c_N), c from each
    drain's own CPU, beside the measured ratio, and the c the page's ratio (less its tolerance) needs. Bound where
    kneo-serv (or the machine) set the pace of the N-thread drain and that model already falls short of the page's."""
    workers = max(drains)
    (one, cpu_1), (many, cpu_n) = drains[1], drains[workers]
    per_run_1 = cpu_1.ms_a_run(one) if cpu_1 is not None else None
    per_run_n = cpu_n.ms_a_run(many) if cpu_n is not None else None
    if not misses(row):
        return
    if not delay_s:
        mark(row, "the drains' provider delay is not in their run.json, so no model of them is drawn here", False)
        return
    if cpu_n is None or cpu_1 is None or per_run_1 is None or per_run_n is None:
        mark(row, unsampled("drains"), False)
        return
    c_1, c_n = per_run_1 / 1000, per_run_n / 1000
    model = (delay_s + c_1) / (delay_s / workers + c_n)
    target = workers * (1 - tolerance)
    needs = delay_s * (1 - target / workers) / (target - 1)
    measured = many / one
    why = (
        f"kneo-serv's CPU a run: {per_run_1:.0f} ms with 1 worker thread ({cpu_1.share:.0f} % of a core "
        f"{cpu_1.over('drain')}), {per_run_n:.0f} ms with {workers} ({cpu_n.share:.0f} % {cpu_n.over('drain')}). A "
        f"run waits {delay_s:g} s (d) for its provider, which {workers} threads overlap, and its CPU (c) runs in series "
        f"in the one process: (d + c₁) / (d / {workers} + c_{workers}) = {model:.2f}x beside the measured "
        f"{measured:.2f}x"
    )
    if measured > model:
        why += f", which lies between that (no CPU overlapping a wait) and {workers}x (every CPU overlapping one)"
    why += (
        f"; the page's {target:.1f}x (roughly {workers}x less {tolerance * 100:.0f} %) needs c ≤ {needs * 1000:.0f} ms"
    )
    reason = cpu_n.bound(cores)
    bound = bool(reason) and model < target
    if bound:
        why = f"{MACHINE}: {cpu_n.text() + ', ' + NEAR_CORE if reason == NEAR_CORE else reason}; {why}"
    mark(row, why, bound)


def soak_bound(
    row: dict[str, Any],
    runs_per_s: float,
    cpu: ServiceCpu | None,
    plan_rate: float | None,
    page_rate: float,
    cores: int | None = None,
) -> None:
    """Why the soak drained fewer runs a second than the page's: kneo-serv's share of a core over the soak and its CPU
    a run, the most a full core drains at that cost, and what the plan's rate and the page's would take here."""
    per_run = cpu.ms_a_run(runs_per_s) if cpu is not None else None
    if not misses(row):
        return
    if cpu is None or per_run is None:
        mark(row, unsampled("soak"), False)
        return
    said, bound = lead(cpu, "soak", cores)
    why = f"{said}; {ceiling(per_run, page_rate, bound)}"
    if plan_rate:
        why += f"; the plan's {plan_rate:g}/s would take {plan_rate * per_run / 10:.0f} %"
    mark(row, why, bound)


def delay_bound(
    rows: list[dict[str, Any]],
    cpu: ServiceCpu | None,
    runs_per_s: float,
    delay: tuple[int, float, float],
    page_ms: float,
    cores: int | None = None,
) -> None:
    """Why the provider-delay rows (throughput, p50, the overhead over the delay) stray. A run's overhead holds at
    least its own kneo-serv CPU (the run's path computing) and the generator's and PostgreSQL's, and what is left is
    no side computing (loopback, the store's I/O, hand-offs, a wait for a core); the throughput and p50 follow from
    the overhead (``delay``: the runs in flight, the provider's delay in s and the overhead in ms). Bound where
    kneo-serv's processes or the machine set the pace of the step."""
    throughput, p50, row = rows
    users, delay_s, overhead_ms = delay
    per_run = cpu.ms_a_run(runs_per_s) if cpu is not None else None
    if cpu is None or per_run is None:
        for stray in (r for r in rows if misses(r)):
            mark(stray, unsampled("step"), False)
        return
    said, bound = lead(cpu, "step", cores)
    if misses(row):
        tolerance = float(row[TOLERANCE])
        own, others = per_run / page_ms, cpu.others * 10 / runs_per_s
        why = (
            f"{said}; of the {overhead_ms:.0f} ms over the delay, {per_run:.0f} ms is kneo-serv's CPU a run, alone "
            f"{own:.2f}x the page's whole {page_ms:.0f} ms ({'within' if abs(own - 1) <= tolerance else 'outside'} "
            f"±{tolerance * 100:.0f} %), {others:.0f} ms the generator's and PostgreSQL's ({cpu.others:.0f} % of a "
            f"core beside it) and {max(0.0, overhead_ms - per_run - others):.0f} ms no side computing (loopback, the "
            "store's I/O, hand-offs, a wait for a core)"
        )
        mark(row, why, bound)
    follows = f"the {delay_s:g} s delay plus the {overhead_ms:.0f} ms overhead (its row)"
    if misses(p50):
        mark(p50, f"{MACHINE}: {follows}" if bound else follows, bound)
    if misses(throughput):
        allowed = users / (delay_s + overhead_ms / 1000)
        said = f"{users} runs in flight, each {follows}: {allowed:.1f} runs/s"
        mark(throughput, f"{MACHINE}: {said}" if bound else said, bound)


def unsampled(what: str) -> str:
    """A row that strays where the sampler read no CPU of kneo-serv in its window: nothing measured says why."""
    return f"no CPU of kneo-serv sampled within the {what}, so nothing measured here says what bounded it"
