"""``swarmgauge demo``'s progress: each workload's line with its time and exit, the demo's elapsed time and an estimate
of what is left (the planned load left plus the start-up measured so far), and the exit each workload declares kept
in ``demo.json`` for the index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swarmgauge.cli import demo
from swarmgauge.cli.demo_pages import Page, Workload
from swarmgauge.cli.demo_progress import FIRST_GUESS_OVERHEAD_S, Progress


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_estimate_left_is_the_planned_load_left_plus_the_start_up_measured_so_far():
    clock = FakeClock()
    progress = Progress([30.0, 60.0, 90.0], clock)
    first_guess = 180 + 3 * FIRST_GUESS_OVERHEAD_S
    assert progress.opening() == f"3.0 min of load planned, about {first_guess / 60:.1f} min with start-up"
    assert (
        progress.starting(1, "kneo/sqlite-sync", "sync runs") == "[1/3] kneo/sqlite-sync: sync runs (planned 30 s) ..."
    )
    clock.now += 50.0  # 30 s of load and 20 s of start-up
    assert progress.finished(50.0) == "demo 50 s elapsed, about 3.2 min left"  # 60 + 90 + 2 x 20
    clock.now += 100.0  # 60 s of load and 40 s of start-up: 30 s a workload on average
    assert progress.finished(100.0) == "demo 2.5 min elapsed, about 2.0 min left"  # 90 + 30
    clock.now += 120.0
    assert progress.finished(120.0) == "demo 4.5 min elapsed, no workload left"


def test_a_workload_quicker_than_its_plan_counts_no_negative_start_up():
    progress = Progress([60.0, 60.0], FakeClock())
    progress.finished(45.0)  # stopped early
    assert progress.overhead() == 0.0 and progress.left() == 60.0


def fake_locust_run(codes: dict[str, int]):
    """Stands in for the Locust subprocess of a workload: a run folder with a ``steps.csv``, and the exit given."""

    def run(workload: Workload, run_dir: Path, log: Path | None, *, report: bool = True, **_handoff: object) -> int:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "steps.csv").write_text("step,label,request_type,name,users,requests,rps,p50_ms,p99_ms\n")
        return codes[workload.name]

    return run


@pytest.fixture
def two_workloads() -> Page:
    def workload(name: str, expected: int) -> Workload:
        return Workload(name, f"the {name} run", "brain_leak.py", ("-t", "2s"), None, expected_exit=expected)

    return Page("brain", "a page", "2dph-brain-perf.md", (workload("gate", 1), workload("soak", 0)))


def test_each_workload_prints_its_line_with_elapsed_and_time_left(monkeypatch, tmp_path, capsys, two_workloads):
    monkeypatch.setattr(demo, "run_workload", fake_locust_run({"gate": 1, "soak": 0}))
    assert demo.run_pages([two_workloads], tmp_path) == 0
    lines = capsys.readouterr().out.splitlines()
    # 2 s over its plan a workload at first, and the last run's report after the load (the others render under the
    # start-ups): 4 + 2 x 2 + 2
    assert lines[0].startswith("demo: 2 workloads, 4 s of load planned, about 10 s with start-up, into ")
    gate, soak = (line for line in lines if line.startswith("["))
    assert gate.startswith("[1/2] brain/gate: the gate run (planned 2 s) ... 0 s, exit 1 (expected): ")
    assert gate.endswith(" elapsed, about 4 s left")  # no start-up measured (the fake starts at once), the reports

    assert soak.startswith("[2/2] brain/soak: the soak run (planned 2 s) ... 0 s, exit 0: ")
    assert soak.endswith(" elapsed, no workload left, the reports next (about 2 s)")


def test_an_exit_other_than_the_declared_one_is_said_so_and_kept_for_the_index(
    monkeypatch, tmp_path, capsys, two_workloads
):
    monkeypatch.setattr(demo, "run_workload", fake_locust_run({"gate": 0, "soak": 2}))
    demo.run_pages([two_workloads], tmp_path)
    out = capsys.readouterr().out
    assert "brain/gate: the gate run (planned 2 s) ... 0 s, exit 0 (unexpected; declared 1): " in out
    assert "brain/soak: the soak run (planned 2 s) ... 0 s, exit 2 (unexpected; declared 0): " in out
    folder = tmp_path / "latest"
    workloads = json.loads((folder / "demo.json").read_text())["pages"][0]["workloads"]
    assert [(w["expected_exit"], w["exit_code"]) for w in workloads] == [(1, 0), (0, 2)]
    index = (folder / "report.md").read_text()
    assert "| 🔴 exit 0 (unexpected; declared 1) |" in index and "| 🔴 exit 2 (unexpected; declared 0) |" in index


def test_the_scale_is_kept_for_the_index_to_weigh_the_time_against_its_budget(
    monkeypatch, tmp_path, capsys, two_workloads
):
    monkeypatch.setattr(demo, "run_workload", fake_locust_run({"gate": 1, "soak": 0}))
    demo.run_pages([two_workloads], tmp_path, 0.25)
    folder = tmp_path / "latest"
    manifest = json.loads((folder / "demo.json").read_text())
    assert manifest["scale"] == 0.25
    assert set(manifest["machine"]["probe_ms"]) == {"start", "end"}  # the host's speed before and after the load
    assert "host speed at the start: " in capsys.readouterr().out
    index = (folder / "report.md").read_text()
    assert " min for brain (the budgets are for --all: 20 min at --scale 1, 6 min at --scale 0.25)." in index
    assert "--scale 0.25: steps and soaks shortened to a quarter" in index
    assert "Host speed: a fixed piece of Python work took " in index


def test_each_line_says_where_its_workload_spent_its_time_and_the_demo_ends_with_the_sum(
    monkeypatch, tmp_path, capsys, two_workloads
):
    from swarmgauge.cli.demo_phases import Phases

    def run(workload: Workload, run_dir: Path, log: Path | None, *, on_phases=None, **_handoff: object) -> int:
        fake_locust_run({"gate": 1, "soak": 0})(workload, run_dir, log)
        on_phases(Phases(started=10.0, ready=13.0, let_go=12.0, load_end=15.0, load_done=15.5, exited=16.5))
        return {"gate": 1, "soak": 0}[workload.name]

    monkeypatch.setattr(demo, "run_workload", run)
    demo.run_pages([two_workloads], tmp_path)
    lines = capsys.readouterr().out.splitlines()
    gate = next(line for line in lines if line.startswith("[1/2]"))
    assert " s (start-up 3.0 s (1.0 s waited), load 2.0 s, drain 0.5 s, end 1.0 s), exit 1 (expected): " in gate
    assert lines[-1].startswith("time by phase: start-up waited 2 s (of 6 s, the rest under the runs before), load 4 s")
    assert "(4 planned), drain 1 s, end 2 s, reports " in lines[-1]
    kept = json.loads((tmp_path / "latest" / "demo.json").read_text())["pages"][0]["workloads"][0]["phases_s"]
    assert kept == {"startup": 3.0, "waited": 1.0, "load": 2.0, "drain": 0.5, "end": 1.0}


def test_the_end_probe_runs_with_the_report_renderer_paused(monkeypatch, tmp_path, two_workloads):
    """The renderer works once a load is over; beside it on the other core the probe would read the host slower."""
    from swarmgauge.cli.demo_reports import StartUpReports

    events: list[str] = []

    class Recorded(StartUpReports):
        def pause(self) -> None:
            events.append("pause")
            super().pause()

        def resume(self) -> None:
            events.append("resume")
            super().resume()

    monkeypatch.setattr(demo, "StartUpReports", Recorded)
    monkeypatch.setattr(demo, "_probe", lambda when: events.append(f"probe {when}") or 24.0)
    monkeypatch.setattr(demo, "run_workload", fake_locust_run({"gate": 1, "soak": 0}))
    demo.run_pages([two_workloads], tmp_path)
    end = events.index("probe end")
    assert events[0] == "probe start" and events[end - 1] == "pause"
    assert json.loads((tmp_path / "latest" / "demo.json").read_text())["machine"]["probe_ms"] == {
        "start": 24.0,
        "end": 24.0,
    }
