"""The end of a run is a written order: handlers run by their step's place in it, not by when they registered."""

from __future__ import annotations

import pytest

from swarmgauge.core.lifecycle import CLOSING, END_STEPS, NOT_AT_STOP, OPENING, STOP_STEPS, RunEnd


def test_the_end_of_a_run_is_these_steps_in_this_order():
    assert OPENING == ("one end at a time", "users stopped", "final reports in", "web run closed")
    assert CLOSING == (
        "ledgers reconciled",
        "resources sampled",
        "tables rewritten",
        "verdicts decided",
        "run folder closed",
        "connections closed",
        "targets stopped",
    )
    assert END_STEPS == OPENING + CLOSING


def test_handlers_run_in_the_order_of_their_steps_whatever_order_they_registered_in():
    end, seen = RunEnd(), []
    for step in reversed(END_STEPS):
        end.at_end(step, lambda environment, step=step: seen.append((environment, step)))
    assert end.run("env", CLOSING) == list(CLOSING)
    assert seen == [("env", step) for step in CLOSING]


def test_a_failing_step_does_not_skip_the_later_ones_and_its_error_comes_out_after_them():
    end, seen = RunEnd(), []

    def broken(_environment: object) -> None:
        raise OSError("disk full")

    end.at_end("tables rewritten", broken)
    end.at_end("run folder closed", lambda _environment: seen.append("closed"))
    with pytest.raises(OSError, match="disk full"):
        end.run(None, CLOSING)
    assert seen == ["closed"]


def test_an_unknown_step_is_refused_and_a_handler_registers_once():
    end = RunEnd()
    with pytest.raises(ValueError, match="no end-of-run step 'report'"):
        end.at_end("report", print)
    end.at_end("targets stopped", print)
    end.at_end("targets stopped", print)
    assert end.handlers["targets stopped"] == [print]


def test_a_stop_runs_the_same_steps_in_the_same_order_less_the_processs():
    assert NOT_AT_STOP == ("one end at a time", "web run closed", "connections closed", "targets stopped")
    assert STOP_STEPS == (
        "users stopped",
        "final reports in",
        "ledgers reconciled",
        "resources sampled",
        "tables rewritten",
        "verdicts decided",
        "run folder closed",
    )
    assert tuple(step for step in END_STEPS if step not in NOT_AT_STOP) == STOP_STEPS


def test_a_stop_only_handler_runs_at_a_stop_after_its_steps_others_and_never_at_a_quit():
    end, seen = RunEnd(), []
    end.at_end("tables rewritten", lambda _environment: seen.append("stop only"), only_at_stop=True)
    end.at_end("tables rewritten", lambda _environment: seen.append("always"))
    assert end.run(None, CLOSING) == ["tables rewritten"]
    assert seen == ["always"]
    seen.clear()
    assert end.run(None, STOP_STEPS, at_stop=True) == ["tables rewritten"]
    assert seen == ["always", "stop only"]


def test_a_stop_only_handler_at_a_step_of_the_process_is_refused():
    with pytest.raises(ValueError, match="no end-of-run step 'targets stopped'"):
        RunEnd().at_end("targets stopped", print, only_at_stop=True)
