"""Where a demo workload's time goes: its start-up (only what was left when the demo let it go counts), its load, its
drain and its end, from the times its handoff marks say; and the demo's closing line that sums them."""

from __future__ import annotations

from swarmgauge.cli.demo_phases import Phases, PhaseTotals, phase_text


def test_a_start_up_under_the_run_before_adds_only_what_was_left_of_it_when_let_go():
    # started at 100, ready at 106, let go at 104 (the run before exited): 2 s of its start-up were waited for
    phases = Phases(started=100.0, ready=106.0, let_go=104.0, load_end=126.0, load_done=129.5, exited=131.0)
    assert phases.seconds() == {"startup": 6.0, "waited": 2.0, "load": 20.0, "drain": 3.5, "end": 1.5}
    assert phases.text() == "start-up 6.0 s (2.0 s waited), load 20.0 s, drain 3.5 s, end 1.5 s"
    hidden = Phases(started=100.0, ready=103.0, let_go=104.0, load_end=124.0, load_done=124.0, exited=125.0)
    assert hidden.seconds()["waited"] == 0.0 and hidden.seconds()["load"] == 20.0  # the load begins at the go


def test_a_mark_that_never_came_leaves_its_phases_out_rather_than_guessed():
    failed_early = Phases(started=100.0, let_go=100.0, exited=101.0)  # it ended before it was ready
    assert failed_early.seconds() == {}
    assert failed_early.text() == ""
    no_drain_mark = Phases(started=100.0, ready=101.0, let_go=100.5, exited=110.0)
    assert no_drain_mark.seconds() == {"startup": 1.0, "waited": 0.5}


def test_the_closing_line_sums_each_phase_over_the_workloads_then_the_reports_and_the_index():
    totals = PhaseTotals()
    totals.add({"startup": 6.0, "waited": 2.0, "load": 20.0, "drain": 3.5, "end": 1.5}, 18.0)
    totals.add({"startup": 4.0, "waited": 0.0, "load": 10.0, "drain": 0.5, "end": 2.5}, 10.0)
    line = totals.text(reports_s=12.2, index_s=3.4, total_s=90.0)
    assert line == (
        "time by phase: start-up waited 2 s (of 10 s, the rest under the runs before), load 30 s (28 planned), "
        "drain 4 s, end 4 s, reports 12 s, index 3 s; 1.5 min in all"
    )
    assert phase_text({"load": 2.0}) == "load 2.0 s"
