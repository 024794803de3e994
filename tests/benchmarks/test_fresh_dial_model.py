"""The fresh-dial model simulation: seeded (one setting gives one answer), graded against the page's fresh rows at
their tolerance, and its rows written as JSON."""

from __future__ import annotations

import json

from benchmarks.fresh_dial_model import PAGE, holds, main, simulate


def test_one_setting_gives_one_answer():
    assert simulate(16, 0.3, seconds=20.0) == simulate(16, 0.3, seconds=20.0)


def test_a_row_holds_only_with_all_three_figures_within_the_tolerance():
    rps, p50, p99 = PAGE[16]
    assert holds({"users": 16, "rps": rps * 0.8, "p50_ms": p50 * 1.2, "p99_ms": p99})
    assert not holds({"users": 16, "rps": rps, "p50_ms": p50 * 1.3, "p99_ms": p99})


def test_the_rows_are_written_as_json(tmp_path, capsys):
    out = tmp_path / "model.json"
    assert main(["--shares", "0.3", "--seconds", "15", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [(row["users"], row["share"]) for row in rows] == [(16, 0.3), (64, 0.3)]
    assert "16 users, share 0.30" in capsys.readouterr().out
