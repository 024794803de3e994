"""A kneo sync sweep's anchor: its concurrency-1 steps pooled into one row (runs over seconds, latencies weighted by
runs), their CPU pooled the same way; each other step read against the concurrency-1 steps just before and after it
(interleaved at scale 1, the sweep's two ends below it), and when those two disagree past the flat tolerance a row
that strays says the machine moved, with both figures; the grade stays the shape's."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from swarmgauge.reports.index_grades import GREEN, NO_RATIO, RED, grade_table
from swarmgauge.reports.index_kneo_anchor import STEPS, anchor_at, bracket_of, fold_anchor, neighbours, pooled_sides
from swarmgauge.reports.index_kneo_profile import FLAT, READ_AGAINST, WHY, anchor_note, profile_rows
from swarmgauge.reports.index_kneo_rows import sync_by_users, sync_cpu_by_side
from swarmgauge.reports.index_pages import KNEO

KNEO_PID = "psutil:pidfile=/tmp/swarmgauge-kneo-x/kneo-serv-0.pid"
SQLITE = "sqlite / sync"


def sweep(points: list[tuple[int, float, float, float]]) -> pd.DataFrame:
    """Rows of one sweep, one step each: (users, runs/s, p50 ms, measured seconds); runs = runs/s x seconds."""
    return pd.DataFrame(
        [
            {
                "step": n,
                "request_type": "run sync",
                "name": "agent:echo.yaml",
                "users": u,
                "rps": r,
                "requests": round(r * s),
                "duration_s": s,
                "p50_ms": p50,
                "p99_ms": p50 * 1.5,
                "max_ms": p50 * 2,
            }
            for n, (u, r, p50, s) in enumerate(points)
        ]
    )


def cpu_run(folder: Path, rows: pd.DataFrame, shares: list[float]) -> Path:
    """A run folder: steps.csv of ``rows`` and kneo-serv's CPU (% of a core), three sampling rounds per step."""
    folder.mkdir(exist_ok=True)
    rows.to_csv(folder / "steps.csv", index=False)
    samples = [(3 * s + k, s, KNEO_PID, "cpu_percent", share) for s, share in enumerate(shares) for k in range(3)]
    pd.DataFrame(samples, columns=["round", "step", "source", "metric", "value"]).to_csv(
        folder / "resources.csv", index=False
    )
    return folder


def test_the_two_concurrency_1_steps_pool_into_one_anchor_row_in_the_first_ones_place():
    rows = sweep([(1, 30.0, 30.0, 10.0), (4, 40.0, 100.0, 7.0), (8, 42.0, 190.0, 7.0), (1, 40.0, 24.0, 10.0)])
    folded = fold_anchor(rows)
    assert list(folded["users"]) == [1, 4, 8]
    anchor = folded.iloc[0]
    assert anchor["requests"] == 700 and anchor["duration_s"] == 20.0 and anchor["rps"] == pytest.approx(35.0)
    assert anchor["p50_ms"] == pytest.approx((30.0 * 300 + 24.0 * 400) / 700)  # weighted by each step's runs
    assert anchor["max_ms"] == 60.0 and anchor[STEPS] == "0 3" and anchor["step"] == 0
    one = fold_anchor(rows.iloc[:3])  # a sweep measured once at 1 (a run of the plan before): as it was
    assert one.iloc[0]["rps"] == 30.0 and one.iloc[0][STEPS] == "0"


def test_cpu_is_pooled_over_the_anchors_steps_by_their_seconds():
    rows = sweep([(1, 30.0, 30.0, 10.0), (8, 42.0, 190.0, 7.0), (1, 40.0, 24.0, 30.0)])
    by_side = {0: {"kneo-serv": 90.0, "generator": 4.0}, 1: {"kneo-serv": 85.0}, 2: {"kneo-serv": 86.0}}
    pooled = pooled_sides(by_side, rows)
    assert pooled[0] == {"kneo-serv": pytest.approx((90.0 * 10 + 86.0 * 30) / 40)}  # a side both ends saw
    assert pooled[1] == by_side[1] and by_side[0]["kneo-serv"] == 90.0  # the input is left as it was


