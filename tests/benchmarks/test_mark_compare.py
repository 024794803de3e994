"""The side-by-side benchmark of two trees: its cases, its refusals and its table (no run: figures only)."""

from __future__ import annotations

import pytest

from benchmarks.mark_compare import main, parse_case, render, summary
from swarmgauge.errors import UsageError


def test_a_case_names_engine_policy_and_users():
    assert parse_case("qh3/pooled/16") == ("qh3", "pooled", 16)
    assert parse_case(" aioquic/paced/1 ") == ("aioquic", "paced", 1)


@pytest.mark.parametrize("text", ["qh3/pooled", "quiche/pooled/1", "qh3/slow/1", "qh3/fresh/0", "qh3/fresh/x"])
def test_a_bad_case_is_a_usage_error(text):
    with pytest.raises(UsageError):
        parse_case(text)


def test_a_baseline_that_is_no_tree_is_refused_in_one_line(tmp_path, capsys):
    assert main(["--baseline", str(tmp_path)]) == 2
    assert "not a swarmgauge tree" in capsys.readouterr().err


def test_each_case_shows_both_medians_and_their_ratio():
    rows = {"qh3/pooled/1": {"baseline": [300.0, 250.0, 260.0], "new": [200.0, 210.0, 190.0]}, "qh3/fresh/1": {}}
    table = summary(rows)
    assert table == [
        {
            "case": "qh3/pooled/1",
            "baseline": 260.0,
            "new": 200.0,
            "new_over_baseline": 0.77,
            "rounds": rows["qh3/pooled/1"],
        }
    ]
    assert "| qh3/pooled/1 | 260.0 | 200.0 | 0.77 | 300, 250, 260 | 200, 210, 190 |" in render(table)


def test_servers_other_than_one_or_each_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--baseline", str(tmp_path), "--servers", "both"])
    assert exited.value.code == 2
    assert "--servers: invalid choice" in capsys.readouterr().err
