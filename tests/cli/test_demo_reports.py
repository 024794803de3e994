"""The demo's run reports, rendered after the load by a process per core: each run folder gets its report, and one
that cannot be rendered is said in one line without losing the others."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from swarmgauge.cli.demo import locust_command
from swarmgauge.cli.demo_pages import Workload
from swarmgauge.cli.demo_reports import StartUpReports, render_reports

HEADER = (
    "step,label,request_type,name,users,target_rate,started_at,duration_s,requests,failures,unfinished,fail_ratio,rps,"
    "p50_ms,p90_ms,p99_ms,p999_ms,max_ms,avg_ms,warmup_requests,dropped,tickets,user_errors,workers,generator_cpu_max,"
    "generator_bound,generator_stall_ms,stalled_requests,generator_stalled\n"
)
ROW = ",1,,1000.0,8.5,1243,0,0,0.0,146.7,6.1,8.1,11.1,31.6,1439.1,7.8,0,0,0,0,1,10.0,False,,0,False\n"
STEPS = HEADER + "0,run,GET,/search" + ROW + "0,run,,Aggregated" + ROW


def run_folder(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "steps.csv").write_text(STEPS)
    (path / "run.json").write_text(json.dumps({"started_at": 0.0, "ended_at": 10.0, "state": "ended"}))
    return path


def test_every_run_gets_its_report_and_one_that_fails_is_said(tmp_path):
    runs = [run_folder(tmp_path / f"run-{n}") for n in range(3)]
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "run.json").write_text("{")  # a run.json no report can read
    (broken / "steps.csv").write_text("not,a\n1")
    took, processes, failed = render_reports([*runs, broken])
    assert processes >= 1 and took >= 0
    for run in runs:
        assert "| GET /search |" in (run / "report.md").read_text() and (run / "summary.json").is_file()
    assert len(failed) == 1 and failed[0].startswith(f"{broken}: ")  # said, and the three others rendered


def test_a_demo_workload_leaves_its_report_to_after_the_load():
    workload = Workload("w", "what", "brain_leak.py", ("-t", "2s"), None)
    deferred = locust_command(workload, Path("f.py"), None, Path("/tmp/r"), report=False)
    at_once = locust_command(workload, Path("f.py"), None, Path("/tmp/r"))
    assert deferred[-2:] == ["--no-report", "--brief-summary"]  # the summary's step tables are in the report too
    assert "--no-report" not in at_once and "--brief-summary" not in at_once


class _FakeReportProcess:
    """Stands in for one report process (below the seam under test: how their ends are told apart)."""

    outputs = iter([("failed: /runs/a: ValueError: no rows\n", 1), ("Segmentation fault\n", -11)])

    def __init__(self, *_args, **_kwargs) -> None:
        self.out, self.returncode = next(self.outputs)

    def communicate(self, timeout=None):
        return self.out, None


def test_a_report_process_that_dies_is_said_even_when_another_said_a_failure(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    monkeypatch.setattr("subprocess.Popen", _FakeReportProcess)
    _took, processes, failed = render_reports([Path("/runs/a"), Path("/runs/b")])
    assert processes == 2
    assert failed[0] == "/runs/a: ValueError: no rows"
    assert failed[1].startswith("a report process ended with -11: Segmentation fault")


def _stopped(pid: int) -> bool:
    """The process is stopped (state T), looked at for up to 5 s: a signal is delivered asynchronously."""
    for _ in range(100):
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T":
            return True
        time.sleep(0.05)
    return False


def test_start_up_reports_render_one_run_at_a_time_pause_and_give_back_what_they_did_not_render(tmp_path):
    runs = [run_folder(tmp_path / f"run-{n}") for n in range(2)]
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "run.json").write_text("{")
    (broken / "steps.csv").write_text("not,a\n1")
    reports = StartUpReports()
    for run in [runs[0], broken]:
        reports.add(run)
    reports.resume()
    for _ in range(1200):  # bounded: 120 s
        reports.tick()
        if len(reports.rendered) + len(reports.failed) == 2:
            break
        time.sleep(0.1)
    assert reports.rendered == [runs[0]] and (runs[0] / "report.html").is_file()
    assert len(reports.failed) == 1 and reports.failed[0].startswith(f"{broken}: ")
    reports.pause()
    pid = reports.pid
    assert pid is not None and _stopped(pid)  # stopped: nothing runs beside a load
    reports.add(runs[1])  # a run finished during the load: not rendered while paused
    reports.tick()
    left = reports.finish()
    assert left == [runs[1]] and reports.pid is None and not Path(f"/proc/{pid}").exists()  # handed on, ended
    assert not (runs[1] / "report.html").exists()


def test_start_up_reports_never_started_give_back_every_run():
    reports = StartUpReports()
    reports.add(Path("/runs/a"))
    reports.pause()
    assert reports.finish() == [Path("/runs/a")]


def test_after_the_last_load_the_start_up_renderer_renders_every_run_left_and_gives_back_none(tmp_path):
    runs = [run_folder(tmp_path / f"run-{n}") for n in range(3)]
    reports = StartUpReports()
    reports.add(runs[0])
    reports.resume()  # the renderer started, given its first run, as between two loads
    reports.pause()
    for run in runs[1:]:
        reports.add(run)
    assert reports.pending == 3
    reports.render_rest()  # unpaused, handed the rest at once: no tick needed
    pid = reports.pid
    assert reports.wait_rest() == []  # nothing left for a fresh process
    assert reports.rendered == runs and reports.pending == 0
    assert all((run / "report.html").is_file() for run in runs)
    assert pid is not None and not Path(f"/proc/{pid}").exists()


def test_the_rest_handed_to_a_renderer_that_dies_is_given_back(tmp_path):
    runs = [run_folder(tmp_path / f"run-{n}") for n in range(2)]
    reports = StartUpReports()
    for run in runs:
        reports.add(run)
    reports.render_rest()  # never started between loads: started now
    pid = reports.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert sorted(reports.wait_rest()) == sorted(run for run in runs if run not in reports.rendered)


def test_a_stopped_start_up_renderer_dies_with_a_demo_killed_by_a_signal(tmp_path):
    """A demo ended by SIGTERM or SIGKILL runs no ``finally``: its renderer, stopped before a workload's go, would
    wait for a SIGCONT forever."""
    import subprocess
    import sys

    run = run_folder(tmp_path / "run")
    demo = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from pathlib import Path\n"
            "from swarmgauge.cli.demo_reports import StartUpReports\n"
            "reports = StartUpReports()\n"
            f"reports.add(Path({str(run)!r}))\n"
            "reports.resume()\n"
            "reports.pause()\n"
            "print(reports.pid, flush=True)\n"
            "time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert demo.stdout is not None
        renderer = int(demo.stdout.readline())
        assert _stopped(renderer)
    finally:
        demo.kill()
        demo.wait(timeout=10)
    for _ in range(100):  # bounded: 5 s
        if not _alive(renderer):
            break
        time.sleep(0.05)
    assert not _alive(renderer)


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie waiting for its new parent to reap it."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False