def test_two_ends_that_agree_grade_as_one_anchor_and_the_note_says_both(tmp_path):
    rows = sweep([(1, 40.0, 25.0, 10.0), (4, 41.0, 97.0, 7.0), (8, 41.0, 190.0, 7.0), (1, 39.0, 25.0, 10.0)])
    run = cpu_run(tmp_path / "run", rows, [86.0, 87.0, 87.0, 86.0])
    table = profile_rows(rows, run, SQLITE, KNEO[SQLITE])
    assert list(table["Concurrency"]) == [1, 4, 8] and table[FLAT].iloc[0] == "anchor"
    assert grade_table(table).grades == [NO_RATIO, GREEN, GREEN]
    note = anchor_note(rows, run, SQLITE) or ""
    assert "measured at the sweep's start and again at its end" in note
    assert "step 0 40.0 runs/s (21.5 ms of kneo-serv's CPU a run)" in note  # each end's figures
    assert "step 3 39.0 runs/s (22.1 ms of kneo-serv's CPU a run)" in note
    assert "each neighbouring pair within the flat tolerance of 10%" in note
    assert list(table[READ_AGAINST]) == [
        "c=1 steps 0, 3 pooled",
        *["c=1 steps 0 and 3: 40.0 and 39.0 runs/s, pooled 39.5"] * 2,
    ]


def test_ends_that_disagree_say_machine_bound_with_both_figures_and_keep_the_shapes_grade(tmp_path):
    # the clean-clone run's SQLite sweep: 30 ms of CPU a run at the start, 19 at the end, the same share of a core
    rows = sweep([(1, 29.0, 36.0, 14.0), (4, 23.0, 164.0, 7.0), (8, 44.0, 182.0, 7.0), (1, 45.0, 22.0, 10.0)])
    run = cpu_run(tmp_path / "run", rows, [87.0, 78.0, 87.0, 86.0])
    table = profile_rows(rows, run, SQLITE, KNEO[SQLITE])
    pooled = (29.0 * 14 + 45.0 * 10) / 24
    assert table["runs/s"].iloc[0] == f"{pooled:.0f}"
    assert grade_table(table).grades[0] == NO_RATIO and RED in grade_table(table).grades  # graded as measured
    why = table[WHY].fillna("").tolist()
    straying = [text for text in why[1:] if text]
    assert straying and all(
        text.startswith(
            "machine-bound: the c=1 steps just before and after this step disagree "
            "(kneo-serv's CPU a run 30.0 then 19.1 ms (-36%), runs/s 29.0 then 45.0 (+55%))"
        )
        for text in straying
    )
    note = anchor_note(rows, run, SQLITE) or ""
    assert "apart past the flat tolerance of 10%: steps 0 and 3: kneo-serv's CPU a run 30.0 then 19.1 ms" in note


def test_the_store_rows_read_the_pooled_anchor_and_its_pooled_cpu(tmp_path):
    rows = sweep([(1, 30.0, 30.0, 10.0), (8, 42.0, 190.0, 7.0), (1, 40.0, 24.0, 10.0)])
    run = cpu_run(tmp_path / "run", rows, [90.0, 85.0, 80.0])
    rps, _p50, step = sync_by_users(run)[1]
    assert rps == pytest.approx(35.0) and step == 0
    assert sync_cpu_by_side(run)[0]["kneo-serv"] == pytest.approx(85.0)


def test_a_sweep_with_one_concurrency_1_step_has_no_bracket():
    rows = sweep([(1, 30.0, 30.0, 10.0), (8, 42.0, 190.0, 7.0)])
    assert bracket_of(rows, {0: {"kneo-serv": 90.0}}) is None


