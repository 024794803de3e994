"""The FETCH-path benchmark's options (no measured run: figures only)."""

from __future__ import annotations

import pytest

from benchmarks.mark_fetch_path import main


@pytest.mark.parametrize("option", ["--users", "--fetches", "--rounds", "--corpus"])
def test_a_count_below_one_is_refused_in_one_line(option, capsys):
    assert main([option, "0"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_a_baseline_that_is_no_swarmgauge_tree_is_refused(tmp_path, capsys):
    assert main(["--baseline", str(tmp_path)]) == 2
    assert "not a swarmgauge tree" in capsys.readouterr().err
