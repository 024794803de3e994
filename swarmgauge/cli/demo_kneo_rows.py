"""The kneo-serv page's rows beyond its sync sweeps: the queue mode as its harness runs it, PostgreSQL against
SQLite where the store is the bottleneck, the 0.5 s provider delay and the 1-hour soak (scaled).

Every PostgreSQL here keeps fsync on, as the page's. ``scale`` shortens holds and the soak; the queue batch is the
page's 500 runs at scale 1 and above, and below it shrinks as a hold's floor does (with the scale: 125 at 0.25), since
its drain is most of the row's time. Its p50 is half the batch's drain time, so the index reads a smaller batch's
waits against the page's scaled to that batch, and says so on the row (at --scale 0.25, paired runs of the row alone:
125 runs waited p50 1.76 and 1.61 s against the page's 1.26 scaled, 1.40x and 1.28x; 250 runs 3.18 and 3.07 s against
2.52, 1.26x and 1.22x; all green at +-50 %, 4 s shorter; in full runs on a busier hour the p50 went machine-bound
at either size: 125 runs 1.56x and 1.77x, 250 runs 1.56x).
"""

from __future__ import annotations

import math
from typing import Any

from swarmgauge.cli.demo_pages import Workload, hold, hold_seconds, least_at

QUEUE_BATCH = 500  # the page's --total-runs 500
QUEUE_DISPATCHERS = 8  # the page's queue row: concurrency 8, one worker per process
#: time the dispatchers have to submit the whole batch at scale 1, and the least at any scale: 500 submits at ~35/s
#: with fsync on here (a 5 s hold dispatched 177, 16 s at load 10 dispatched 405; at load < 3 the whole batch was
#: dispatched and drained in 13 s), a smaller batch's in proportion; the drain goes on after it, within
#: --kneo-drain-timeout
QUEUE_DISPATCH_S = 24.0
QUEUE_DISPATCH_LEAST_S = 20.0
PROVIDER_DELAY_S = 0.5
DELAY_PROCESSES = 8  # one service process per concurrent run (see provider_delay)
SOAK_PAGE_S = 3600.0
SOAK_SECONDS_AT_SCALE_1 = 60.0  # 1 hour scaled to one minute: the RSS and thread trend, not the run count
SOAK_WORKERS = 16  # the page's soak: 16 workers, multi-worker queue drain
#: the soak's arrivals (runs/s), dispatched without waiting for each run: the page's soak ran 158,745 runs in the hour
#: (44/s), 0.57 of its PostgreSQL sync ceiling (77/s); 0.57 of this machine's (about 41/s) is 24/s
SOAK_RATE = 24.0
#: the page's worker idle poll (kneo-serv's default, KNEO_SERV_WORKER_IDLE_POLL_SECONDS): a worker that found the
#: queue empty sleeps this long, and nothing wakes it on dispatch, so the backlog between polls is the soak's peak
SOAK_IDLE_POLL_S = 1.0
#: the page's "N worker threads drain roughly N x faster on provider-bound loads", scaled: a batch drained by 1 and by
#: 4 worker threads, each run waiting DRAIN_DELAY_S for its simulated provider (1 worker: ~7 s; 4 workers: ~2 s)
DRAIN_WORKERS = (1, 4)
DRAIN_BATCH = 32
DRAIN_DELAY_S = 0.2
#: 32 submits take about 1 s on a quiet machine (a 2 s hold left 8 unsent at load 5); the drain goes on after the hold
DRAIN_DISPATCH_S = 4.0
STORE_BOUND_PROCESSES = 2  # two service processes: kneo-serv's own CPU stops being the ceiling (2 cores here)
#: every PostgreSQL of these rows, sampled each second (the CPU of each side per step)
POSTGRES_FSYNC = ("--kneo-embedded-store", "postgres", "--kneo-embedded-fsync", "--sample-interval", "1")