def test_each_step_is_read_against_the_concurrency_1_steps_just_before_and_after_it():
    rows = sweep([(1, 30.0, 30.0, 5.0), (4, 31.0, 120.0, 7.0), (1, 32.0, 30.0, 5.0), (8, 40.0, 200.0, 7.0)])
    assert neighbours(rows, 1) == (0, 2) and neighbours(rows, 3) == (2,)  # the last step has only the one before
    anchor = anchor_at(rows, {0: {"kneo-serv": 90.0}, 2: {"kneo-serv": 80.0}}, 1)
    assert anchor is not None and anchor.steps == (0, 2) and anchor.rps == pytest.approx(31.0)
    assert anchor.sides == {"kneo-serv": pytest.approx(85.0)}  # the two steps' seconds alike
    assert anchor.bracket is not None and anchor.bracket.rps == (30.0, 32.0)


def test_an_interleaved_sweep_reads_a_drift_that_moves_steps_and_anchors_alike_as_flat(tmp_path):
    """The machine speeds up 30 to 41 runs/s over the sweep, steps and anchors alike: read against its neighbours each
    step is flat (green), where against every c=1 step pooled (34.8) the first and last would stray past 10 % (0.89,
    1.18)."""
    rows = sweep(
        [
            (1, 30.0, 25.0, 5.0),
            (4, 31.0, 25.0 * 4 * 1.27, 7.0),
            (1, 31.0, 25.0, 5.0),
            (8, 34.0, 25.0 * 8 * 1.24, 7.0),
            (1, 37.0, 25.0, 5.0),
            (16, 41.0, 25.0 * 16 * 1.15, 7.0),
            (1, 41.0, 25.0, 5.0),
        ]
    )
    run = cpu_run(tmp_path / "run", rows, [86.0] * 7)
    table = profile_rows(rows, run, SQLITE, KNEO[SQLITE])
    assert list(table["Concurrency"]) == [1, 4, 8, 16]
    assert grade_table(table).grades == [NO_RATIO, GREEN, GREEN, GREEN]
    assert list(table[READ_AGAINST]) == [
        "c=1 steps 0, 2, 4, 6 pooled",
        "c=1 steps 0 and 2: 30.0 and 31.0 runs/s, pooled 30.5",
        "c=1 steps 2 and 4: 31.0 and 37.0 runs/s, pooled 34.0",
        "c=1 steps 4 and 6: 37.0 and 41.0 runs/s, pooled 39.0",
    ]
    assert table[FLAT].tolist()[1:] == ["1.02", "1.00", "1.05"]
    note = anchor_note(rows, run, SQLITE) or ""
    assert "measured between every two steps" in note and "step 6 41.0 runs/s" in note
    assert "apart past the flat tolerance of 10%: steps 2 and 4: " in note  # 31 then 37: +19 %
    assert "steps 0 and 2" not in note.split("apart past", 1)[1]


def test_a_straying_step_whose_neighbours_disagree_says_machine_bound_with_both_and_others_do_not(tmp_path):
    rows = sweep(
        [
            (1, 40.0, 25.0, 5.0),
            (4, 40.0, 25.0 * 4 * 1.27, 7.0),
            (1, 40.0, 25.0, 5.0),
            (8, 30.0, 25.0 * 8 * 1.24, 7.0),  # the machine slowed under this step and the next anchor
            (1, 30.0, 25.0, 5.0),
            (16, 42.0, 25.0 * 16 * 1.15, 7.0),
            (1, 30.0, 25.0, 5.0),
        ]
    )
    run = cpu_run(tmp_path / "run", rows, [86.0] * 7)
    table = profile_rows(rows, run, SQLITE, KNEO[SQLITE])
    why = table[WHY].fillna("").tolist()
    assert why[1] == "" and why[3].startswith("machine-bound: kneo-serv")  # its neighbours agree: not the anchor's
    assert why[2].startswith(
        "machine-bound: the c=1 steps just before and after this step disagree (kneo-serv's CPU a run 21.5 then "
        "28.7 ms (+33%), runs/s 40.0 then 30.0 (-25%))"
    )
    assert grade_table(table).grades[2] != GREEN  # graded as measured: 30 against 35 pooled is 0.86
