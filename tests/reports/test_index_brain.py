"""The brain page's section over hand-made run folders: the leak's rows with the stand-in's own counts (model loads,
zombie children) read from resources.csv, and the buffer pool's errors per route before and after the fix."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd

from swarmgauge.reports.index_brain import brain, gauge_max

COLUMNS = ["step", "request_type", "name", "users", "requests", "failures", "rps", "p50_ms", "p99_ms"]


def run(path: Path, rows: list[dict], gauges: dict[str, list[float]] | None = None, trend: dict | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    with open(path / "steps.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, restval="")
        writer.writeheader()
        writer.writerows(rows)
    samples = [(r, "prom:x", metric, v) for metric, values in (gauges or {}).items() for r, v in enumerate(values)]
    pd.DataFrame(samples, columns=["round", "source", "metric", "value"]).to_csv(path / "resources.csv", index=False)
    if trend:
        (path / "summary.json").write_text(json.dumps({"Target memory": {"trends": [trend]}}))
    return path


def calls(step: int, users: int, route: str, requests: int, failures: int) -> dict:
    return {
        "step": step,
        "request_type": "GET",
        "name": route,
        "users": users,
        "requests": requests,
        "failures": failures,
        "rps": 10,
        "p50_ms": 6,
        "p99_ms": 9,
    }


def aggregated(requests: int, p50: float) -> dict:
    return {
        "step": 0,
        "request_type": "",
        "name": "Aggregated",
        "users": 1,
        "requests": requests,
        "failures": 0,
        "rps": 1,
        "p50_ms": p50,
        "p99_ms": p50,
    }


def test_a_gauge_never_read_is_none_not_zero(tmp_path):
    folder = run(tmp_path / "r", [], {"brain_model_loads": [1.0, 3.0]})
    assert gauge_max(folder, "brain_model_loads") == 3.0 and gauge_max(folder, "brain_zombie_children") is None


def test_the_leak_rows_and_the_pool_rows_beside_the_page(tmp_path):
    trend_before = {
        "series": "rss_bytes",
        "first MiB": 80.0,
        "last MiB": 240.0,
        "delta MiB": 160.0,
        "MiB per 1,000 requests": 16000.0,
    }
    trend_after = {
        "series": "rss_bytes",
        "first MiB": 25.0,
        "last MiB": 25.5,
        "delta MiB": 0.5,
        "MiB per 1,000 requests": 0.1,
    }
    runs = {
        "before-fix": run(
            tmp_path / "b",
            [aggregated(10, 1460.0)],
            {"brain_model_loads": [5, 10], "brain_zombie_children": [5, 10]},
            trend_before,
        ),
        "after-fix": run(
            tmp_path / "a",
            [aggregated(1500, 6.4)],
            {"brain_model_loads": [1, 1], "brain_zombie_children": [0, 0]},
            trend_after,
        ),
        "pool-before-fix": run(
            tmp_path / "pb",
            [
                calls(0, 8, "/search", 1000, 950),
                calls(0, 8, "/health", 100, 0),
                calls(1, 16, "/search", 800, 800),
                calls(1, 16, "/stats", 90, 90),
                calls(1, 16, "/health", 100, 0),
            ],
        ),
        "pool-after-fix": run(tmp_path / "pa", [calls(0, 8, "/search", 1000, 0), calls(1, 16, "/stats", 90, 0)]),
    }
    section = brain(runs)
    memory = dict((t, f) for t, f in section.tables)["Memory, model loads and zombies before and after the fix"]
    shown = dict(zip(memory["figure"], zip(memory["measured"], memory["page"], memory["x"])))
    assert shown["before-fix: p50 of 10 searches"] == ("1.46 s", "1.43 s", "1.02x")
    assert shown["after-fix: p50 of 1,500 searches"] == ("6.4 ms", "6 ms", "1.07x")
    assert shown["after-fix: model loads (brain_model_loads)"] == ("1", "exactly one", "1x")
    assert shown["before-fix: zombie children (brain_zombie_children)"][:2] == ("10", "20")
    assert shown["before-fix: RSS first to last"][0] == "80 to 240 MiB"
    pool = dict((t, f) for t, f in section.tables)["Buffer pool: errors per route, before and after the fix"]
    assert "pool-before-fix: /stats at c=16 (90 calls)" in list(pool["figure"])
    assert all(check.holds for check in section.checks), [c.text for c in section.checks]
    assert any("pprof" in row for row, _ in section.not_reproducible)


def test_a_pool_that_recovers_by_the_last_step_does_not_hold(tmp_path):
    runs = {
        "pool-before-fix": run(tmp_path / "pb", [calls(0, 8, "/search", 1000, 950), calls(1, 16, "/search", 800, 8)])
    }
    checks = brain(runs).checks
    assert [c.holds for c in checks] == [False] and "every backend route" in checks[0].text
