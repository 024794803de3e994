"""The four reference pages as ``swarmgauge demo`` runs them: each page's workloads, scaled to a shared 2-core box.

A workload is one headless Locust run of one of our locustfiles against its embedded target, with a plan written
from the page's own bundled plan (``swarmgauge/plans/``) at shorter steps. ``scale`` stretches or shrinks every hold (the
whole ``demo --all`` at scale 1 plans about 6 minutes of load; start-up and reports brought it to 11 on a shared
2-core machine).
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from swarmgauge import plans

#: the embedded Mark server's bottleneck simulation: two bucket round trips of about 9.4 ms (lognormal, sigma 0.2), at
#: most 3 reads in the bucket at once: 3 / 18.8 ms = 160 reads/s, reached at 4 users (the page's knee); and a 45 ms
#: stall of the whole read path after about every 640 reads (4 s at the ceiling: ``targets/mark/stalls.py``), the
#: page's fixed tail past the knee
MARK_BOTTLENECK = (
    "--read-delay-ms 9.2 --reads-stat-head --backend-concurrency 3 --read-delay-jitter 0.2 "
    "--backend-stall-ms 45 --backend-stall-reads 640"
)


@dataclass(frozen=True)
class Workload:
    """One Locust run of a page: its folder name under the page, locustfile, extra options and plan.

    ``expected_exit`` is the exit code the run is meant to end with (a gate that must fail, a drill), so the index can
    tell an expected non-zero exit from a broken run. ``count_ends_s``: the load time of a run a count ends before
    its ``-t`` cap; ``answered_after_s``: requests in flight at the plan's end that are answered and counted after it
    (writers queued on the commit pacing), so the progress line's "planned" is the time the run takes.
    """

    name: str
    what: str
    locustfile: str
    options: tuple[str, ...]
    plan: dict[str, Any] | None
    expected_exit: int = 0
    count_ends_s: float | None = None
    answered_after_s: float = 0.0

    def planned_seconds(self) -> float:
        """The load time the plan (or ``-t``, or the count) holds (start-up and the report are on top)."""
        return self._held_seconds() + self.answered_after_s

    def _held_seconds(self) -> float:
        if self.count_ends_s is not None:
            return self.count_ends_s
        if self.plan is None:
            return _seconds(self.options[self.options.index("-t") + 1])
        stages = self.plan.get("stages")
        if stages:
            return sum(_seconds(stage["duration"]) for stage in stages)
        if "steps" in self.plan:
            return len(self.plan["steps"]) * _seconds(self.plan["step_time"])
        return _seconds(self.plan["duration"])


@dataclass(frozen=True)
class Page:
    """A reference page, the workloads that reproduce it, and why it cannot run here (``None`` when it can)."""

    name: str
    title: str
    reference: str
    workloads: tuple[Workload, ...]
    unavailable: Callable[[], str | None] = field(default=lambda: None)
    #: a process the page's workloads share, started with the first one's start-up and ended after the demo's loads
    #: (``cli/demo.py``): its environment is handed to every workload started from then on
    shared: Callable[[], SharedProcess] | None = None


class SharedProcess(Protocol):
    """What a page's shared process offers the demo: the environment its runs need, and its end."""

    def environment(self) -> dict[str, str]: ...

    def close(self) -> None: ...


def _seconds(text: Any) -> float:
    value = str(text).strip()
    if value.endswith("m"):
        return float(value[:-1]) * 60
    return float(value.rstrip("s"))


def least_at(least: float, scale: float) -> float:
    """A hold's floor at ``scale``: the floor itself at 1 and above; below 1 it shrinks with the scale as the hold
    does (a quarter at 0.25), to whole seconds, never under 2 s for a floor of 2 s or more (1 s of warm-up, 1 measured).

    A floor keeps a row's sample count at scale 1. Below it ``--scale`` is for a short run: a floored row is read over
    fewer samples, and the index says so (its header, and "few samples" on a row under what its tolerance needs).
    Time a workload's mechanism takes whatever the scale (a batch sent, a restart's boot, a queue's second round) is
    not a floor: it is ``needs`` (:func:`hold_seconds`), which never shrinks. Floors shrinking with the square root of
    the scale held 7 s of ``demo --all``'s 299 s at 0.25 (the queue batch's 4, the concurrent writers' 3, which their
    queue needs); the rest of its 45 s over a quarter of scale 1's 1,018 is ``needs``, 1 s switches and whole seconds."""
    if scale >= 1 or least <= 0:
        return least
    return min(least, max(float(math.ceil(least * scale)), min(least, 2.0)))


