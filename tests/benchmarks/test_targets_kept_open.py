"""The kept-open benchmark's JSON keeps other labels' figures and its table shows what kept-open adds."""

from __future__ import annotations

from benchmarks.targets_kept_open import chosen_probes, main, merge, table

ROW = {"target": "brain", "request": "GET /search", "configured_ms": 5.0, "kept_open_p50_ms": 48.0, "fresh_p50_ms": 6.5}


def test_a_new_label_is_added_beside_the_old_one_and_the_same_label_replaced():
    before = merge({}, "before", [ROW], {"requests": 50})
    after = merge(before, "after", [{**ROW, "kept_open_p50_ms": 5.5}], {"requests": 50})
    again = merge(after, "after", [{**ROW, "kept_open_p50_ms": 5.4}], {"requests": 30})
    assert list(again["runs"]) == ["before", "after"]
    assert again["runs"]["before"]["brain GET /search"]["kept_open_p50_ms"] == 48.0
    assert again["runs"]["after"]["brain GET /search"]["kept_open_p50_ms"] == 5.4
    assert again["settings"]["after"] == {"requests": 30}


def test_the_table_has_a_line_per_label_and_probe_with_what_kept_open_adds():
    lines = table(merge({}, "before", [ROW, {**ROW, "target": "mdk", "configured_ms": None}], {})).splitlines()
    assert len(lines) == 4
    assert lines[2].split()[-1] == "+41.50" and "floor" in lines[3]


def test_only_picks_a_target_s_probes_and_an_unknown_target_is_one_line_exit_2(capsys):
    assert {probe.name for probe in chosen_probes("mdk", 30)} == {"mdk"}
    assert main(["--only", "nginx", "--out", "/nonexistent/never-written.json"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "targets_kept_open: --only 'nginx': the targets are brain, kneo, mcp-gateway, mdk, sim-http"
    ]
