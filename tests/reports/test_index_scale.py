"""The demo index's budget by ``--scale`` and the line a shortened run's index says about its rows."""

from __future__ import annotations

import pytest

from swarmgauge.reports.index_scale import budget_minutes, scale_note


@pytest.mark.parametrize(
    ("scale", "minutes"), [(0.1, 6.0), (0.25, 6.0), (0.5, 6 + 14 / 3), (0.625, 13.0), (1.0, 20.0), (2.0, 40.0)]
)
def test_the_budget_is_the_issues_at_its_two_scales_and_a_straight_line_between(scale, minutes):
    assert budget_minutes(scale) == pytest.approx(minutes)


def test_a_shortened_run_says_its_holds_were_shortened_and_its_rows_are_noisier():
    assert scale_note(0.25) == (
        "--scale 0.25: steps and soaks shortened to a quarter, their floors with them (never under what a workload's "
        'mechanism needs); rows are noisier, and a row read over fewer requests than its tolerance needs says "few '
        'samples".'
    )
    assert "steps and soaks shortened to 0.1 of their length" in scale_note(0.1)
    assert scale_note(1.0) == scale_note(2.0) == scale_note(None) == ""
