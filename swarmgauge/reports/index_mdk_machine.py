"""What bounded an MDK fleet run in the demo index: the generator's and the stand-in's CPU per measured step, and
whether the 2-core machine (or others loading it) was the bound; a row it bounded is shown, never judged."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd

from swarmgauge.core.verdict import GENERATOR_SOURCE, MACHINE_SOURCE
from swarmgauge.reports.index_figures import read_steps
from swarmgauge.reports.index_grades import MACHINE_SHARE

SATURATION = "saturation reads"
BURST = "action burst"


def step_row(steps: pd.DataFrame, label: str, name: str) -> pd.Series | None:
    """The measured row of one request name in the step of that label (None when it made no request)."""
    if steps.empty or "label" not in steps:
        return None
    rows = steps[(steps["label"] == label) & (steps["name"] == name)]
    rows = rows[pd.to_numeric(rows["requests"], errors="coerce") > 0]
    return None if rows.empty else rows.iloc[0]


def step_index(steps: pd.DataFrame, label: str) -> str | None:
    """The number of the step of that label, as ``mdk.json``'s ``cpu_by_step`` keys it."""
    rows = steps[steps["label"] == label] if not steps.empty and "label" in steps else steps
    return None if rows.empty else str(int(rows["step"].iloc[0]))


def split_cpu(cpu: dict[str, Any]) -> tuple[float, float]:
    """(the generator's, the stand-in's processes' together) CPU of one step's ``cpu_by_step`` entry, % of a core:
    every entry but the generator's and the whole machine's is a stand-in process."""
    generator = float(cpu.get(GENERATOR_SOURCE, 0.0))
    return generator, sum(float(v) for k, v in cpu.items() if k not in (GENERATOR_SOURCE, MACHINE_SOURCE))


def machine_load(run: Path, doc: dict[str, Any], cores: int | None = None) -> dict[str, Any]:
    """The generator's and the stand-in's CPU (% of a core) in the busiest measured step, and whether the machine
    was the bound there: the generator at its own CPU bound, or the machine's cores above 90 % busy in that step.

    The machine's busy CPU is measured in the step (``machine`` in ``cpu_by_step``: every process together), so what
    others used is that less our own. A run from before it was sampled falls back on the 1-minute load average at the
    run's end, less our own processes, at or above the cores: a lagging figure that also holds the run's own start-up.
    """
    cores = cores or os.cpu_count() or 1
    steps = read_steps(run)
    by_step = doc.get("cpu_by_step") or {}
    worst: dict[str, Any] = {"generator": None, "stand-in": None, "bound": False, "step": None, "cores": cores}
    for label in (SATURATION, BURST):
        index = step_index(steps, label)
        cpu = by_step.get(index or "", {})
        if not cpu:
            continue
        generator, stand_in = split_cpu(cpu)
        machine = cpu.get(MACHINE_SOURCE)
        busy = max(float(machine), generator + stand_in) if machine is not None else generator + stand_in
        flagged = steps[steps["label"] == label]
        generator_bound = "generator_bound" in flagged and bool(flagged["generator_bound"].astype(str).eq("True").any())
        bound = generator_bound or busy >= MACHINE_SHARE * 100 * cores
        if worst["step"] is None or busy > (worst.get("busy") or 0.0):
            worst = {"generator": generator, "stand-in": stand_in, "bound": bound, "step": label, "busy": busy}
            worst["others_cpu"] = None if machine is None else max(0.0, busy - generator - stand_in)
        worst["bound"] = worst["bound"] or bound
    worst["load"], worst["cores"] = doc.get("load_avg"), cores
    if worst.get("others_cpu") is not None:
        worst["others"] = worst["bound"] and worst["others_cpu"] >= (1 - MACHINE_SHARE) * 100 * cores
        return worst
    ours = ((worst["generator"] or 0.0) + (worst["stand-in"] or 0.0)) / 100.0
    # the run's own processes taken out, the rest of the load average still filled every core: others held the machine
    worst["others"] = worst["load"] is not None and float(worst["load"]) - ours >= cores
    worst["bound"] = worst["bound"] or worst["others"]
    return worst


