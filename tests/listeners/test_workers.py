"""Worker loss in a real distributed run: SIGKILL one of two workers in the middle of a step.

The run completes, ``run.json`` names the lost worker with the time it was last heard from and the steps it
touched, the report shows it, and every request it reported before dying is in ``steps.csv``: the steps' total
is the survivor's requests as the target recorded them plus exactly what the watcher saw the dead worker report,
and that is bracketed by the target's own record of the dead worker's requests (all of them at most; at least
those that arrived before its last report).
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from swarmgauge.listeners.workers import WorkerLossWatcher
from swarmgauge.run_folders import resolve
from tests.listeners.sim_run import read_steps, sim_target, start_distributed

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs

LOCUSTFILE = Path(__file__).resolve().parent / "workers_locustfile.py"
STEP_TIME = 10
KILL_AFTER = 4.0
RUN_SECONDS = 120


class _Client:
    def __init__(self, id: str, state: str) -> None:
        self.id, self.state = id, state


class _Clients(dict):
    pass


class _Env:
    """A fake environment below the watcher: only the master's worker table the watcher reads."""

    def __init__(self) -> None:
        self.runner = type("Runner", (), {"clients": _Clients()})()


def test_watcher_records_a_missing_worker_once_with_what_it_reported():
    env = _Env()
    watcher = WorkerLossWatcher(env)
    watcher.reported_by(
        "w1",
        {
            "swarmgauge_steps": {
                "entries": [[0, "GET", "/item", "", 7, 0, 1.0, 1.0, 0], [1, "GET", "/item", "", 3, 0, 1.0, 1.0, 0]]
            },
            "stats_total": {"num_requests": 10},
        },
    )
    env.runner.clients["w1"] = _Client("w1", "missing")
    env.runner.clients["w2"] = _Client("w2", "running")
    watcher.check()
    watcher.check()
    assert [e["worker"] for e in watcher.lost] == ["w1"]
    entry = watcher.lost[0]
    assert entry["requests_reported"] == {"0": 7, "1": 3} and entry["steps_touched"] == [0, 1]
    assert entry["locust_requests_reported"] == 10 and entry["last_report_at"] <= entry["noticed_at"]


def _report(step: int, requests: int) -> dict:
    return {"swarmgauge_steps": {"entries": [[step, "GET", "/item", "", requests, 0, 1.0, 1.0, 0]]}}


def test_a_lost_worker_whose_heartbeat_returns_is_marked_rejoined_and_its_later_reports_counted():
    env = _Env()
    watcher = WorkerLossWatcher(env)
    watcher.reported_by("w1", _report(0, 7))
    env.runner.clients["w1"] = _Client("w1", "missing")
    watcher.check()
    [entry] = watcher.lost
    assert entry["rejoined_at"] is None
    watcher.heard_from("w1")  # Locust's master re-admits a missing worker on its next heartbeat
    env.runner.clients["w1"].state = "running"
    watcher.reported_by("w1", _report(1, 5))  # what it queued while cut off, and what it measured after
    watcher.check()
    assert watcher.lost == [entry] and entry["rejoined_at"] is not None
    assert entry["requests_reported_when_lost"] == {"0": 7}
    assert entry["requests_reported"] == {"0": 7, "1": 5} and entry["steps_touched"] == [0, 1]
    env.runner.clients["w1"].state = "missing"  # cut off a second time: a second loss
    watcher.check()
    assert [e["worker"] for e in watcher.lost] == ["w1", "w1"] and watcher.lost[1]["rejoined_at"] is None


def test_a_heartbeat_from_a_worker_never_lost_records_nothing():
    env = _Env()
    watcher = WorkerLossWatcher(env)
    watcher.heard_from("w2")
    env.runner.clients["w2"] = _Client("w2", "running")
    watcher.check()
    assert watcher.lost == []


def _start(tmp_path: Path, host: str):
    """A master with two workers running a two-step plan; stopped on exit."""
    plan = tmp_path / "plan.yaml"
    plan.write_text(f"name: kill\nkind: step_ramp\nsteps: [2, 4]\nstep_time: {STEP_TIME}s\nwarmup: 0s\n")
    args = ("--plan", str(plan), "--stop-timeout", "5", "--run-dir", str(tmp_path / "run"))
    return start_distributed(host, *args, locustfile=LOCUSTFILE, grace=0)


def _wait_for_step_zero(run_dir: Path, master: subprocess.Popen) -> float:
    """The wall time the first step began (run.json is written at test_start), bounded."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and master.poll() is None:
        if (resolve(run_dir) / "run.json").exists():
            started = json.loads((resolve(run_dir) / "run.json").read_text()).get("started_at")
            if started:
                return float(started)
        time.sleep(0.2)
    raise AssertionError("the run did not start")


def test_sigkill_of_a_worker_mid_step_loses_nothing_it_reported(tmp_path: Path):
    run_dir = tmp_path / "run"
    with sim_target("--delay", "const:5") as target:
        with _start(tmp_path, target.url) as run:
            master, (victim, survivor) = run.master, run.workers
            started = _wait_for_step_zero(run_dir, master)
            time.sleep(max(0.0, started + KILL_AFTER - time.time()))
            killed_at = time.time()
            victim.send_signal(signal.SIGKILL)
            stdout, stderr = master.communicate(timeout=RUN_SECONDS)
            survivor.wait(timeout=30)
        records = target.records()

    assert master.returncode in (0, 3), stderr[-3000:]
    run = json.loads((resolve(run_dir) / "run.json").read_text())
    [lost] = run["lost_workers"]
    assert run["workers"] == 2, "both workers took part, the lost one included"
    assert lost["last_seen"] <= killed_at + 0.5 < lost["noticed_at"]
    assert lost["step"] == 0 and 0 in lost["steps_touched"]
    assert [s["users"] for s in run["steps"]] == [2, 4], "the run went on to the end of the plan"

    rows = [r for r in read_steps(run_dir) if r["name"] == "Aggregated"]
    assert [int(r["workers"]) for r in rows] == [2, 1]
    in_steps = sum(int(r["requests"]) for r in rows)
    reported = sum(lost["requests_reported"].values())
    by_victim = [r for r in records if str(r["id"]).startswith(f"{victim.pid}-")]
    by_survivor = [r for r in records if str(r["id"]).startswith(f"{survivor.pid}-")]
    assert len(by_victim) + len(by_survivor) == len(records)
    assert in_steps == len(by_survivor) + reported, "the steps hold the survivor's requests and all the dead one sent"
    before_last_report = [r for r in by_victim if r["t"] < lost["last_report_at"] - 0.5]
    assert 0 < len(before_last_report) <= reported <= len(by_victim)
    assert reported == lost["locust_requests_reported"], "the per-step tally agrees with Locust's own"

    report = (resolve(run_dir) / "report.md").read_text()
    assert "Lost workers" in report and lost["worker"] in report
    assert "| workers | 2 (MasterRunner), 1 lost during the run |" in report
