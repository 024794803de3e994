"""benchmarks/open_model_tail.py: refuses a round count it cannot run, and finds the stop tick in a run's log."""

from __future__ import annotations

from benchmarks import open_model_tail


def test_no_rounds_is_refused_in_one_line(capsys):
    assert open_model_tail.main(["--rounds", "0"]) == 2
    assert capsys.readouterr().err.strip() == "open_model_tail: --rounds must be at least 1"


def test_the_stop_tick_is_the_shapes_ramp_to_no_users():
    line = "[2026-12-05 21:25:51,889] vm/INFO/locust.runners: Shape test updating to 0 users at 10000.00 spawn rate"
    found = open_model_tail.STOP_TICK.match(line)
    assert found is not None and found.group(1) == "2026-12-05 21:25:51,889"
    assert open_model_tail.STOP_TICK.match(line.replace("0 users at 10000", "0 users at 10.00")) is None
