"""The kneo page's reference profile graded by its shape over hand-made run folders: a sweep at this machine's
absolutes that is flat with linear latency is green, one whose throughput falls or whose p50 grows faster than the
page's is not; p95 comes from percentiles.csv; Peak RSS is kneo-serv's own, never the PostgreSQL cluster's."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from swarmgauge.reports.index_grades import AMBER, GREEN, NO_RATIO, RED, grade_table
from swarmgauge.reports.index_kneo_profile import FLAT, LINEAR, profile_rows, rss_note, sweep_note
from swarmgauge.reports.index_pages import KNEO

KNEO_PID = "psutil:pidfile=/tmp/swarmgauge-kneo-x/kneo-serv-0.pid"
PG = "psutil:match=-D /tmp/swarmgauge\\-pg\\-x/data( |$)"


def sweep(points: list[tuple[int, float, float]]) -> pd.DataFrame:
    """End-to-end rows (users, runs/s, p50 ms), one step each."""
    rows = [
        {"step": n, "request_type": "run sync", "users": u, "rps": r, "p50_ms": p50, "p99_ms": p50 * 1.5}
        for n, (u, r, p50) in enumerate(points)
    ]
    return pd.DataFrame(rows)


def grades(rows: pd.DataFrame, run: Path | None = None, store: str = "postgres / sync") -> list[str]:
    return grade_table(profile_rows(rows, run, store, KNEO[store])).grades


def test_a_flat_sweep_with_linear_latency_at_half_the_pages_rate_is_green_and_its_anchor_has_no_ratio():
    # 40 runs/s against the page's 79: the machine's; flat and linear as the page's: the shape holds
    rows = sweep([(1, 40.0, 25.0), (8, 39.0, 25.0 * 8 * 1.12), (16, 39.0, 25.0 * 16 * 1.16), (32, 38.0, 25.0 * 32)])
    table = profile_rows(rows, None, "postgres / sync", KNEO["postgres / sync"])
    assert list(table["runs/s ÷ page"]) == ["0.51x", "0.51x", "0.51x", "0.51x"]  # shown beside, not graded
    assert grades(rows) == [NO_RATIO, GREEN, GREEN, GREEN]
    assert table[FLAT].iloc[0] == "anchor" and table[f"{FLAT} x"].iloc[0] == ""


def test_throughput_that_falls_with_concurrency_or_p50_growing_faster_than_the_pages_is_not_green():
    falling = sweep([(1, 40.0, 25.0), (8, 34.0, 25.0 * 8 * 1.12), (16, 30.0, 25.0 * 16 * 1.16), (32, 38.0, 800.0)])
    assert grades(falling)[1:3] == [AMBER, RED]  # 0.85 and 0.75 of the concurrency-1 rate against the page's ~0.97
    steep = sweep([(1, 40.0, 25.0), (8, 40.0, 25.0 * 8 * 1.12 * 1.4), (16, 40.0, 25.0 * 16 * 1.16 * 2.2)])
    assert grades(steep)[1:] == [AMBER, RED]  # p50 1.4x and 2.2x the page's growth
    shallow = sweep([(1, 40.0, 25.0), (8, 40.0, 25.0 * 8 * 1.12 * 0.6)])
    assert grades(shallow)[1] == AMBER  # p50 growing slower than linear is not the page's shape either


def test_p95_is_read_from_percentiles_and_peak_rss_is_kneo_serv_s_own(tmp_path):
    ladder = [(0, 50.0, 24.0), (0, 95.0, 31.0), (1, 50.0, 200.0), (1, 95.0, 330.0)]
    pd.DataFrame(
        [
            {"step": s, "request_type": "run sync", "name": "agent:echo.yaml", "percentile": q, "ms": v}
            for s, q, v in ladder
        ]
    ).to_csv(tmp_path / "percentiles.csv", index=False)
    samples = [(0, 0, KNEO_PID, 81.0), (1, 1, KNEO_PID, 83.0), (0, 0, PG, 127.0), (1, 1, PG, 139.0)]
    samples += [(0, 0, "generator", 300.0)]
    pd.DataFrame(
        [{"round": r, "step": s, "source": src, "metric": "rss_bytes", "value": v * 2**20} for r, s, src, v in samples]
    ).to_csv(tmp_path / "resources.csv", index=False)
    table = profile_rows(
        sweep([(1, 40.0, 24.0), (8, 41.0, 200.0)]), tmp_path, "postgres / sync", KNEO["postgres / sync"]
    )
    assert list(table["p95"]) == ["31 ms", "330 ms"] and list(table["page p95"]) == ["8.6 ms", "100 ms"]
    assert list(table["Peak RSS"]) == ["81 MiB", "83 MiB"]  # not PostgreSQL's 127-139 MiB, not the generator's
    assert LINEAR in table.columns


def test_a_rising_sweep_says_what_kneo_serv_s_cpu_did_and_the_rss_note_starts_before_the_first_run(tmp_path):
    samples = [(r, r // 2, KNEO_PID, "cpu_percent", 80.0 if r < 2 else 88.0) for r in range(4)]
    samples += [(r, r // 2, KNEO_PID, "rss_bytes", (77.0 if r == 0 else 81.0) * 2**20) for r in range(4)]
    pd.DataFrame(samples, columns=["round", "step", "source", "metric", "value"]).to_csv(
        tmp_path / "resources.csv", index=False
    )
    rising = sweep([(1, 38.0, 25.0), (4, 43.0, 92.0)])
    note = sweep_note(rising, tmp_path, "sqlite / sync")
    assert note is not None and note.startswith("sqlite / sync: runs/s rises 13% from concurrency 1 to 4")
    assert "80 % of a core, 21.1 ms of CPU a run at 1; 88 % of a core, 20.5 ms of CPU a run at 4" in note
    assert sweep_note(sweep([(1, 40.0, 25.0), (4, 41.0, 98.0)]), tmp_path, "sqlite / sync") is None  # flat: no note
    assert "It is 77 MiB before the first run" in (rss_note(tmp_path) or "")


def test_a_step_that_holds_its_shape_over_few_runs_says_few_samples():
    """At --scale 0.25 a sweep step is a second of runs: the flat shape's ±10 % needs 100 of them."""
    rows = sweep([(1, 40.0, 25.0), (8, 39.0, 25.0 * 8 * 1.12), (16, 39.0, 25.0 * 16 * 1.16)])
    rows["requests"] = [40, 39, 390]
    assert grades(rows) == [NO_RATIO, "few samples", GREEN]
