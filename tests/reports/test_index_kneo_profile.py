"""The kneo page's reference profile graded by its shape over hand-made run folders: a sweep at this machine's
absolutes that is flat with linear latency is green, one whose throughput falls or whose p50 grows faster than the
page's is not; p95 comes from percentiles.csv; Peak RSS is kneo-serv's own, never the PostgreSQL cluster's."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from swarmgauge.reports.index_grades import AMBER, GREEN, NO_RATIO, RED, grade_table
from swarmgauge.reports.index_kneo_profile import (
    FLAT,
    LINEAR,
    WHY,
    cpu_why,
    profile_rows,
    rss_note,
    rss_shape_rows,
    sweep_note,
)
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
    assert note is not None and note.startswith("sqlite / sync: runs/s rises 13% from concurrency 1 to 4 (c=1 step 0")
    assert "80 % of a core, 21.1 ms of CPU a run at 1; 88 % of a core, 20.5 ms of CPU a run at 4" in note
    assert sweep_note(sweep([(1, 40.0, 25.0), (4, 41.0, 98.0)]), tmp_path, "sqlite / sync") is None  # flat: no note
    assert "77 MiB before the first run" in (rss_note(tmp_path) or "")


def test_a_sweep_row_off_the_pages_shape_says_kneo_serv_s_cpu_and_stays_graded(tmp_path):
    # the baseline's postgres / sync: one process near a core at both steps, its CPU a run 21 ms at 1 and 26 at 8
    samples = [(r, r // 3, KNEO_PID, "cpu_percent", 81.0 if r < 3 else 83.0) for r in range(9)]
    pd.DataFrame(samples, columns=["round", "step", "source", "metric", "value"]).to_csv(
        tmp_path / "resources.csv", index=False
    )
    rows = sweep([(1, 39.0, 25.0), (8, 32.0, 243.0), (16, 39.0, 25.0 * 16 * 1.16)])
    table = profile_rows(rows, tmp_path, "postgres / sync", KNEO["postgres / sync"])
    assert grades(rows, tmp_path)[1:] == [AMBER, GREEN]  # the reason is shown; the colour stays the shape's
    why = table[WHY].fillna("").tolist()
    assert why[0] == "" and why[2] == ""  # the anchor and a row that holds say nothing
    assert why[1].startswith("machine-bound: kneo-serv 83 % of a core, 25.9 ms of CPU a run at 8; 81 %, 20.8 ms at 1")
    assert why[1].endswith("the share moved +2% and the CPU a run +25%, both this machine's, not the store's shape")


def rss_run(folder: Path, peaks: list[float], before: float) -> Path:
    """kneo-serv's RSS: ``before`` at the first round, then one step per peak (two rounds each)."""
    folder.mkdir()
    samples = [(0, 0, KNEO_PID, "rss_bytes", before * 2**20)]
    samples += [
        (1 + 2 * s + k, s, KNEO_PID, "rss_bytes", (peak - 1 + k) * 2**20)
        for s, peak in enumerate(peaks)
        for k in (0, 1)
    ]
    samples += [(r, 0, PG, "rss_bytes", 140 * 2**20) for r in range(3)]
    pd.DataFrame(samples, columns=["round", "step", "source", "metric", "value"]).to_csv(
        folder / "resources.csv", index=False
    )
    return folder


def test_peak_rss_is_graded_by_the_pages_flat_shape_and_its_growth_over_idle_is_shown(tmp_path):
    # the baseline: 77 MiB before the first run, 81-84 MiB peaks: flat as the page's 56-58, 25 MiB above it
    runs = {"sqlite-sync": rss_run(tmp_path / "a", [81.0, 81.0, 82.0, 82.0], 77.0)}
    runs["postgres-queue"] = rss_run(tmp_path / "b", [84.0], 78.0)
    table = rss_shape_rows(runs, ("sqlite-sync", "postgres-sync", "postgres-queue"))
    graded = grade_table(table)
    assert graded.grades == [GREEN, NO_RATIO]
    assert table["figure"].iloc[0] == "Peak RSS spread over 5 shapes, highest ÷ lowest - 1 (81 to 84 MiB)"
    assert table["measured"].iloc[0] == "3.7 %" and table["page"].iloc[0] == "3.6 %"  # not PostgreSQL's 140 MiB
    assert table["measured"].iloc[1] == "+7 MiB"  # 84 over the 77 before the first run
    growing = {"sqlite-sync": rss_run(tmp_path / "c", [81.0, 84.0, 88.0, 92.0], 77.0)}
    assert (
        grade_table(rss_shape_rows(growing, ("sqlite-sync",))).grades[0] == RED
    )  # 13.6 %: past twice the page's 5.4 %