def hold_seconds(seconds: float, scale: float, least: float = 1.0, *, needs: float = 0.0) -> float:
    """``seconds`` stretched by ``scale`` to whole seconds, not under the floor ``least`` has at that scale, nor
    under ``needs``: time the workload takes whatever the scale (a fixed batch sent), which never shrinks."""
    return max(least_at(least, scale), needs, float(round(seconds * scale)))


def hold(seconds: float, scale: float, least: float = 1.0, *, needs: float = 0.0) -> str:
    """:func:`hold_seconds` as a plan's duration (``"12s"``): every page's holds go through here."""
    return f"{hold_seconds(seconds, scale, least, needs=needs):g}s"


def _base(name: str) -> dict[str, Any]:
    import yaml

    return yaml.safe_load(plans.bundled(name).read_text(encoding="utf-8"))


def _ramp(
    base: str,
    steps: list[int],
    step_time: float,
    warmup: float,
    scale: float,
    *,
    least: tuple[float, float] = (1.0, 0.0),
    **more: Any,
) -> dict[str, Any]:
    """A page's step-ramp plan at the demo's steps and holds, keeping its SLOs and reference rows; ``least``: the
    floors of the step and of its warm-up (shrinking below scale 1 as :func:`least_at` says)."""
    plan = {**copy.deepcopy(_base(base)), **more}
    plan.update(
        name=f"demo-{base}",
        kind="step_ramp",
        steps=steps,
        step_time=hold(step_time, scale, least[0]),
        warmup=hold(warmup, scale, least[1]),
    )
    return plan


def reads_plan(steps: list[int], step_time: float, warmup: float, scale: float = 1.0) -> dict[str, Any]:
    """The demarkus reads plan (pooled FETCH, with the page's figures) at the demo's steps."""
    return _ramp("demarkus-reads", steps, step_time, warmup, scale)


def reads_workload(steps: list[int], step_time: float, warmup: float, scale: float = 1.0) -> Workload:
    return Workload(
        "reads",
        "QUIC FETCH, pooled, against the ~160 req/s simulated bucket",
        "demarkus_reads.py",
        ("FetchUser", "--mark-embedded-args", MARK_BOTTLENECK),
        reads_plan(steps, step_time, warmup, scale),
    )


def _demarkus(scale: float) -> Page:
    from swarmgauge.cli.demo_demarkus_reads import read_workloads
    from swarmgauge.cli.demo_demarkus_writes import writes_and_mcp

    return Page(
        "demarkus",
        "demarkus kind bench: reads, writes, MCP session churn",
        "demarkus-kind-bench.md",
        (*read_workloads(scale), *writes_and_mcp(scale)),
    )


POSTGRES_SYNC = [
    {"name": "run sync", "users": 1, "rps": 79, "p50_ms": 8.1, "p99_ms": 8.9},
    {"name": "run sync", "users": 8, "rps": 77, "p50_ms": 72.3, "p99_ms": 139.0},
    {"name": "run sync", "users": 16, "rps": 76, "p50_ms": 149.9, "p99_ms": 324.6},
    {"name": "run sync", "users": 32, "rps": 75, "p50_ms": 260.4, "p99_ms": 804.5},
]


def _no_postgres() -> str | None:
    from swarmgauge.targets.postgres import PostgresError, find_bindir

    try:
        find_bindir()
    except PostgresError as exc:
        return f"no PostgreSQL here ({exc})"
    return None


#: the variable the kneo target reads first for its Python >= 3.12 (``targets/kneo/venv.py``)
KNEO_PYTHON_VARIABLE = "SWARMGAUGE_KNEO_PYTHON"


def start_shared(page: Page) -> SharedProcess | None:
    """Start the page's shared process and hand its environment to the workloads started from now on (None, with a
    line, when it cannot start: each workload then starts as without it)."""
    from swarmgauge.errors import SwarmgaugeError

    if page.shared is None:
        return None
    try:
        process = page.shared()
    except (OSError, SwarmgaugeError) as exc:
        print(f"{page.name}: no process shared by its workloads ({exc}): each starts on its own", flush=True)
        return None
    os.environ.update(process.environment())
    return process


def end_shared(process: SharedProcess | None) -> None:
    """End a page's shared process; the workloads started after this get no environment of it."""
    if process is not None:
        for name in process.environment():
            os.environ.pop(name, None)
        process.close()


