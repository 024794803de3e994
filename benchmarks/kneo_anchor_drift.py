"""Why a kneo sync sweep's concurrency-1 step (its anchor) can cost kneo-serv 1.5x the CPU a run of its later steps
(issue 30: the full run's SQLite sweep, 30 ms a run at 1 and 4, 18-20 ms at 8 and 16; earlier runs 20 ms throughout).

``python -m benchmarks.kneo_anchor_drift [--workload sqlite-sync] [--before NAME] [--runs 3] [--scale 1]
[--out FILE] [--keep DIR]``

Runs the demo's own workload (``cli/demo_pages.py``, as ``demo --all`` builds it) alone ``--runs`` times, each a
one-page demo of its own (``--before demarkus/churn``: that workload first, as ``--all`` orders them, so its processes'
end overlaps the sweep's start as it does there). Beside each sweep a probe process times two fixed pieces of work
once a second on the core a kneo-serv process last ran on: an integer loop (the core's speed) and a loop building and
dropping dicts and strings (the memory path an interpreter's work takes): CPU time each (``thread_time``), the
machine's steal and busy share from ``/proc/stat``, and kneo-serv's user and system CPU and minor faults from
``/proc/<pid>/stat``; and per window of three sampling rounds where kneo-serv ran near a core, the probe's loop beside
kneo-serv's CPU a run. Per step of each sweep it prints kneo-serv's CPU a run (the sampler's ``resources.csv``: its CPU
over the runs it completed), runs/s, the probe's two loops and the steal; and the anchor's first half against its
second, to tell a warm-up of kneo-serv (its own CPU a run falls while the probe's loops stay) from the machine (both
move together). Figures only; writes JSON (``--out``, default ``benchmarks/results/kneo_anchor_drift.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd

from swarmgauge.files import write_json

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "kneo_anchor_drift.json"
MAX_RUNS = 10
#: the probe: once a second, each loop timed alone; about 2 x 8 ms of a core a second (under 2 % of one)
PROBE = r"""
import json, sys, time
out, stop = sys.argv[1], sys.argv[2]
def stat():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v[:8]), v[3] + v[4], v[7]  # total (no guest: it is in user), idle + iowait, steal
def arith():
    t = time.thread_time(); s = 0
    for i in range(150000):
        s += i * i % 7
    return (time.thread_time() - t) * 1000
def alloc():
    t = time.thread_time(); keep = []
    for i in range(6000):
        d = {"id": str(i), "n": i, "tags": ["a" + str(i), "b"]}
        keep.append(d)
        if len(keep) > 500:
            keep.clear()
    return (time.thread_time() - t) * 1000
import glob, os
TICK = os.sysconf("SC_CLK_TCK")
def services():
    # kneo-serv processes by pidfile: minor faults, user and system CPU (s)
    out = {}
    for pidfile in glob.glob("/tmp/swarmgauge-kneo-*/kneo-serv-*.pid"):
        try:
            pid = open(pidfile).read().strip()
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        out[pidfile] = [int(fields[7]), int(fields[11]) / TICK, int(fields[12]) / TICK, int(fields[36])]
    return out
deadline = time.time() + 3600
with open(out, "w") as f:
    last = stat()
    cores = set(range(os.cpu_count() or 1))
    while time.time() < deadline and not os.path.exists(stop):
        seen = services()
        # on the core a kneo-serv process last ran on, when there is one: that core's speed
        on = sorted({v[3] for v in seen.values()} & cores)[:1]
        os.sched_setaffinity(0, set(on) or cores)
        a, b = arith(), alloc()
        now = stat()
        total = max(1, now[0] - last[0])
        f.write(json.dumps({"t": time.time(), "arith_ms": a, "alloc_ms": b,
                            "steal": (now[2] - last[2]) / total, "busy": 1 - (now[1] - last[1]) / total, "services": seen, "core": on}) + "\n")
        f.flush(); last = now
        time.sleep(1.0)
"""


class UnknownWorkload(ValueError):
    """A ``--workload`` or ``--before`` name the demo does not have."""


def pick(name: str, scale: float) -> Any:
    """The demo's workload ``page/name`` (or ``name`` on the kneo page) as ``--all`` builds it."""
    from swarmgauge.cli.demo_pages import pages

    page_name, _, workload = name.rpartition("/")
    for page in pages([page_name or "kneo"], scale):
        for candidate in page.workloads:
            if candidate.name == workload:
                return page, candidate
    raise UnknownWorkload(f"no workload {name!r} in the demo (page/name, or a kneo workload's name)")


