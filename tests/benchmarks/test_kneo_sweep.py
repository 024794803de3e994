"""benchmarks/kneo_sweep.py on a tiny sweep against the real kneo-serv: the page's table layout, the JSON, every
run reconciled. Structure and counts only, never a figure."""

from __future__ import annotations

import json

import pytest

from benchmarks import kneo_sweep

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]  # the first test may build the cached kneo-serv venv


def test_tiny_sweep_prints_the_page_layout_and_writes_json(kneo_venv, tmp_path, capsys):
    code = kneo_sweep.main(
        [
            "--stores",
            "sqlite",
            "--users",
            "1,2",
            "--step-time",
            "2s",
            "--warmup",
            "0s",
            "--queued-stores",
            "sqlite",
            "--queued-users",
            "2",
            "--queued-time",
            "3s",
            "--queued-batch",
            "12",
            "--drain-timeout",
            "60",
            "--out",
            str(tmp_path),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0] == "| " + " | ".join(kneo_sweep.HEADER) + " |"
    body = [line.split(" | ") for line in lines[2:]]
    assert [(cells[0].lstrip("| "), cells[1]) for cells in body] == [
        ("sqlite / sync", "1"),
        ("sqlite / sync", "2"),
        ("sqlite / queue", "2"),
    ]
    assert all(cells[6].endswith("MiB") and cells[-1] == "yes |" for cells in body)
    assert body[0][8] == "51"  # the page's figure for sqlite / sync at 1 beside ours
    # the busiest service process's CPU, where a sample fell in the step (a 2 s step on a loaded machine may get none)
    assert all(cells[7].endswith("%") or cells[7] == "" for cells in body)
    assert any(cells[7].endswith("%") for cells in body)
    doc = json.loads((tmp_path / "kneo-sweep.json").read_text())
    assert [(r["store"], r["mode"], r["users"]) for r in doc["rows"]] == [
        ("sqlite", "sync", 1),
        ("sqlite", "sync", 2),
        ("sqlite", "batch", 2),
    ]
    assert all(r["requests"] > 0 and r["reconciled"] and r["locust_exit_code"] == 0 for r in doc["rows"])
    queue = doc["rows"][-1]
    assert queue["requests"] == 12 and queue["unfinished"] == 0 and queue["p50_ms"] <= queue["p95_ms"]
    assert body[-1][4].endswith("(p95)")
    assert doc["settings"]["users"] == [1, 2] and doc["machine"]["cpus"] >= 1


def test_bad_store_name_is_refused_in_one_line(capsys):
    assert kneo_sweep.main(["--stores", "mysql"]) == 2
    assert capsys.readouterr().err.strip().startswith("kneo_sweep: --stores takes sqlite and/or postgres")


@pytest.mark.parametrize(
    "args",
    [
        ["--pg-processes", "0"],
        ["--pg-processes", "two"],
        ["--sqlite-processes", "0"],
        ["--sqlite-processes", "1,x"],
        ["--queued-batch", "0"],
    ],
)
def test_bad_process_counts_and_batch_sizes_are_refused_in_one_line(args, capsys):
    assert kneo_sweep.main(args) == 2
    assert capsys.readouterr().err.strip().startswith("kneo_sweep: --pg-processes and --sqlite-processes take counts")


def test_the_table_names_the_process_count_and_leaves_the_page_figure_to_one_process():
    row = {
        "store": "postgres",
        "mode": "sync",
        "users": 8,
        "processes": 2,
        "runs_per_s": 60.0,
        "p50_ms": 100.0,
        "p90_ms": 150.0,
        "p99_ms": 200.0,
        "peak_rss_mib": 120.0,
        "page_runs_per_s": None,
        "reconciled": True,
    }
    line = kneo_sweep.format_table([row]).splitlines()[-1]
    assert line.startswith("| postgres x2 processes / sync | 8 | 60.0 |")


def test_peak_rss_sums_processes_within_a_round():
    rows = [
        {"source": "psutil:pidfile=a", "metric": "rss_bytes", "step": "0", "round": "0", "value": str(2**20)},
        {"source": "psutil:pidfile=b", "metric": "rss_bytes", "step": "0", "round": "0", "value": str(2**20)},
        {"source": "psutil:pidfile=a", "metric": "rss_bytes", "step": "0", "round": "1", "value": str(3 * 2**20)},
        {"source": "generator", "metric": "rss_bytes", "step": "0", "round": "1", "value": str(99 * 2**20)},
    ]
    assert kneo_sweep.peak_rss_by_step(rows) == {0: 3.0}


def test_service_cpu_is_the_busiest_processs_mean_in_each_step():
    rows = [
        {"source": f"psutil:pidfile={name}", "metric": "cpu_percent", "step": step, "round": "0", "value": value}
        for name, step, value in (("a", "0", "80"), ("a", "0", "90"), ("b", "0", "40"), ("b", "1", "30"))
    ]
    rows.append({"source": "generator", "metric": "cpu_percent", "step": "0", "round": "0", "value": "100"})
    assert kneo_sweep.service_cpu_by_step(rows) == {0: 85.0, 1: 30.0}
