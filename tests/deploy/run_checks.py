"""What a short compose run must show, whether its services ran as local processes or in containers."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

from swarmgauge.run_folders import resolve

WORKERS = 2


def short_plan(folder: Path, warmup: str) -> Path:
    """Two 4-second steps of FetchUser: the CI run's plan."""
    plan = folder / "plan.yaml"
    plan.write_text(
        f"name: compose-short\nkind: step_ramp\nuser_classes: [FetchUser]\nsteps: [2, 4]\n"
        f"step_time: 4s\nwarmup: {warmup}\n"
    )
    return plan


def aggregated_steps(run_dir: Path) -> dict[int, dict[str, int]]:
    """Per step, requests and warm-up requests of every request type (QUIC handshakes too, which steps.csv's own
    Aggregated row leaves out), and how many workers reported."""
    steps: dict[int, dict[str, int]] = {}
    with open(resolve(run_dir) / "steps.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            total = steps.setdefault(int(row["step"]), {"requests": 0, "warmup_requests": 0, "workers": 0})
            total["workers"] = max(total["workers"], int(row["workers"] or 0))
            if row["name"] != "Aggregated":
                total["requests"] += int(row["requests"] or 0)
                total["warmup_requests"] += int(row["warmup_requests"] or 0)
    return steps


def fetches(run_dir: Path) -> int:
    """FETCH requests in steps.csv (warm-up included): what the target served."""
    with open(resolve(run_dir) / "steps.csv", newline="") as handle:
        return sum(
            int(r["requests"]) + int(r["warmup_requests"])
            for r in csv.DictReader(handle)
            if r["request_type"] == "FETCH"
        )


def check_run(result: subprocess.CompletedProcess, tallies: list[dict], run_dir: Path) -> dict[int, dict]:
    """The plan ran to its end on both workers, and each step's counts are the sum of the workers' own tallies."""
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(tallies) == WORKERS, "every worker ran and quit when the master did"
    run = json.loads((resolve(run_dir) / "run.json").read_text())
    assert run["runner"] == "MasterRunner" and run["exit_code"] == 0
    assert run["workers"] == WORKERS, "the workers that made the load, not the none left once they quit"
    assert run["user_classes"] == ["FetchUser"], "the plan's class alone ran"
    assert [s["users"] for s in run["steps"]] == [2, 4], "the plan ran to its end"
    rows = aggregated_steps(run_dir)
    assert sorted(rows) == [0, 1]
    for step, row in rows.items():
        assert int(row["workers"]) == WORKERS, f"step {step}: both workers reported"
        per_worker = [t["steps"].get(str(step), {"requests": 0, "warmup": 0}) for t in tallies]
        assert all(w["requests"] > 0 for w in per_worker), f"step {step}: a worker sent nothing"
        assert int(row["requests"]) == sum(w["requests"] for w in per_worker), f"step {step}"
        assert int(row["warmup_requests"]) == sum(w["warmup"] for w in per_worker), f"step {step}"
    report = (resolve(run_dir) / "report.md").read_text()
    assert "FETCH" in report and (resolve(run_dir) / "report.html").stat().st_size > 0
    return rows