def kneo_cpu_by_round(run: Path) -> pd.DataFrame:
    """Per sampling round: the step, elapsed time, kneo-serv's CPU (% of a core, its processes summed), runs
    completed since the round before, the machine's busy CPU."""
    samples = pd.read_csv(run / "resources.csv")
    source = samples["source"].astype(str)
    cpu = samples[(samples["metric"] == "cpu_percent") & source.str.contains("kneo-serv-", regex=False)]
    done = samples[samples["metric"] == "kneo_runs_completed_total"]
    machine = samples[(samples["metric"] == "cpu_percent") & (source == "machine")]
    table = pd.DataFrame(
        {
            "cpu": cpu.groupby("round")["value"].sum(),
            "done": done.groupby("round")["value"].sum(),
            "machine": machine.groupby("round")["value"].sum(),
            "step": samples.groupby("round")["step"].max(),
            "time": samples.groupby("round")["time"].min(),
        }
    ).sort_index()
    table["runs"] = table["done"].diff()
    return table.dropna(subset=["cpu", "runs"])


def pidfile_of(run: Path) -> str | None:
    """The pidfile the sampler watched kneo-serv's first process through (its source's name says it)."""
    samples = pd.read_csv(run / "resources.csv", usecols=["source"])
    for source in samples["source"].astype(str).unique():
        if source.startswith("psutil:pidfile=") and "kneo-serv-0" in source:
            return source.removeprefix("psutil:pidfile=")
    return None


def service_split(rounds: pd.DataFrame, seen: list[dict[str, Any]], pidfile: str | None) -> dict[str, float]:
    """kneo-serv's user and system CPU and minor page faults a run over the probe's samples in a step (the probe
    reads ``/proc/<pid>/stat``; the runs completed between its first and last sample, from the sampler's counter)."""
    mine = [p for p in seen if pidfile and pidfile in p.get("services", {})]
    if len(mine) < 3:
        return {}
    first, last = mine[1], mine[-1]  # the step's first second straddles the change of users

    def done_at(when: float) -> float:
        before = rounds[rounds["time"] <= when]
        return float(before["done"].iloc[-1]) if not before.empty else float("nan")

    runs = done_at(last["t"]) - done_at(first["t"])
    if not runs > 0:
        return {}
    a, b = first["services"][pidfile], last["services"][pidfile]
    return {
        "kneo_user_ms_a_run": round((b[1] - a[1]) * 1000 / runs, 1),
        "kneo_sys_ms_a_run": round((b[2] - a[2]) * 1000 / runs, 1),
        "kneo_minflt_a_run": round((b[0] - a[0]) / runs, 1),
    }


def windows(run: Path, probe: list[dict[str, Any]], rounds_each: int = 3) -> list[tuple[float, float]]:
    """(the probe's integer loop in ms, kneo-serv's CPU a run in ms) per window of ``rounds_each`` sampling rounds
    where kneo-serv ran near a core (70 % or more: its CPU a run is then the machine's speed, not its waits)."""
    rounds = kneo_cpu_by_round(run)
    rounds = rounds[(rounds["runs"] > 0) & (rounds["cpu"] >= 70.0)]
    out = []
    for start in range(0, len(rounds) - rounds_each + 1, rounds_each):
        window = rounds.iloc[start : start + rounds_each]
        inside = [p["arith_ms"] for p in probe if window["time"].min() - 1 <= p["t"] <= window["time"].max()]
        if inside:
            out.append((statistics.median(inside), float(window["cpu"].sum() * 10 / window["runs"].sum())))
    return out


