"""The brain page's section over hand-made run folders: the leak's rows with the stand-in's own counts (model loads,
zombie children) read from resources.csv, and the buffer pool's errors per route before and after the fix."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd

from swarmgauge.reports.index_brain import brain, gauge_max
from swarmgauge.reports.index_grades import grade_table

COLUMNS = ["step", "request_type", "name", "users", "requests", "failures", "rps", "p50_ms", "p99_ms"]


def run(
    path: Path,
    rows: list[dict],
    gauges: dict[str, list[float]] | None = None,
    trend: dict | None = None,
    *,
    target: str = "",
    rss_mib: list[float] = (),
    searches: list[float] = (),
) -> Path:
    """A run folder: steps, the sampler's rows (the stand-in's gauges; its RSS and the searches done, one a second
    from 0 s, with a 3 s warm-up), the summary's memory trend and the stand-in's settings in run.json."""
    path.mkdir(parents=True, exist_ok=True)
    with open(path / "steps.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, restval="")
        writer.writeheader()
        writer.writerows(rows)
    samples = [("prom:x", metric, r, v) for metric, values in (gauges or {}).items() for r, v in enumerate(values)]
    samples += [("psutil:pid=7", "rss_bytes", r, mib * 2**20) for r, mib in enumerate(rss_mib)]
    samples += [("locust", "requests", r, count) for r, count in enumerate(searches)]
    frame = pd.DataFrame(samples, columns=["source", "metric", "round", "value"])
    frame["time"], frame["elapsed_s"], frame["step"], frame["node"] = (
        1000.0 + frame["round"],
        frame["round"],
        "",
        "local",
    )
    frame[["time", "elapsed_s", "step", "node", "source", "metric", "value", "round"]].to_csv(
        path / "resources.csv", index=False
    )
    if trend:
        (path / "summary.json").write_text(json.dumps({"Target memory": {"trends": [trend]}}))
    options = {"brain_embedded_args": target, "sample_warmup": "3s"}
    (path / "run.json").write_text(json.dumps({"options": options}))
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


BEFORE = "--leak-per-search 16384 --model-load-ms 1429 --search-ms 5 --zombies-per-search 20"


def leaking_runs(tmp_path: Path) -> dict[str, Path]:
    """Before the fix 16 MiB kept a search over 10 searches after the warm-up; after it flat."""
    trend_before = {"series": "brain rss_bytes", "first MiB": 80.0, "last MiB": 240.0, "delta MiB": 160.0}
    trend_after = {"series": "brain rss_bytes", "first MiB": 25.0, "last MiB": 25.5, "delta MiB": 0.5}
    return {
        "before-fix": run(
            tmp_path / "b",
            [aggregated(13, 1460.0)],
            {"brain_model_loads": [5, 13], "brain_zombie_children": [5, 10]},
            trend_before | {"MiB per 1,000 requests": 16000.0},
            target=BEFORE,
            rss_mib=[20.0, 40.0, 60.0, *(80.0 + 16 * n for n in range(11))],  # warm-up, then 16 MiB a search
            searches=[0, 1, 2, *range(3, 14)],
        ),
        "after-fix": run(
            tmp_path / "a",
            [aggregated(1500, 6.4)],
            {"brain_model_loads": [1, 1], "brain_zombie_children": [0, 0]},
            trend_after | {"MiB per 1,000 requests": 0.1},
            target="--model-load-ms 1429 --search-ms 5",
            rss_mib=[20.0, 24.0, 25.0, *([25.0] * 11)],
            searches=[0, 100, 200, *(300 + 120 * n for n in range(11))],
        ),
    }


def test_the_leak_is_graded_against_the_configured_leak_and_the_pages_figures_scaled_the_same(tmp_path):
    section = brain(leaking_runs(tmp_path))
    memory = dict((t, f) for t, f in section.tables)["Memory, model loads and zombies before and after the fix"]
    graded = grade_table(memory)
    shown = {row["figure"]: row for _, row in graded.table.iterrows()}
    kept = shown["before-fix: RSS kept per search (RSS regressed on searches) against the configured leak"]
    assert (kept["measured"], kept["page"], kept["x"]) == ("16.0 MiB", "16 MiB set (page: ~490 MB / 30.6)", "1.00x")
    assert kept["row"] == "set by the stand-in" and "--leak-per-search 16384 (16 MiB a search" in kept["stand-in"]
    grown = shown["before-fix: RSS first to last, per search"]
    assert grown["measured"] == "80 to 240 MiB over 10 searches: 16.0 MiB a search"
    assert grown["page"].startswith("147 MB to 6.8 GB over 13 searches: 524 MB a search, / 30.6 = 17.1 MiB")
    assert grown["row"] == "set by the stand-in"
    loads = shown["before-fix: model loads a search (brain_model_loads)"]
    assert loads["measured"] == "13 loads for 13 searches: 1.00" and loads["x"] == "0.90x"
    flat = shown["after-fix: MiB of RSS kept per 1,000 searches"]
    assert (flat["measured"], flat["x"], flat["row"]) == ("0.00", "≤ 1.28", "green")
    over_run = shown["after-fix: RSS first to last"]
    assert over_run["measured"] == "25 to 25 MiB over 1,200 searches: +0.0 MiB" and over_run["x"] == "≤ 50"
    assert shown["before-fix: errors"]["x"] == "0 = 0" and shown["before-fix: errors"]["row"] == "green"
    assert shown["after-fix: zombie children (brain_zombie_children)"]["row"] == "green"
    before_zombies = shown["before-fix: zombie children (brain_zombie_children)"]
    assert (
        before_zombies["row"] == "red" and before_zombies["stand-in"] == "set by the stand-in: --zombies-per-search 20"
    )
    assert shown["before-fix: p50 of 13 searches"]["stand-in"] == "set by the stand-in: --model-load-ms 1429"


def test_the_leak_rows_and_the_pool_rows_beside_the_page(tmp_path):
    runs: dict[str, Path | None] = {
        **leaking_runs(tmp_path),
        "pool-before-fix": run(
            tmp_path / "pb",
            [
                calls(0, 8, "/search", 1000, 950),
                calls(0, 8, "/health", 100, 0),
                calls(1, 16, "/search", 800, 800),
                calls(1, 16, "/stats", 90, 90),
                calls(1, 16, "/health", 100, 0),
            ],
            target="--pool-exhaustion 200 --search-ms 5",
        ),
        "pool-after-fix": run(tmp_path / "pa", [calls(0, 8, "/search", 1000, 0), calls(1, 16, "/stats", 90, 0)]),
    }
    section = brain(runs)
    memory = dict((t, f) for t, f in section.tables)["Memory, model loads and zombies before and after the fix"]
    shown = dict(zip(memory["figure"], zip(memory["measured"], memory["page"], memory["x"])))
    assert shown["before-fix: p50 of 13 searches"] == ("1.46 s", "1.43 s", "1.02x")
    assert shown["after-fix: p50 of 1,500 searches"] == ("6.4 ms", "6 ms", "1.07x")
    assert shown["after-fix: model loads (brain_model_loads)"] == (
        "1",
        "exactly one (977 MB of loadMatrix over the run)",
        "1.00x",
    )
    pool = grade_table(
        dict((t, f) for t, f in section.tables)["Buffer pool: errors per route, before and after the fix"]
    )
    rows = {row["figure"]: row for _, row in pool.table.iterrows()}
    stats = rows["pool-before-fix: /stats at c=16"]
    assert (
        stats["measured"] == "90 of 90 failed: 100.0 %"
        and stats["stand-in"] == "set by the stand-in: --pool-exhaustion 200"
    )
    health = rows["pool-before-fix: /health at c=16"]
    assert (health["x"], health["row"]) == ("0 = 0", "set by the stand-in")
    fixed = rows["pool-after-fix: /search at c=8"]
    assert (fixed["measured"], fixed["x"], fixed["row"]) == ("0 of 1,000 failed: 0.0 %", "0 = 0", "green")
    assert all(check.holds for check in section.checks), [c.text for c in section.checks]
    assert any("pprof" in row for row, _ in section.not_reproducible)


def test_a_pool_that_recovers_by_the_last_step_does_not_hold(tmp_path):
    runs = {
        "pool-before-fix": run(tmp_path / "pb", [calls(0, 8, "/search", 1000, 950), calls(1, 16, "/search", 800, 8)])
    }
    checks = brain(runs).checks
    assert [c.holds for c in checks] == [False] and "every backend route" in checks[0].text
