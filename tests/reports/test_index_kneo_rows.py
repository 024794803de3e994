"""The kneo page's rows beyond the sync sweeps over hand-made run folders: the batch queue row from the store's
drain figures, the store comparison with each side's CPU, the provider delay, the scaled soak, the rows not tried."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd

from swarmgauge.reports.index_figures import PageSection
from swarmgauge.reports.index_kneo_rows import add_kneo_rows, cpu_by_side, side_of

KNEO_PID = "psutil:pidfile=/tmp/swarmgauge-kneo-x/kneo-serv-{}.pid"
PG = "psutil:match=-D /tmp/swarmgauge\\-pg\\-x/data( |$)"
STEP_COLUMNS = ["step", "request_type", "name", "users", "requests", "failures", "rps", "p50_ms", "p99_ms"]
STEP_COLUMNS += ["duration_s"]


def steps(run: Path, rows: list[dict]) -> None:
    run.mkdir(parents=True, exist_ok=True)
    with open(run / "steps.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=STEP_COLUMNS, restval="")
        writer.writeheader()
        writer.writerows(rows)


def resources(run: Path, samples: list[tuple[int, int, str, str, float]]) -> None:
    """(round, step, source, metric, value) rows of a resources.csv."""
    frame = pd.DataFrame(samples, columns=["round", "step", "source", "metric", "value"])
    frame.to_csv(run / "resources.csv", index=False)


def sync(users: int, step: int, rps: float, p50: float) -> dict:
    return {
        "step": step,
        "request_type": "run sync",
        "name": "agent:echo.yaml",
        "users": users,
        "requests": 100,
        "failures": 0,
        "rps": rps,
        "p50_ms": p50,
        "p99_ms": p50 * 2,
        "duration_s": 5,
    }


def table(section: PageSection, caption: str) -> pd.DataFrame:
    return next(frame for title, frame in section.tables if title.startswith(caption))


def test_the_side_of_each_sampled_process():
    assert side_of("generator") == "generator" and side_of(KNEO_PID.format(1)) == "kneo-serv"
    assert side_of(PG) == "PostgreSQL" and side_of("locust") is None
    assert side_of("prom:http://127.0.0.1:1/metrics#kneo_runs_queued") is None


def test_a_steps_first_cpu_sample_measured_the_step_before_and_is_left_out(tmp_path):
    resources(
        tmp_path,
        [
            (0, 0, "generator", "cpu_percent", 5.0),
            (1, 0, "generator", "cpu_percent", 7.0),
            (2, 1, "generator", "cpu_percent", 90.0),
            (3, 1, "generator", "cpu_percent", 40.0),
            (3, 1, KNEO_PID.format(0), "cpu_percent", 30.0),
            (4, 1, KNEO_PID.format(0), "cpu_percent", 50.0),
            (4, 1, KNEO_PID.format(1), "cpu_percent", 20.0),
            (3, 1, KNEO_PID.format(1), "cpu_percent", 10.0),
        ],
    )
    cpu = cpu_by_side(pd.read_csv(tmp_path / "resources.csv"))
    assert cpu[0] == {"generator": 7.0} and cpu[1]["generator"] == 40.0  # 90 % was step 0's interval
    assert cpu[1]["kneo-serv"] == 70.0  # both processes summed in the round both are inside step 1


def test_the_queue_row_is_the_batch_drained_and_the_store_rows_carry_each_sides_cpu(tmp_path):
    queue = tmp_path / "postgres-queue"
    steps(
        queue,
        [
            {
                "step": 0,
                "request_type": "run submit",
                "name": "agent:echo.yaml",
                "users": 8,
                "requests": 500,
                "failures": 0,
                "rps": 30,
                "p50_ms": 200,
                "p99_ms": 400,
                "duration_s": 20,
            }
        ],
    )
    drain = {
        "runs": 500,
        "unfinished": 0,
        "drain_s": 40.0,
        "runs_per_s": 12.5,
        "wait_p50_ms": 21000.0,
        "wait_p95_ms": 38000.0,
        "wait_p99_ms": 39500.0,
        "batch": 500,
        "dispatched": 500,
    }
    (queue / "kneo.json").write_text(json.dumps({"mismatches": 0, "queue_drain": drain}))
    for name, rates in (
        ("sqlite-sync", (25.0, 43.0)),
        ("postgres-sync", (25.0, 20.0)),
        ("postgres-x2-sync", (32.0, 60.0)),
    ):
        steps(tmp_path / name, [sync(1, 0, rates[0], 30.0), sync(8, 1, rates[1], 200.0)])
        samples = [(r, 1, src, "cpu_percent", 50.0) for r in (1, 2) for src in ("generator", KNEO_PID.format(0), PG)]
        resources(tmp_path / name, samples)
    runs = {name: tmp_path / name for name in ("postgres-queue", "sqlite-sync", "postgres-sync", "postgres-x2-sync")}
    section = PageSection()
    add_kneo_rows(section, runs)
    queue_table = table(section, "postgres / queue")
    assert list(queue_table["measured"][:3]) == ["500", "12", "21.00 s"]  # dispatched, drain rate, p50 wait
    assert list(queue_table["page"][:3]) == ["500", "44", "5.04 s"]
    store = table(section, "PostgreSQL against SQLite")
    row = store[store["figure"] == "PostgreSQL, 2 service processes at 8"].iloc[0]
    assert row["measured"] == "60" and row["page"] == "77"
    assert row["CPU (% of a core)"] == "generator 50 %, kneo-serv 50 %, PostgreSQL 50 %"
    texts = [check.text for check in section.checks]
    assert any("queue wait dominates: 500 of 500 runs dispatched, p50 wait 21.00 s" in t for t in texts)
    assert any(t.startswith("at 8 concurrent PostgreSQL 60 runs/s against SQLite 43: 1.40x") for t in texts)
    assert [c.holds for c in section.checks if "at 8 concurrent" in c.text] == [True]
    assert any("reliability lanes" in row for row, _ in section.not_reproducible)


def test_the_provider_delay_and_the_soak_rows(tmp_path):
    delay = tmp_path / "provider-delay"
    steps(delay, [sync(8, 0, 14.6, 520.0)])
    soak = tmp_path / "soak"
    steps(
        soak,
        [
            {
                "step": 0,
                "request_type": "run queued",
                "name": "agent:echo.yaml",
                "users": 16,
                "requests": 600,
                "failures": 0,
                "rps": 20.0,
                "p50_ms": 700,
                "p99_ms": 900,
                "duration_s": 30,
            },
            {
                "step": 0,
                "request_type": "",
                "name": "Aggregated",
                "users": 16,
                "requests": 1800,
                "failures": 0,
                "rps": 60.0,
                "p50_ms": 30,
                "p99_ms": 900,
                "duration_s": 30,
            },
        ],
    )
    samples = [(r, 0, KNEO_PID.format(0), "rss_bytes", (80 + r * 0.1) * 2**20) for r in range(10)]
    samples += [(r, 0, KNEO_PID.format(0), "threads", 30.0 if r < 5 else 29.0) for r in range(10)]
    samples += [
        (r, 0, "prom:http://x/metrics#kneo_runs_queued", "kneo_runs_queued", 4.0 if r < 9 else 0.0) for r in range(10)
    ]
    resources(soak, samples)
    (soak / "kneo.json").write_text(json.dumps({"mismatches": 0}))
    section = PageSection()
    add_kneo_rows(section, {"provider-delay": delay, "soak": soak})
    delayed = table(section, "0.5 s simulated provider delay")
    assert list(delayed["measured"]) == ["15", "520 ms", "20 ms"] and list(delayed["page"]) == ["15", "513 ms", "13 ms"]
    soaked = table(section, "Sustained-load soak")
    by_figure = dict(zip(soaked["figure"], soaked["measured"]))
    assert by_figure["peak queued (kneo_runs_queued)"] == "4" and by_figure["queued at the end"] == "0"
    assert by_figure["RSS first to last"] == "80.0 to 80.9 MiB" and by_figure["threads, highest"] == "30"
    assert all(check.holds for check in section.checks), [c.text for c in section.checks]
