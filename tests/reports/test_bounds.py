"""Target-bound and generator-stalled steps: flagged in the table, said under it, and named in the trend sentence."""

from __future__ import annotations

import csv
from pathlib import Path

from swarmgauge.reports.bounds import target_bound_sentence, target_cpu_by_step
from swarmgauge.reports.report import render_report
from swarmgauge.reports.trend import StepPoint, TargetCPU, trend_sentence

RESOURCE_COLUMNS = ["time", "elapsed_s", "step", "node", "source", "metric", "value", "round"]
STEP_COLUMNS = [
    "step",
    "label",
    "request_type",
    "name",
    "users",
    "target_rate",
    "requests",
    "failures",
    "rps",
    "p50_ms",
    "p99_ms",
    "generator_cpu_max",
    "generator_bound",
    "generator_stall_ms",
    "stalled_requests",
    "generator_stalled",
]


def _write(path: Path, columns: list[str], rows: list[dict]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def _resources(run_dir: Path, samples: list[tuple[int, str, str, float]]) -> None:
    rows = [
        {"time": 100.0 + i, "elapsed_s": i, "step": step, "node": "local", "source": source, "metric": metric}
        | {"value": value, "round": i}
        for i, (step, source, metric, value) in enumerate(samples)
    ]
    _write(run_dir / "resources.csv", RESOURCE_COLUMNS, rows)


def test_a_process_above_90_percent_of_a_core_or_a_cgroup_near_its_limit_is_target_bound(tmp_path):
    _resources(
        tmp_path,
        [
            (0, "psutil:pidfile=/tmp/k/kneo-serv-1.pid", "cpu_percent", 60.0),
            (1, "psutil:pidfile=/tmp/k/kneo-serv-1.pid", "cpu_percent", 95.0),
            (1, "generator", "cpu_percent", 99.0),  # the generator's own series is not the target
            (2, "cgroup:/sys/fs/cgroup/pod", "cpu_percent", 47.0),
            (2, "cgroup:/sys/fs/cgroup/pod", "cpu_limit_percent", 50.0),
            (2, "psutil:pid=9", "cpu_percent", 70.0),
        ],
    )
    found = target_cpu_by_step(tmp_path)
    assert not found[0].bound
    assert found[1] == TargetCPU(95.0, "kneo-serv-1", 100.0) and found[1].bound
    assert found[2].name == "cgroup:/sys/fs/cgroup/pod" and found[2].bound  # 94 % of its half-core limit
    assert found[2].describe() == "cgroup:/sys/fs/cgroup/pod at 94 % of its 0.5-CPU cgroup limit"
    steps = _steps_frame([(0, 1), (1, 4), (2, 8)])
    sentence = target_bound_sentence(steps, found)
    assert sentence.startswith(
        "Target-bound: a sampled target process ran above 90 % of its CPU ceiling during 4 users"
    )
    assert "4 users (kneo-serv-1 at 95 % of a core)" in sentence and "1 users" not in sentence


def test_the_flat_trend_names_the_targets_cpu_as_the_ceiling():
    kneo = TargetCPU(96.0, "kneo-serv")
    points = [StepPoint(1, 40.0, 25.0), StepPoint(4, 41.0, 97.0, target=kneo), StepPoint(8, 40.5, 197.0, target=kneo)]
    sentence = trend_sentence(points)
    assert sentence.startswith("Throughput flattens at about 40.0 req/s from 1 user on")
    assert sentence.endswith("; the ceiling is the target's own CPU (kneo-serv at 96 % of a core).")
    unbound = [StepPoint(1, 40.0), StepPoint(4, 41.0, target=TargetCPU(60.0)), StepPoint(8, 40.5)]
    assert "ceiling" not in trend_sentence(unbound)
    rising = trend_sentence([StepPoint(1, 40.0), StepPoint(4, 150.0, target=TargetCPU(93.0, "brain"))])
    assert rising.endswith("no knee yet, but the target's own CPU is at its ceiling there (brain at 93 % of a core).")


def _steps_frame(users: list[tuple[int, int]]):
    import pandas as pd

    return pd.DataFrame([{"step": step, "label": f"{u} users", "name": "Aggregated", "users": u} for step, u in users])


def test_the_report_flags_target_bound_and_generator_stalled_steps(tmp_path):
    rows = []
    for step, (users, rps, stalled) in enumerate([(1, 40.0, 0), (4, 41.0, 0), (8, 40.5, 30)]):
        common = {"step": step, "label": f"{users} users", "users": users, "target_rate": "", "failures": 0}
        flags = {"generator_cpu_max": 20.0, "generator_bound": False, "generator_stall_ms": 2300.0 if stalled else ""}
        flags |= {"stalled_requests": stalled, "generator_stalled": bool(stalled)}
        for rtype, name in (("run sync", "echo"), ("", "Aggregated")):
            rows.append({**common, "request_type": rtype, "name": name, "requests": 400, "rps": rps, **flags})
            rows[-1] |= {"p50_ms": users * 25.0, "p99_ms": users * 30.0}
    _write(tmp_path / "steps.csv", STEP_COLUMNS, rows)
    source = "psutil:pidfile=/tmp/k/kneo-serv-1.pid"
    _resources(
        tmp_path, [(0, source, "cpu_percent", 50.0), (1, source, "cpu_percent", 92.0), (2, source, "cpu_percent", 97.0)]
    )
    summary = render_report(tmp_path)
    report = (tmp_path / "report.md").read_text()
    assert "| 92 % (bound)" in report and "| 50 %  " in report
    assert "| 2.30 s (stalled)" in report  # the step's longest stall, in its own column
    assert "the ceiling is the target's own CPU (kneo-serv-1 at 97 % of a core)" in summary["knees"]["run sync echo"]
    assert summary["target_bound"].startswith("Target-bound: a sampled target process ran above 90 %")
    assert summary["generator_stalled"] == (
        "Generator-stalled: requests were in flight while the load generator's own event loop was held during "
        "8 users (30 requests, longest stall 2.30 s); their latency includes the stall, so those steps' tails may "
        "be the generator's."
    )