def per_step(run: Path, probe: list[dict[str, float]]) -> list[dict[str, Any]]:
    """Each step: users, runs/s, kneo-serv's CPU a run and share of a core, the probe's loops and the steal."""
    steps = pd.read_csv(run / "steps.csv")
    steps = steps[steps["name"] == "Aggregated"]
    rounds = kneo_cpu_by_round(run)
    out = []
    for _, step in steps.iterrows():
        begin, end = float(step["started_at"]), float(step["started_at"]) + float(step["duration_s"])
        mine = rounds[(rounds["step"] == step["step"]) & (rounds["runs"] > 0)].iloc[1:]  # the step's first round
        # straddles the change of users
        seen = [p for p in probe if begin <= p["t"] <= end]
        row: dict[str, Any] = {"users": int(step["users"]), "rps": round(float(step["rps"]), 1)}
        if not mine.empty:
            row["kneo_cpu_ms_a_run"] = round(float(mine["cpu"].sum() * 10 / mine["runs"].sum()), 1)
            row["kneo_share"] = round(float(mine["cpu"].mean()), 0)
            row["machine_busy"] = round(float(mine["machine"].mean()), 0)
            if int(step["users"]) == 1:
                half = len(mine) // 2
                first, second = mine.iloc[:half], mine.iloc[half:]
                row["anchor_halves_ms"] = [
                    round(float(part["cpu"].sum() * 10 / part["runs"].sum()), 1) for part in (first, second)
                ]
        split = service_split(rounds, seen, pidfile_of(run))
        if split:
            row.update(split)
        if seen:
            row["probe_arith_ms"] = round(statistics.median(p["arith_ms"] for p in seen), 2)
            row["probe_alloc_ms"] = round(statistics.median(p["alloc_ms"] for p in seen), 2)
            row["steal_pct"] = round(100 * statistics.mean(p["steal"] for p in seen), 2)
        out.append(row)
    return out


def one_sweep(workload_name: str, before: str | None, scale: float, parent: Path) -> dict[str, Any]:
    from swarmgauge.cli.demo import run_pages
    from swarmgauge.cli.demo_pages import BUILDERS, Page, pages

    picked = [pick(name, scale) for name in workload_name.split(",")]
    page = picked[0][0]
    chosen: list[Page] = []
    for name in (before or "").split(","):
        if name in BUILDERS:  # a whole page's workloads, in --all's order
            chosen += pages([name], scale)
        elif name:
            other, first = pick(name, scale)
            chosen.append(Page(other.name, other.title, other.reference, (first,), other.unavailable))
    chosen.append(Page(page.name, page.title, page.reference, tuple(w for _, w in picked), page.unavailable))
    probe_out, stop = parent / "probe.jsonl", parent / "probe.stop"
    parent.mkdir(parents=True, exist_ok=True)
    probe = subprocess.Popen([sys.executable, "-c", PROBE, str(probe_out), str(stop)])
    began = time.time()
    try:
        code = run_pages(chosen, parent, scale)
    finally:
        stop.touch()
        probe.wait(timeout=30)
    samples = [json.loads(line) for line in probe_out.read_text().splitlines() if line.strip()]
    found: dict[str, Any] = {"exit": code, "began": began, "load_average": round(os.getloadavg()[0], 2)}
    for _, workload in picked:
        runs = sorted(parent.glob(f"*/{page.name}/{workload.name}/*/steps.csv"))
        if runs:
            pairs = windows(runs[-1].parent, samples)
            found[workload.name] = {
                "run": str(runs[-1].parent),
                "steps": per_step(runs[-1].parent, samples),
                "probe_against_kneo_serv": [[round(a, 2), round(b, 1)] for a, b in pairs],
            }
    found["probe_before_load"] = [p for p in samples if p["t"] < began + 2][:3]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="sqlite-sync", help="the kneo workloads, comma separated (or page/name)")
    parser.add_argument(
        "--before",
        default=None,
        help="workloads run just before, comma separated: page/name or a whole page (demarkus), in --all's order",
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--keep", type=Path, default=None, help="where the run folders go (default: a temp dir)")
    args = parser.parse_args(argv)
    from swarmgauge.cli.demo_pages import BUILDERS

    try:
        if not 1 <= args.runs <= MAX_RUNS:
            raise ValueError(f"--runs {args.runs}: must be 1 to {MAX_RUNS}")
        if not 0 < args.scale <= 10:
            raise ValueError(f"--scale {args.scale:g}: must be above 0, at most 10")
        for name in [*args.workload.split(","), *(args.before or "").split(",")]:
            if name and name not in BUILDERS:
                pick(name, args.scale)
    except ValueError as exc:
        print(f"kneo_anchor_drift: {exc}", file=sys.stderr)
        return 2
    base = args.keep or Path(tempfile.mkdtemp(prefix="kneo-anchor-drift-"))
    results = []
    for number in range(args.runs):
        result = one_sweep(args.workload, args.before, args.scale, base / f"run{number}")
        results.append(result)
        print(f"run {number} (load {result.get('load_average')})")
        for name, sweep in result.items():
            if isinstance(sweep, dict) and "steps" in sweep:
                print(f"  {name}: {sweep['run']}")
                for step in sweep["steps"]:
                    print("   ", json.dumps(step))
    write_json(args.out, {"workload": args.workload, "before": args.before, "scale": args.scale, "runs": results})
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
