"""The per-verb cost simulation of the stand-in's bucket: seeded, a LOOKUP of one round trip served twice as often as
a FETCH of two, a LOOKUP counted as half a read meeting fewer stalls, graded as the index rounds its ratios, and its
rows written as JSON."""

from __future__ import annotations

import json

from benchmarks.verb_cost_model import ROWS, Model, holds, main, simulate

TWO = {"FETCH": 2, "LOOKUP": 2, "LIST": 2}
WHOLE = {"FETCH": 1.0, "LOOKUP": 1.0, "LIST": 1.0}
LOOKUP_16 = next(row for row in ROWS if row.label == "QUIC LOOKUP 16")
FETCH_16 = next(row for row in ROWS if row.label == "QUIC FETCH 16")


def _answers(row, model, seconds=30.0):
    return len(simulate(row, model, seconds, seed=6309)) // 2


def test_one_setting_gives_one_answer():
    model = Model("as-is", TWO, WHOLE)
    assert simulate(LOOKUP_16, model, 10.0, seed=1) == simulate(LOOKUP_16, model, 10.0, seed=1)


def test_a_lookup_of_one_round_trip_is_answered_about_twice_as_often_as_a_fetch_of_two():
    one_trip = Model("lookup-one-trip", TWO | {"LOOKUP": 1}, WHOLE)
    ratio = _answers(LOOKUP_16, one_trip) / _answers(FETCH_16, one_trip)
    assert 1.8 < ratio < 2.2


def test_a_lookup_counted_as_half_a_read_meets_fewer_stalls_so_its_slowest_answers_come_sooner():
    whole, half = Model("as-is", TWO, WHOLE), Model("fewer", TWO, WHOLE | {"LOOKUP": 0.5})

    def slowest(model):
        latencies = sorted(simulate(LOOKUP_16, model, 120.0, seed=6309)[1::2])
        return latencies[int(0.99 * len(latencies))]

    assert slowest(half) < slowest(whole)


def test_a_row_holds_only_with_every_figure_within_its_tolerance_as_the_index_rounds_it():
    rps, p50, p99 = LOOKUP_16.page
    assert holds(LOOKUP_16, (rps, p50, p99 * 1.154))  # shown as 1.15x
    assert not holds(LOOKUP_16, (rps, p50, p99 * 1.156))  # shown as 1.16x
    assert not holds(LOOKUP_16, (rps * 2, p50, p99))


def test_the_rows_are_written_as_json(tmp_path, capsys):
    out = tmp_path / "model.json"
    assert main(["--seconds", "20", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert {row["model"] for row in rows} >= {"as-is", "lookup-one-trip"}
    assert {row["row"] for row in rows} == {row.label for row in ROWS}
    assert "rows whose median window holds" in capsys.readouterr().out