def test_a_peak_rss_spread_within_the_pages_own_words_is_flat_and_past_them_is_not(tmp_path):
    # the page's table spreads 3.6 % (56-58 MiB), its text calls ~56-59 MiB flat (5.4 %)
    within = {"sqlite-sync": rss_run(tmp_path / "a", [79.0, 80.0, 81.0, 83.0], 78.0)}  # 5.1 %, a loaded run's
    assert grade_table(rss_shape_rows(within, ("sqlite-sync",))).grades[0] == GREEN
    past = {"sqlite-sync": rss_run(tmp_path / "b", [79.0, 80.0, 81.0, 85.0], 78.0)}  # 7.6 %
    assert grade_table(rss_shape_rows(past, ("sqlite-sync",))).grades[0] == AMBER


def test_a_sweep_row_measured_while_others_filled_the_machine_says_so():
    why = cpu_why(8, (12.0, 4.1), (13.0, 4.7), load=8.2, cores=2)
    assert why.startswith("machine-bound: others filled the machine (load average 8.2 on 2 cores): kneo-serv 12 %")
    assert not cpu_why(8, (12.0, 4.1), (13.0, 4.7), load=0.9, cores=2).startswith("machine-bound")


def test_a_step_that_holds_its_shape_over_few_runs_says_few_samples():
    """At --scale 0.25 a sweep step is a second of runs: the flat shape's ±10 % needs 100 of them."""
    rows = sweep([(1, 40.0, 25.0), (8, 39.0, 25.0 * 8 * 1.12), (16, 39.0, 25.0 * 16 * 1.16)])
    rows["requests"] = [40, 39, 390]
    assert grades(rows) == [NO_RATIO, "few samples", GREEN]


def test_a_sweep_row_off_the_shape_splits_the_concurrency_1_run_into_kneo_serv_s_cpu_and_its_wait(tmp_path):
    """At 1 the generator's CPU is on every run's path (kneo-serv waits for the next request): the row says how much
    of the run kneo-serv computed, how long it waited and the generator's and PostgreSQL's parts of that wait."""
    samples = [(r, r // 3, KNEO_PID, "cpu_percent", 80.0 if r < 3 else 85.0) for r in range(6)]
    samples += [(r, r // 3, "generator", "cpu_percent", 8.0 if r < 3 else 12.0) for r in range(6)]
    samples += [(r, r // 3, PG, "cpu_percent", 10.0 if r < 3 else 14.0) for r in range(6)]
    pd.DataFrame(samples, columns=["round", "step", "source", "metric", "value"]).to_csv(
        tmp_path / "resources.csv", index=False
    )
    rows = sweep([(1, 40.0, 25.0), (8, 46.0, 25.0 * 8)])
    why = profile_rows(rows, tmp_path, "postgres / sync", KNEO["postgres / sync"])[WHY].fillna("").tolist()
    assert why[1].startswith("machine-bound: kneo-serv 85 % of a core, 18.5 ms of CPU a run at 8; 80 %, 20.0 ms at 1")
    assert why[1].endswith(
        "; at 1 a run took 25.0 ms, kneo-serv computing 20.0 and waiting 5.0 of them (2.0 the generator's CPU, 2.5 "
        "PostgreSQL's CPU, 0.5 no side computing: loopback, the store's I/O, hand-offs, a wait for a core), a wait the "
        "runs in flight at 8 fill"
    )


def test_a_row_graded_amber_at_the_edge_of_its_tolerance_says_why(tmp_path):
    """The index grades the ratio it shows: 1.0967x shows as 1.10x and grades amber, so the row says why as well."""
    samples = [(r, r // 3, KNEO_PID, "cpu_percent", 85.0) for r in range(6)]
    pd.DataFrame(samples, columns=["round", "step", "source", "metric", "value"]).to_csv(
        tmp_path / "resources.csv", index=False
    )
    rows = sweep([(1, 40.0, 25.0), (16, 40.0 * 1.0967 * 76 / 79, 25.0 * 16 * 1.16)])
    table = profile_rows(rows, tmp_path, "postgres / sync", KNEO["postgres / sync"])
    assert table[f"{FLAT} x"].iloc[1] == "1.10x" and grades(rows, tmp_path)[1] == AMBER
    assert table[WHY].iloc[1].startswith("machine-bound: kneo-serv 85 % of a core")