def rate_needs(run: Path, doc: dict[str, Any], label: str, measured: float, page: float) -> dict[str, Any] | None:
    """What the page's rate would cost this machine: the generator's and the stand-in's CPU in the step of that
    label, per request measured, times the page's rate. None when the step has no CPU or measured no rate."""
    index = step_index(read_steps(run), label)
    cpu = (doc.get("cpu_by_step") or {}).get(index or "", {})
    if not cpu or measured <= 0:
        return None
    generator, stand_in = split_cpu(cpu)
    return {
        "generator": generator,
        "stand-in": stand_in,
        "ms": 10.0 * (generator + stand_in) / measured,
        "needs": (generator + stand_in) / measured * page,
    }


def short_of_cores(needs: dict[str, Any] | None, measured: float, page: float, cores: int) -> bool:
    """The run fell short of the page's rate, and reaching it would take more CPU than the machine's cores hold (at
    the CPU a request cost here): the 2 cores, not the stand-in's model, were the ceiling."""
    return needs is not None and measured < page and needs["needs"] >= MACHINE_SHARE * 100 * cores


def needs_text(needs: dict[str, Any], page: float, unit: str, load: dict[str, Any]) -> str:
    """``machine-bound: the page's 1,766 reads/s needs about 260 % of a core here ...``."""
    shown = (
        f"machine-bound: the page's {page:,.0f} {unit} needs about {needs['needs']:.0f} % of a core here "
        f"({needs['ms']:.2f} ms of CPU a request: generator {needs['generator']:.0f} % + stand-in "
        f"{needs['stand-in']:.0f} % of a core), more than {load['cores']} cores"
    )
    if load.get("load") is not None:
        shown += f"; load average {float(load['load']):.1f}"
    return shown


def generator_stall(step: pd.Series) -> dict[str, str]:
    """``{"machine": why}`` when the generator stalled in the burst (the steps table's own flag), else nothing.

    At 2,000 devices the Kernel's lane is 2 % short of 1,000 submits/s: evenly paced, its queue grows to tens of ms
    over the burst; a stall of the generator's process sends the submits it held back at once, a queue the lane
    never drains within the burst, so the acceptance measured is the generator's stall on this machine."""
    said = stall_words(step)
    return (
        {"machine": f"machine-bound: {said}, a clump the Kernel's lane cannot drain within the burst"} if said else {}
    )


def stall_words(step: pd.Series) -> str:
    """ "the generator stalled N ms in the burst (M submits late)" from the steps table's own flag and figures, or ""
    when it shows no stall in the step."""
    if str(step.get("generator_stalled", "")).strip() != "True":
        return ""
    stall = pd.to_numeric(step.get("generator_stall_ms"), errors="coerce")
    late = pd.to_numeric(step.get("stalled_requests"), errors="coerce")
    said = (
        f"the generator stalled {float(stall):.0f} ms in the burst" if not pd.isna(stall) else "the generator stalled"
    )
    return said + (f" ({int(late):,} submits late)" if not pd.isna(late) else "")


def machine_text(load: dict[str, Any]) -> str:
    if load.get("generator") is None:
        return ""
    shown = f"generator {load['generator']:.0f} %, stand-in {load['stand-in']:.0f} % of a core"
    if load.get("others_cpu") is not None:
        shown += f", the machine {load['busy']:.0f} % of {load['cores'] * 100} % (others {load['others_cpu']:.0f} %)"
        return ("machine-bound: " if load["bound"] else "") + shown
    if load.get("load") is not None:
        shown += f", load average {float(load['load']):.1f} on {load['cores']} cores"
        shown += " (others filled the machine)" if load.get("others") else ""
    return ("machine-bound: " if load["bound"] else "") + shown