def _no_kneo() -> str | None:
    """Why kneo-serv cannot run here, or None. The Python found is handed to the workloads' processes through
    :data:`KNEO_PYTHON_VARIABLE` (unless it is set): it is the one they would find first, and each kneo workload's
    start-up looked again, past two pyenv shims that fail (0.3 s of a quiet machine, 1.4 s at load 9, 9 times)."""
    from swarmgauge.targets.kneo import NoSuitablePython, find_python

    try:
        interpreter, _version = find_python()
    except NoSuitablePython as exc:
        return f"kneo-serv needs Python >= 3.12: {exc}"
    os.environ.setdefault(KNEO_PYTHON_VARIABLE, interpreter)
    return _no_postgres()


def _kneo(scale: float) -> Page:
    from swarmgauge.cli.demo_kneo_rows import anchored, kneo_rows, queue_batch

    postgres = anchored(_ramp("kneo-sync-sweep", [1, 8, 16, 32], 9, 2, scale), scale)
    postgres["reference"] = {"page": "kneo-serv-performance.md (postgres / sync)", "rows": POSTGRES_SYNC}
    pressure = {
        "name": "demo-kneo-backpressure",
        "description": "16 queued submitters against a queue capped at 4: shed load, no phantom rows",
        "kind": "soak",
        "users": 16,
        "duration": hold(8, scale),  # sheds about 13 submits a second: 8 s is ~100 sheds, the shape's evidence
        "slos": ["kneo_mismatches==0"],
    }
    return Page(
        "kneo",
        "kneo-serv performance: sync sweeps, queue mode, store-bound PostgreSQL, provider delay, soak, backpressure",
        "kneo-serv-performance.md",
        (
            Workload(
                "sqlite-sync",
                "sync runs on SQLite, 1 to 16 concurrent",
                "kneo_dispatch.py",
                ("--kneo-embedded-store", "sqlite", "--sample-interval", "1"),
                anchored(_ramp("kneo-sync-sweep", [1, 4, 8, 16], 9, 2, scale), scale),
            ),
            Workload(
                "postgres-sync",
                "sync runs on PostgreSQL (fsync on, as the page's), 1 to 32 concurrent",
                "kneo_dispatch.py",
                ("--kneo-embedded-store", "postgres", "--kneo-embedded-fsync", "--sample-interval", "1"),
                postgres,
            ),
            queue_batch(scale),
            Workload(
                "backpressure",
                "queued runs against KNEO_SERV_MAX_QUEUE_DEPTH=4",
                "kneo_dispatch.py",
                ("--kneo-embedded-store", "postgres", "--kneo-mode", "queued", "--kneo-embedded-queue-depth", "4"),
                pressure,
                expected_exit=1,  # the shed submits are 503 failures by design, and no SLO covers failures
            ),
            *kneo_rows(scale),
        ),
        _no_kneo,
        _kneo_fork_template,
    )


def _kneo_fork_template() -> SharedProcess:
    """kneo-serv imported once for the page's ten workloads, not at each one's start-up (``fork_template.py``)."""
    from swarmgauge.targets.kneo.service import launch_fork_template

    return launch_fork_template()  # the Python _no_kneo found, through KNEO_PYTHON_VARIABLE


def _mdk(scale: float) -> Page:
    from swarmgauge.cli.demo_mdk import workloads

    return Page(
        "mdk",
        "MDK benchmark results: the five fleets' verdicts, latencies, read throughput, the burst, the three drills",
        "mdk-benchmark-results.md",
        workloads(scale),
    )


def _brain(scale: float) -> Page:
    from swarmgauge.cli.demo_brain_rows import brain_rows

    return Page(
        "brain",
        "2dph brain PERF: the leak and zombies before the fix, flat after it; the buffer pool before and after",
        "2dph-brain-perf.md",
        brain_rows(scale),
    )


#: the order ``--all`` runs them in: kneo last, whose start-ups (1-2.5 s each) render the reports of the MDK drills and
#: the brain runs before it (a fraction of a second between them); with brain last, 6 reports waited for the end (5 s)
BUILDERS: dict[str, Callable[[float], Page]] = {
    "demarkus": _demarkus,
    "mdk": _mdk,
    "brain": _brain,
    "kneo": _kneo,
}


def pages(names: list[str], scale: float = 1.0) -> list[Page]:
    """The named pages in the order asked (every page for an empty list)."""
    return [BUILDERS[name](scale) for name in (names or list(BUILDERS))]
