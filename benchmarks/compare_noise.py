"""Does ``swarmgauge compare`` tell a regression from noise? A/A and A/B comparisons of short runs on a loaded machine.

``python -m benchmarks.compare_noise [--pairs 20] [--steps 2,4] [--step-time 6s] [--delay-ms 20] [--burn-cores 1]
[--tolerance 10%] [--out benchmarks/results/compare_noise.json]``

Two ``swarmgauge target sim-http`` targets, A with ``--delay const:D`` and B with ``const:2D``, and a process that
burns ``--burn-cores`` cores for the whole benchmark. Headless runs of ``locustfiles/http_ramp.py`` (``--steps``,
``--step-time``) alternate A, B, A, B, ... so the machine's load falls on both: runs A_0..A_N and B_1..B_N (N =
``--pairs``). A/A: A_{i-1} against A_i, every flag a false alarm (want 0 of N). A/B: A_i against B_i, every run
without a flag a miss (want N of N). Prints the table (with the load average over the runs), writes the JSON with
every comparison's regression and not-gated lines. Figures only: nothing asserts.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from swarmgauge.errors import UsageError
from swarmgauge.files import write_json
from swarmgauge.reports.compare import compare, load_run, parse_tolerance
from swarmgauge.targets.launch import launch_target, stop_processes

ROOT = Path(__file__).resolve().parents[1]
LOCUSTFILE = ROOT / "locustfiles" / "http_ramp.py"
RUN_TIMEOUT_S = 120.0
BURN_CODE = "import sys, time\nend = time.time() + float(sys.argv[1])\nwhile time.time() < end:\n    pass\n"


def parse_options(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.compare_noise", description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=20, help="A/A and A/B comparisons each (N)")
    parser.add_argument("--steps", default="2,4", help="users per step, as --steps")
    parser.add_argument("--step-time", default="6s", help="as --step-time")
    parser.add_argument("--delay-ms", type=float, default=20.0, help="A's constant delay; B's is twice it")
    parser.add_argument("--burn-cores", type=int, default=1, help="processes burning a core each during the runs")
    parser.add_argument("--tolerance", default="10%", help="as swarmgauge compare --tolerance")
    parser.add_argument("--work-dir", type=Path, default=None, help="keep the run folders here (default: a temp dir)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "compare_noise.json")
    opts = parser.parse_args(argv)
    if opts.pairs < 1 or opts.delay_ms <= 0 or opts.burn_cores < 0:
        raise UsageError("give --pairs >= 1, --delay-ms > 0 and --burn-cores >= 0")
    opts.tolerance_fraction = parse_tolerance(opts.tolerance)
    return opts


def headless_run(opts: argparse.Namespace, url: str, run_dir: Path) -> dict[str, Any]:
    """One short run of the step plan against ``url``; its exit code and the load average at its end."""
    command = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "--only-summary"]
    command += ["--host", url, "--steps", opts.steps, "--step-time", opts.step_time, "--stop-timeout", "5"]
    command += ["--run-dir", str(run_dir), "--no-report"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    if result.returncode not in (0, 1):
        raise RuntimeError(f"run {run_dir.name} exited {result.returncode}: {result.stderr[-1500:]}")
    return {"run": run_dir.name, "exit_code": result.returncode, "load_1m": os.getloadavg()[0]}


def judged(kind: str, base: Path, new: Path, tolerance: float) -> dict[str, Any]:
    """One comparison as ``swarmgauge compare`` decides it (exit 3 when it lists a regression)."""
    not_gated: list[str] = []
    _table, regressions = compare(load_run(base), load_run(new), tolerance, not_gated)
    return {
        "kind": kind,
        "base": base.name,
        "new": new.name,
        "flagged": bool(regressions),
        "regressions": regressions,
        "not_gated": not_gated,
    }


def table(result: dict[str, Any]) -> str:
    pairs = result["settings"]["pairs"]
    aa = [c for c in result["comparisons"] if c["kind"] == "A/A"]
    ab = [c for c in result["comparisons"] if c["kind"] == "A/B"]
    loads = [r["load_1m"] for r in result["runs"]]
    lines = [
        f"{'comparison':<34} {'flagged':>8} {'want':>6}",
        f"{'A/A (same target, const delay)':<34} {sum(c['flagged'] for c in aa):>8} {'0':>6}",
        f"{'A/B (B with twice the delay)':<34} {sum(c['flagged'] for c in ab):>8} {pairs:>6}",
        f"load average (1 min) at the runs' ends: min {min(loads):.1f}, max {max(loads):.1f}",
    ]
    lines += [f"false alarm {c['base']} -> {c['new']}: {line}" for c in aa for line in c["regressions"]]
    lines += [f"missed {c['base']} -> {c['new']}" for c in ab if not c["flagged"]]
    return "\n".join(lines)


def run(opts: argparse.Namespace) -> dict[str, Any]:
    work = opts.work_dir or Path(tempfile.mkdtemp(prefix="compare-noise-"))
    work.mkdir(parents=True, exist_ok=True)
    budget = (opts.pairs * 2 + 1) * RUN_TIMEOUT_S
    burners = [
        subprocess.Popen([sys.executable, "-c", BURN_CODE, str(budget)], stdout=subprocess.DEVNULL)
        for _ in range(opts.burn_cores)
    ]
    runs: list[dict[str, Any]] = []
    started = time.time()
    delay = f"{opts.delay_ms:g}"
    try:
        with (
            launch_target(
                "sim-http", ["--port", "0", "--delay", f"const:{delay}", "--max-seconds", f"{budget:.0f}"]
            ) as target_a,
            launch_target(
                "sim-http", ["--port", "0", "--delay", f"const:{2 * opts.delay_ms:g}", "--max-seconds", f"{budget:.0f}"]
            ) as target_b,
        ):
            runs.append(headless_run(opts, target_a.url, work / "A_0"))
            for index in range(1, opts.pairs + 1):
                runs.append(headless_run(opts, target_a.url, work / f"A_{index}"))
                runs.append(headless_run(opts, target_b.url, work / f"B_{index}"))
                print(f"  runs A_{index} and B_{index} done ({time.time() - started:.0f} s)", flush=True)
    finally:
        stop_processes(burners)
    comparisons = []
    for index in range(1, opts.pairs + 1):
        a_before, a_now, b_now = work / f"A_{index - 1}", work / f"A_{index}", work / f"B_{index}"
        comparisons.append(judged("A/A", a_before, a_now, opts.tolerance_fraction))
        comparisons.append(judged("A/B", a_now, b_now, opts.tolerance_fraction))
    return {
        "settings": {
            "pairs": opts.pairs,
            "steps": opts.steps,
            "step_time": opts.step_time,
            "delay_a": f"const:{delay}",
            "delay_b": f"const:{2 * opts.delay_ms:g}",
            "burn_cores": opts.burn_cores,
            "tolerance": opts.tolerance,
            "cpu_count": os.cpu_count(),
            "locustfile": str(LOCUSTFILE.relative_to(ROOT)),
        },
        "seconds": round(time.time() - started, 1),
        "runs": runs,
        "comparisons": comparisons,
        "false_alarms": sum(c["flagged"] for c in comparisons if c["kind"] == "A/A"),
        "flagged_regressions": sum(c["flagged"] for c in comparisons if c["kind"] == "A/B"),
        "work_dir": str(work),
    }


def main(argv: list[str] | None = None) -> int:
    try:
        opts = parse_options(argv)
    except UsageError as exc:
        print(f"benchmarks.compare_noise: {exc}", file=sys.stderr)
        return 2
    result = run(opts)
    print(table(result))
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    write_json(opts.out, result)
    print(f"wrote {opts.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