#: A sync sweep's concurrency-1 step (its anchor) is what every other step is read against (runs/s ÷ c=1), so its
#: noise and this machine's drift are in each of them. Pooled over the whole sweep (one c=1 step at each end), two
#: clean-clone runs put the two ends 24 % (SQLite) and 17 % (PostgreSQL) apart in kneo-serv's CPU a run, and the run
#: before +10 % and -6 %: not a warm-up of kneo-serv (it shows none run alone) but this VM's drift over tens of
#: seconds (a probe's fixed loops slowed up to 54 % with no steal: ``benchmarks/kneo_anchor_drift.py``). At scale 1
#: and above the c=1 step is measured between every two steps (1, 4, 1, 8, 1, 16, 1) and each step is read against the
#: c=1 steps just before and after it, pooled (``reports/index_kneo_anchor.py``): a drift of tens of seconds hits a step
#: and its anchor alike. The anchor steps are shorter (``ANCHOR_S``) so the two sweeps grow by 20 s in all.
BRACKET_USERS = 1
#: an interleaved anchor step at scale 1: 2 s of warm-up (the second after a step change has few runs while the users
#: change) and 5 s measured, about 200 runs at this machine's ~40/s; a step's two neighbours pool to ~400 runs over
#: 10 s against the 14 s of the two 9 s steps the bracket pooled. Within a c=1 step where the machine held still, two
#: clean-clone runs counted runs a second with an sd of 1.4-3.2 (3-8 %), so a 10 s pool's runs/s carries 1-2.5 %, a
#: quarter of the flat tolerance (10 %) or less; the same runs' first c=1 step rose 34 to 42 runs a second within its
#: own 6 s, the drift the interleaving reads beside each step
#: (``benchmarks/kneo_anchor_spread.py``). Six page runs at scale 1 on the shared machine (load 1.5 to 7.3): at load
#: 1.5 the SQLite sweep's c=1 steps went 39.2, 32.0, 33.2, 22.6 runs/s and its steps read 1.05, 1.03, 0.97 against
#: their neighbours (all green), 1.21, 1.09, 0.87 against the two ends; a 5 s anchor takes a one-second dip whole (at
#: load 1.8, c=8 read 1.12 against its neighbours, 1.02 against the ends)
ANCHOR_S = 7.0
#: below this scale the sweep keeps one c=1 step at each end (the bracket): ``--scale 0.25`` is past its 6-minute
#: budget, and anchors short enough not to grow it (1 s, no warm-up) would be mostly the second a step change empties
INTERLEAVE_FROM_SCALE = 1.0


def anchored(plan: dict[str, Any], scale: float = 1.0) -> dict[str, Any]:
    """A sync sweep's step ramp (its holds already scaled) as the same steps written as stages with its concurrency-1
    step (the anchor) measured again: at ``scale`` 1 and above between every two steps, each anchor ``ANCHOR_S``
    scaled, so each step has its own neighbouring anchors; below it once more after the last step, the bracket of the
    machine's drift over the sweep."""
    users = list(plan["steps"])
    step = {"duration": plan["step_time"], "warmup": plan["warmup"]}
    anchor = {"duration": hold(ANCHOR_S, scale), "warmup": plan["warmup"]}
    stages = []
    if users and users[0] == BRACKET_USERS and len(users) > 1:
        interleave = scale >= INTERLEAVE_FROM_SCALE
        one = anchor if interleave else step
        stages.append({"users": BRACKET_USERS, **one})
        for count in users[1:]:
            stages.append({"users": count, **step})
            if interleave or count == users[-1]:
                stages.append({"users": BRACKET_USERS, **one})
    else:
        stages = [{"users": count, **step} for count in users]
    stages = [{"label": f"{stage['users']} users", **stage} for stage in stages]
    kept = {key: value for key, value in plan.items() if key not in ("kind", "steps", "step_time", "warmup")}
    return {**kept, "kind": "stages", "stages": stages}


def _hold(seconds: float, scale: float, least: float = 3.0) -> str:
    return hold(seconds, scale, least)


def _steps(name: str, steps: list[int], hold: float, scale: float, **more: Any) -> dict[str, Any]:
    return {
        "name": f"demo-kneo-{name}",
        "kind": "step_ramp",
        "steps": steps,
        "step_time": _hold(hold, scale),
        "warmup": _hold(2, scale, 1.0),
        "slos": ["kneo_mismatches==0"],
        **more,
    }


def queue_batch_size(scale: float) -> int:
    """The queue row's batch: the page's 500 at scale 1 and above, shrinking below it as a floor does (125 at 0.25)."""
    return round(least_at(float(QUEUE_BATCH), scale))


def queue_batch(scale: float) -> Workload:
    """The page's queue mode: 8 dispatchers submit the whole batch, then one worker drains it (wait read from the
    store), instead of 8 closed-loop submitters that never let more than 8 runs queue."""
    batch = queue_batch_size(scale)
    sending = math.ceil(QUEUE_DISPATCH_LEAST_S * batch / QUEUE_BATCH)  # the batch's sending at this machine's rate
    page = "" if batch == QUEUE_BATCH else f" (the page's {QUEUE_BATCH} shortened with --scale)"
    plan = {
        "name": "demo-kneo-queue-batch",
        "description": f"{QUEUE_DISPATCHERS} dispatchers submit {batch} runs{page}, then one worker drains them",
        "kind": "soak",
        "users": QUEUE_DISPATCHERS,
        "duration": hold(QUEUE_DISPATCH_S, scale, needs=sending),  # no floor: the batch's sending
        "slos": ["kneo_mismatches==0"],
    }
    options = (*POSTGRES_FSYNC, "--kneo-mode", "batch", "--kneo-batch", str(batch))
    return Workload(
        "postgres-queue",
        f"queue mode on PostgreSQL: {batch} runs dispatched{page}, then drained by one worker",
        "kneo_dispatch.py",
        (*options, "--kneo-drain-timeout", "150"),
        plan,
    )


