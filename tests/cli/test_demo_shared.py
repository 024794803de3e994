"""A page's shared process (the kneo page's fork template): started with the page's first workload, its environment
handed to that page's workloads and none before them, ended after the loads with its environment taken back; one
that cannot start is one line, and the workloads run without it."""

from __future__ import annotations

import os
from pathlib import Path

from swarmgauge.cli import demo
from swarmgauge.cli.demo_pages import Page, Workload
from swarmgauge.errors import SwarmgaugeError
from tests.cli.test_demo_progress import fake_locust_run

VARIABLE = "SWARMGAUGE_TEST_SHARED"


class FakeShared:
    """Stands in for the fork template: an environment, and its close counted."""

    def __init__(self) -> None:
        self.closed = 0

    def environment(self) -> dict[str, str]:
        return {VARIABLE: "/tmp/shared.sock"}

    def close(self) -> None:
        self.closed += 1


def _page(name: str, shared=None) -> Page:
    run = Workload(f"{name}-run", "a run", "brain_leak.py", ("-t", "1s"), None)
    return Page(name, "a page", "2dph-brain-perf.md", (run,), shared=shared)


def _recording_runs(seen: dict[str, str | None]):
    record = fake_locust_run({"plain-run": 0, "sharing-run": 0})

    def run(workload: Workload, run_dir: Path, log: Path | None, **handoff: object) -> int:
        seen[workload.name] = os.environ.get(VARIABLE)
        return record(workload, run_dir, log)

    return run


def test_the_shared_process_starts_with_its_page_and_ends_after_the_loads(monkeypatch, tmp_path):
    started: list[FakeShared] = []

    def launch() -> FakeShared:
        started.append(FakeShared())
        return started[-1]

    seen: dict[str, str | None] = {}
    monkeypatch.setattr(demo, "run_workload", _recording_runs(seen))
    monkeypatch.delenv(VARIABLE, raising=False)
    assert demo.run_pages([_page("plain"), _page("sharing", launch)], tmp_path) == 0
    assert seen == {"plain-run": None, "sharing-run": "/tmp/shared.sock"}
    assert len(started) == 1 and started[0].closed == 1
    assert VARIABLE not in os.environ


def test_a_shared_process_that_cannot_start_is_one_line_and_the_page_runs_without_it(monkeypatch, tmp_path, capsys):
    def launch() -> FakeShared:
        raise SwarmgaugeError("no Python >= 3.12 for it")

    seen: dict[str, str | None] = {}
    monkeypatch.setattr(demo, "run_workload", _recording_runs(seen))
    monkeypatch.delenv(VARIABLE, raising=False)
    assert demo.run_pages([_page("sharing", launch)], tmp_path) == 0
    assert seen == {"sharing-run": None}
    lines = [line for line in capsys.readouterr().out.splitlines() if "shared by" in line]
    assert lines == ["sharing: no process shared by its workloads (no Python >= 3.12 for it): each starts on its own"]