def unjudged(row: dict[str, Any], why: str) -> dict[str, Any]:
    """A row the machine bounded: its figures shown beside the page's, its ratio replaced by why it is not judged
    (the index grades a ratio only), so a 2-core machine's limit never counts as the page's shape failing."""
    if row.get("x"):
        row["x"] = why
    return row


#: The page's red 5,000 / 1 Worker: 108 % of a core, averaged over the run
PAGE_WORKER_CPU = 108.0


def worker_cpu_why(doc: dict[str, Any], load: dict[str, Any] | None, worker: float) -> str:
    """Why the 5,000 / 1 Worker's CPU cannot reach the page's 108 % here, with the run's own numbers.

    The page gives no split of it. Its Worker's collection of every device every 10 s, 100 at a time (the harness's
    ``WORKER_CONF_DEFAULTS``), outlasts the interval at 5,000 devices, so it never idles, and it runs per-device jobs
    (``statsRtdItvMs`` 5 s, ``storeSnapItvMs`` 20 s into its store) the stand-in's Worker has not; the stand-in's
    reads cost their modelled ``--worker-read-us`` as lane time, not CPU. Burning the gap would be a setting that
    fixes the figure, and on 2 shared cores would put the run's other rows on a full machine."""
    headroom = float((doc.get("headroom") or {}).get("value") or 0.0)
    devices = int(str(doc.get("profile") or "5000x1").split("x")[0])
    cycle_s = 10.0 * headroom
    pulls = devices / cycle_s if cycle_s > 0 else 0.0
    shown = (
        "the page gives no split of its Worker's 108 %: at 5,000 devices that Worker's own collection (every device "
        "every 10 s, 100 at a time) outlasts the interval, so it never idles, and it runs per-device jobs every 5 s "
        "and 20 s (statsRtd, storeSnap into its store) this Worker has not; here the sweep"
    )
    if pulls > 0:
        shown += f" ({pulls:.0f} device pulls/s, cycle {cycle_s:.1f} s) and the reads cost {worker:.0f} %, "
        shown += f"{10.0 * worker / pulls:.2f} ms of CPU a pull,"
    else:
        shown += f" and the reads cost {worker:.0f} %,"
    shown += " their modelled 1.04 ms a read (--worker-read-us) being lane time, not CPU; burning the other "
    shown += f"{PAGE_WORKER_CPU - worker:.0f} % of a core would be a setting that fixes the figure"
    if load and load.get("generator") is not None:
        used = float(load["generator"]) + float(load["stand-in"])
        shown += f", on {load['cores']} cores its busiest step already fills to {used:.0f} % of a core"
    others = others_cpu(doc)
    if others is not None:
        # the page's own figures as a per-device cost: its Worker's CPU over one sweep of its devices
        per_pull_ms = PAGE_WORKER_CPU / 100.0 * PAGE_CYCLE_S * 1000.0 / PAGE_DEVICES
        shown += (
            f"; the page's figures as a cost a device pull ({PAGE_WORKER_CPU:.0f} % x {PAGE_CYCLE_S:g} s / "
            f"{PAGE_DEVICES:,} devices: {per_pull_ms:.2f} ms) put the Worker alone at the page's 108 %, beside the "
            f"{others:.0f} % the run's other processes used in a step: {PAGE_WORKER_CPU + others:.0f} % of "
            f"{100 * int((load or {}).get('cores') or os.cpu_count() or 1)} %"
        )
    return shown


#: the page's red 5,000 / 1 collection cycle: its one sweep figure
PAGE_CYCLE_S, PAGE_DEVICES = 12.4, 5000


def others_cpu(doc: dict[str, Any]) -> float | None:
    """The most CPU the run's processes but its Workers used in one step (% of a core): the generator and the rest of
    the stand-in, what a Worker shares the machine with."""
    found = []
    for cpu in (doc.get("cpu_by_step") or {}).values():
        generator, stand_in = split_cpu(cpu)
        found.append(generator + stand_in - sum(float(v) for k, v in cpu.items() if k.startswith("worker")))
    return max(found) if found else None