def store_bound(scale: float, store: str = "postgres") -> Workload:
    """``store`` over two service processes at 8 concurrent (PostgreSQL at 1 too): where one process's CPU no longer
    caps the runs, the store's write path is what the figure shows. SQLite gets as many processes as PostgreSQL, as a
    user scaling kneo-serv would run them: each process its own connection to the one file, whose lock lets one writer
    through at a time (the page's single writer)."""
    chosen = POSTGRES_FSYNC if store == "postgres" else ("--kneo-embedded-store", "sqlite", "--sample-interval", "1")
    options = (*chosen, "--kneo-embedded-processes", str(STORE_BOUND_PROCESSES))
    steps = [1, 8] if store == "postgres" else [8]  # at 1 one process serves: the 1-process sweep's row
    name = "PostgreSQL" if store == "postgres" else "SQLite (one file)"
    return Workload(
        f"{store}-x2-sync",
        f"sync runs on {name} over {STORE_BOUND_PROCESSES} service processes, {' and '.join(map(str, steps))} "
        "concurrent",
        "kneo_dispatch.py",
        options,
        _steps(f"{store}-x2-sync", steps, 9, scale),
    )


def provider_delay(scale: float) -> Workload:
    """8 concurrent sync runs, each waiting 0.5 s, over 8 service processes: kneo-serv 1.2.0 runs a sync run inside
    its async route without leaving the event loop (``create_run`` calls ``run_from_spec``), so one process runs one
    at a time (8 at once on one process: 1.8 runs/s, p50 4.4 s); the page's harness has a thread per run."""
    options = (
        *POSTGRES_FSYNC,
        "--kneo-embedded-provider-delay",
        f"{PROVIDER_DELAY_S:g}",
        "--kneo-embedded-processes",
        str(DELAY_PROCESSES),
    )
    return Workload(
        "provider-delay",
        f"sync runs on PostgreSQL, 8 concurrent over {DELAY_PROCESSES} processes, each waiting "
        f"{PROVIDER_DELAY_S:g} s for its simulated provider",
        "kneo_dispatch.py",
        options,
        _steps("provider-delay", [8], 12, scale),
    )


def soak(scale: float) -> Workload:
    """The 1-hour soak shortened by ``scale`` (one minute at scale 1): runs arrive at ``SOAK_RATE`` without waiting for
    each other (a dispatcher, not closed-loop submitters that cap the backlog at their own count) and 16 worker
    threads drain them at kneo-serv's default idle poll; the service's RSS, threads and backlog sampled throughout."""
    seconds = hold_seconds(SOAK_SECONDS_AT_SCALE_1, scale, 15.0)
    plan = {
        "name": "demo-kneo-soak",
        "description": f"the page's 1-hour soak in {seconds:g} s: {SOAK_RATE:g} runs/s dispatched, {SOAK_WORKERS} workers",
        "kind": "soak",
        "rate": SOAK_RATE,
        "max_users": SOAK_WORKERS,
        "duration": f"{seconds:g}s",
        "warmup": _hold(3, scale, 1.0),
        "slos": ["kneo_mismatches==0", "fail_ratio==0"],
    }
    options = (
        *POSTGRES_FSYNC,
        "--kneo-mode",
        "batch",
        "--kneo-batch",
        str(int(SOAK_RATE * (seconds + 10) * 2)),  # more tickets than the plan's arrivals: the rate ends the soak
        "--kneo-embedded-workers",
        str(SOAK_WORKERS),
        "--kneo-embedded-idle-poll",
        f"{SOAK_IDLE_POLL_S:g}",
    )
    return Workload("soak", f"the 1-hour soak scaled to {seconds:g} s", "kneo_dispatch.py", options, plan)


def drain(workers: int, scale: float) -> Workload:
    """A batch of ``DRAIN_BATCH`` provider-bound runs (each waits ``DRAIN_DELAY_S``) drained by ``workers`` worker
    threads of one process: the page's "N workers drain roughly N x faster" at 1 and 4 (``scale`` does not shorten
    it: the batch is what the drain rate is read over)."""
    plan = {
        "name": f"demo-kneo-drain-{workers}",
        "description": f"{DRAIN_BATCH} runs waiting {DRAIN_DELAY_S:g} s each, drained by {workers} worker(s)",
        "kind": "soak",
        "users": 8,
        "duration": f"{DRAIN_DISPATCH_S:g}s",
        "slos": ["kneo_mismatches==0"],
    }
    options = (
        *POSTGRES_FSYNC,
        "--kneo-mode",
        "batch",
        "--kneo-batch",
        str(DRAIN_BATCH),
        "--kneo-embedded-workers",
        str(workers),
        "--kneo-embedded-provider-delay",
        f"{DRAIN_DELAY_S:g}",
        "--kneo-drain-timeout",
        "60",
    )
    return Workload(
        f"drain-{workers}",
        f"{DRAIN_BATCH} runs, each waiting {DRAIN_DELAY_S:g} s for its provider, drained by {workers} worker "
        f"thread{'s' if workers > 1 else ''}",
        "kneo_dispatch.py",
        options,
        plan,
    )


def kneo_rows(scale: float) -> tuple[Workload, ...]:
    """The workloads the page builder adds after its sync sweeps and backpressure."""
    return (
        store_bound(scale),
        store_bound(scale, "sqlite"),
        provider_delay(scale),
        *(drain(n, scale) for n in DRAIN_WORKERS),
        soak(scale),
    )
