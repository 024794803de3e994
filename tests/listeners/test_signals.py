"""SIGTERM/SIGINT mid-step end a run as the end of its plan does: files complete, exit code recorded, nothing left."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import urllib.parse
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest
from locust.event import Events
from locust.runners import STATE_INIT, STATE_RUNNING, STATE_STOPPED

from swarmgauge.core import lifecycle
from swarmgauge.core.run_context import RunContext
from swarmgauge.listeners import rundir, signals  # noqa: F401 - rundir implements hooks.add_run_info
from swarmgauge.listeners.signals import StopOnSignal
from swarmgauge.run_folders import resolve
from swarmgauge.targets.launch import child_env, stop_processes
from tests import REPO_ROOT
from tests.listeners.sim_run import (
    ROOT,
    communicate_or_explain,
    free_port,
    locust_command,
    read_steps,
    sim_target,
    start_distributed,
    still_running,
)
from tests.listeners.webui_harness import wait_until, web_locust

LONG_PLAN = ("--steps", "2,4", "--step-time", "120", "--stop-timeout", "5")
WAIT_SECONDS = 90.0


class _ShapeThatCanEnd:
    def __init__(self) -> None:
        self.end_requests = 0

    def request_end(self) -> None:
        self.end_requests += 1


def test_the_first_signal_ends_the_plan_and_the_second_stops_at_once():
    shape = _ShapeThatCanEnd()
    handler = StopOnSignal(SimpleNamespace(shape_class=shape, runner=SimpleNamespace(state=STATE_RUNNING)))
    handler(signal.SIGTERM, None)
    assert shape.end_requests == 1
    with pytest.raises(KeyboardInterrupt):
        handler(signal.SIGINT, None)
    assert shape.end_requests == 1


def test_a_signal_after_the_plan_ended_notes_nothing_and_a_second_stops_at_once():
    class _EndedShape(_ShapeThatCanEnd):
        def plan_ended(self) -> bool:
            return True

    shape = _EndedShape()
    environment = SimpleNamespace(shape_class=shape, runner=SimpleNamespace(state=STATE_RUNNING))
    handler = StopOnSignal(environment)
    handler(signal.SIGTERM, None)
    assert shape.end_requests == 0
    assert RunContext.of(environment).run_info.get(signals.ENDED_BY) is None
    with pytest.raises(KeyboardInterrupt):
        handler(signal.SIGTERM, None)


def test_sighup_ends_the_plan_as_sigterm_does_and_the_run_notes_which_signal():
    class _Shape(_ShapeThatCanEnd):
        stopped_by: list[str] = []

        def note_stop(self, by: str) -> None:
            self.stopped_by.append(by)

    shape = _Shape()
    environment = SimpleNamespace(shape_class=shape, runner=SimpleNamespace(state=STATE_RUNNING))
    assert signal.SIGHUP in signals.HANDLED_SIGNALS
    StopOnSignal(environment)(signal.SIGHUP, None)
    assert (shape.end_requests, shape.stopped_by) == (1, ["SIGHUP"])
    assert RunContext.of(environment).run_info[signals.ENDED_BY] == "SIGHUP"


def test_without_a_swarmgauge_shape_a_signal_is_locusts_ctrl_c():
    handler = StopOnSignal(SimpleNamespace(shape_class=None, runner=SimpleNamespace(state=STATE_RUNNING)))
    with pytest.raises(KeyboardInterrupt):
        handler(signal.SIGTERM, None)


class _Runner:
    """A local runner's surface: users run until stopped, and the test sees when that happened."""

    def __init__(self, seen: list[str], state: str) -> None:
        self.seen, self.state = seen, state
        self.user_count = 4 if state == STATE_RUNNING else 0

    def stop(self) -> None:
        self.seen.append("users stopped")
        self.state, self.user_count = STATE_STOPPED, 0


def _quit_with_a_listener_added_before_init(runner_state: str) -> list[str]:
    """Fire quitting as Locust's shutdown does, with a listener (the run folder's close) registered at import time."""
    seen: list[str] = []
    runner = _Runner(seen, runner_state)
    events = Events()
    environment = SimpleNamespace(
        events=events, runner=runner, parsed_options=SimpleNamespace(headless=False), stop_timeout=None
    )
    events.quitting.add_listener(lambda **_kw: seen.append(f"run closed, runner {runner.state}"))
    signals._on_init(environment=environment)
    lifecycle._on_init(environment=environment)  # the end's opening steps, users stopped first
    events.quitting.fire(environment=environment, reverse=True)
    return seen


@pytest.fixture
def no_process_signal_handlers(monkeypatch):
    """A web UI's init installs the process's SIGHUP/SIGTERM/SIGINT handlers; not into the test runner's process."""
    monkeypatch.setattr(signals, "hang_up_as_terminate", lambda _environment: None)
    monkeypatch.setattr(signals, "note_web_ui_signals", lambda _environment: None)


def test_quitting_stops_running_users_before_the_listeners_that_close_the_run(no_process_signal_handlers):
    assert _quit_with_a_listener_added_before_init(STATE_RUNNING) == ["users stopped", "run closed, runner stopped"]


def test_quitting_leaves_a_stopped_runner_alone(no_process_signal_handlers):
    assert _quit_with_a_listener_added_before_init(STATE_STOPPED) == ["run closed, runner stopped"]


def _wait_for_requests(target, count: int, senders: int = 1) -> None:
    """Until ``count`` requests reached the target from at least ``senders`` processes (a request's id starts with
    its process's pid): a master's plan ramps its users onto its workers one by one."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        records = target.records()
        if len(records) >= count and len({str(r["id"]).split("-")[0] for r in records}) >= senders:
            return
        time.sleep(0.5)
    raise AssertionError(
        f"fewer than {count} requests from {senders} process(es) reached the target within {WAIT_SECONDS:.0f}s"
    )


def _assert_run_closed(run_dir: Path, returncode: int) -> None:
    doc = json.loads((resolve(run_dir) / "run.json").read_text())
    assert doc["exit_code"] == returncode
    rows = read_steps(run_dir)
    aggregated = [row for row in rows if row["name"] == "Aggregated"]
    assert [row["step"] for row in aggregated] == ["0"]
    partial = aggregated[0]
    assert int(partial["requests"]) > 0
    assert 0.0 < float(partial["duration_s"]) < 120.0  # the partial step, with its real length
    for name in ("timeline.csv", "locust_stats.csv", "locust_failures.csv", "report.md"):
        assert (resolve(run_dir) / name).is_file(), name
    assert (run_dir.parent / "locust_stats.csv").is_file()  # Locust's own --csv files, closed by its shutdown


@pytest.mark.integration
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_mid_step_in_a_headless_local_run_keeps_everything(tmp_path, signum):
    run_dir = tmp_path / "run"
    with sim_target("--delay", "const:5") as target:
        process = subprocess.Popen(
            locust_command(
                Path(ROOT) / "tests/listeners/sim_locustfile.py",
                "--headless",
                "--host",
                target.url,
                *LONG_PLAN,
                "--run-dir",
                str(run_dir),
                "--csv",
                str(tmp_path / "locust"),
            ),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            _wait_for_requests(target, 20)
            process.send_signal(signum)
            _stdout, stderr = communicate_or_explain(process, WAIT_SECONDS)
        finally:
            stop_processes([process], grace=5)
    assert process.returncode == 0, stderr[-2000:]
    _assert_run_closed(run_dir, process.returncode)
    assert json.loads((resolve(run_dir) / "run.json").read_text())["ended_by"] == signal.Signals(signum).name


@pytest.mark.integration
def test_sigterm_mid_step_on_a_master_with_two_workers_stops_them_all(tmp_path):
    run_dir = tmp_path / "run"
    with sim_target("--delay", "const:5") as target:
        args = (*LONG_PLAN, "--run-dir", str(run_dir), "--csv", str(tmp_path / "locust"))
        worker_log = tmp_path / "workers.log"
        with (
            worker_log.open("w") as workers_out,
            start_distributed(target.url, *args, grace=5, worker_output=workers_out) as run,
        ):
            master, workers = run.master, run.workers
            _wait_for_requests(target, 40, senders=2)  # each worker measured something in the step
            master.send_signal(signal.SIGTERM)
            _stdout, stderr = communicate_or_explain(master, WAIT_SECONDS, worker_log)
            left = still_running([worker.pid for worker in workers])
    assert master.returncode == 0, stderr[-2000:]
    assert left == [], "workers still running after the master's SIGTERM"
    _assert_run_closed(run_dir, master.returncode)
    assert {row["workers"] for row in read_steps(run_dir)} == {"2"}


@pytest.mark.integration
def test_sigterm_stops_the_embedded_target_and_writes_the_run(tmp_path):
    run_dir = tmp_path / "run"
    process = subprocess.Popen(
        locust_command(
            REPO_ROOT / "locustfiles/demarkus_reads.py",
            "FetchUser",
            "--headless",
            *LONG_PLAN,
            "--run-dir",
            str(run_dir),
        ),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    try:
        children: list[int] = []
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline and not (children and (resolve(run_dir) / "run.json").is_file()):
            children = [child.pid for child in psutil.Process(process.pid).children(recursive=True)]
            time.sleep(0.5)
        assert children, "no embedded target started"
        time.sleep(3)  # into the first step
        process.send_signal(signal.SIGTERM)
        _stdout, stderr = communicate_or_explain(process, WAIT_SECONDS)
    finally:
        stop_processes([process], grace=5)
    assert process.returncode == 0, stderr[-2000:]
    assert still_running(children) == []
    doc = json.loads((resolve(run_dir) / "run.json").read_text())
    assert doc["exit_code"] == 0
    assert (resolve(run_dir) / "steps.csv").is_file() and (resolve(run_dir) / "report.md").is_file()


PARENT_SCRIPT = textwrap.dedent("""
    import sys, time
    from swarmgauge.targets.launch import launch_target
    target = launch_target("sim-http", ["--port", "0", "--max-seconds", "120"], timeout=30)
    print(target.pid, flush=True)
    time.sleep(120)
""")


@pytest.mark.integration
def test_a_target_exits_when_its_parent_is_killed():
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT_SCRIPT], stdout=subprocess.PIPE, text=True, env=child_env(), cwd=str(REPO_ROOT)
    )
    try:
        target_pid = int(parent.stdout.readline())
        assert psutil.pid_exists(target_pid)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(10)
        assert still_running([target_pid]) == []
    finally:
        stop_processes([parent], grace=0)


def test_a_signal_before_the_run_started_exits_with_128_plus_the_signal():
    shape = _ShapeThatCanEnd()
    handler = StopOnSignal(SimpleNamespace(shape_class=shape, runner=SimpleNamespace(state=STATE_INIT)))
    with pytest.raises(SystemExit) as exited:
        handler(signal.SIGTERM, None)
    assert exited.value.code == 128 + signal.SIGTERM and shape.end_requests == 0


@pytest.mark.integration
def test_sigterm_while_a_master_waits_for_workers_exits_cleanly_and_stops_its_target(tmp_path):
    process = subprocess.Popen(
        locust_command(
            REPO_ROOT / "locustfiles/demarkus_reads.py",
            "FetchUser",
            "--headless",
            "--master",
            "--master-bind-host",
            "127.0.0.1",
            "--master-bind-port",
            str(free_port()),
            "--expect-workers",
            "1",
            "--expect-workers-max-wait",
            "120",
            *LONG_PLAN,
            "--run-dir",
            str(tmp_path / "run"),
        ),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    try:
        children: list[int] = []
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline and not children:
            children = [child.pid for child in psutil.Process(process.pid).children(recursive=True)]
            time.sleep(0.5)
        assert children, "no embedded target started"
        time.sleep(2)  # the master is in Locust's wait for workers
        process.send_signal(signal.SIGTERM)
        _stdout, stderr = communicate_or_explain(process, WAIT_SECONDS)
    finally:
        stop_processes([process], grace=5)
    assert process.returncode == 128 + signal.SIGTERM, stderr[-2000:]
    assert "Traceback" not in stderr
    assert still_running(children) == []


@pytest.mark.integration
def test_sigterm_to_one_worker_mid_step_keeps_what_it_measured(tmp_path):
    run_dir = tmp_path / "run"
    with sim_target("--delay", "const:5") as target:
        args = ("--steps", "4", "--step-time", "120", "--stop-timeout", "5", "--run-dir", str(run_dir))
        with start_distributed(target.url, *args, grace=5) as run:
            master, workers = run.master, run.workers
            _wait_for_requests(target, 40)
            workers[0].send_signal(signal.SIGTERM)
            workers[0].wait(WAIT_SECONDS)
            time.sleep(4)  # the master has its last report and the other worker's next ones
            master.send_signal(signal.SIGTERM)
            _stdout, stderr = communicate_or_explain(master, WAIT_SECONDS)
            left = still_running([workers[1].pid])
            served = len(target.records())
    assert workers[0].returncode == 0 and master.returncode == 0, stderr[-2000:]
    assert left == []
    aggregated = [row for row in read_steps(run_dir) if row["name"] == "Aggregated"]
    measured = int(aggregated[0]["requests"])
    assert served - 4 <= measured <= served  # at most the 4 users' requests in flight when they were stopped


@pytest.mark.integration
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_mid_step_in_a_web_ui_run_writes_the_run(tmp_path, signum):
    run_dir = tmp_path / "run"
    with sim_target("--delay", "const:5") as target:
        process = subprocess.Popen(
            locust_command(
                Path(ROOT) / "tests/listeners/sim_locustfile.py",
                "--host",
                target.url,
                "--web-host",
                "127.0.0.1",
                "--web-port",
                str(free_port()),
                "--autostart",
                *LONG_PLAN,
                "--run-dir",
                str(run_dir),
            ),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            _wait_for_requests(target, 20)
            process.send_signal(signum)
            _stdout, stderr = communicate_or_explain(process, WAIT_SECONDS)
        finally:
            stop_processes([process], grace=5)
    assert process.returncode == 0, stderr[-2000:]
    doc = json.loads((resolve(run_dir) / "run.json").read_text())
    assert (doc["exit_code"], doc["ended_by"]) == (0, signal.Signals(signum).name)
    partial = [row for row in read_steps(run_dir) if row["name"] == "Aggregated"][0]
    assert int(partial["requests"]) > 0 and 0.0 < float(partial["duration_s"]) < 120.0


def _csv_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def _locust_counts(stats_csv: Path) -> dict[tuple[str, str], tuple[int, int]]:
    """Locust's own final (requests, failures) per request type and name, its Aggregated row left out."""
    return {
        (row["Type"], row["Name"]): (int(row["Request Count"]), int(row["Failure Count"]))
        for row in _csv_rows(stats_csv)
        if row["Name"] != "Aggregated"
    }


def _steps_counts(run_dir: Path) -> dict[tuple[str, str], tuple[int, int]]:
    """steps.csv's (requests, failures) per request type and name, summed over the steps."""
    counts: dict[tuple[str, str], tuple[int, int]] = {}
    for row in read_steps(run_dir):
        if row["name"] == "Aggregated":
            continue
        key = (row["request_type"], row["name"])
        requests, failures = counts.get(key, (0, 0))
        counts[key] = (requests + int(row["requests"]), failures + int(row["failures"]))
    return counts


def _live_requests(view: dict) -> list[int]:
    return [int(row["requests"] or 0) for row in view["steps"] if row["name"] == "Aggregated"]


@pytest.mark.integration
def test_sigterm_mid_run_in_the_web_ui_stops_the_users_before_the_run_closes_and_the_target_stops(tmp_path):
    """The defect: quitting stopped the embedded target while users still ran (false ConnectionLost/ConnectFailed)
    and closed the run folder before the last requests (steps.csv short of Locust's own table)."""
    run_dir = tmp_path / "run"
    prefix = tmp_path / "locust"
    with web_locust(
        REPO_ROOT / "locustfiles/demarkus_reads.py",
        "--web-host",
        "127.0.0.1",
        "--run-dir",
        str(run_dir),
        "--csv",
        str(prefix),
        log_dir=tmp_path,
        env=child_env(),
    ) as web:
        children = [child.pid for child in psutil.Process(web.process.pid).children(recursive=True)]
        assert children, "no embedded target started"
        form = {"user_count": "4", "spawn_rate": "4", "host": web.template_args()["host"]}
        request = urllib.request.Request(web.url + "/swarm", data=urllib.parse.urlencode(form).encode())
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert json.loads(answer.read())["success"] is True
        wait_until(
            lambda: sum(_live_requests(web.get_json("/swarmgauge/api/live"))) >= 200,
            WAIT_SECONDS,
            "requests from the running users",
        )
        web.process.send_signal(signal.SIGTERM)
        returncode = web.process.wait(WAIT_SECONDS)
        output = web.output()
    assert returncode == 0, output[-3000:]
    assert still_running(children) == []
    folder = resolve(run_dir)
    assert (folder / "report.md").is_file() and (folder / "steps.csv").is_file()
    for name in (folder / "report.md", folder / "locust_failures.csv", Path(f"{prefix}_failures.csv")):
        text = name.read_text()
        assert "ConnectionLost" not in text and "ConnectFailed" not in text, f"{name}:\n{text[-2000:]}"
    measured = _steps_counts(run_dir)
    assert sum(requests for requests, _ in measured.values()) >= 200
    assert all(int(row["warmup_requests"]) == 0 for row in read_steps(run_dir))
    assert measured == _locust_counts(Path(f"{prefix}_stats.csv"))
    assert json.loads((folder / "slo.json").read_text())["exit_code"] == 0
    assert json.loads((folder / "run.json").read_text())["exit_code"] == 0


def _hang_up_run(tmp_path: Path, workers: int) -> tuple[subprocess.Popen, list[subprocess.Popen], str, str, int]:
    """A stepped run against the simulated target (a master and ``workers`` when asked), SIGHUP to every process
    of it mid-step as a closed terminal sends it; returns the processes, their output and the requests served."""
    port = free_port()
    locustfile = Path(ROOT) / "tests/listeners/summary_locustfile.py"
    master_args = (
        ("--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port))
        + ("--expect-workers", str(workers), "--expect-workers-max-wait", "60")
        if workers
        else ()
    )
    with sim_target("--delay", "const:5") as target:
        master = subprocess.Popen(
            locust_command(
                locustfile, "--headless", "--host", target.url, *master_args, *LONG_PLAN, "--run-dir", str(tmp_path)
            ),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        started = [
            subprocess.Popen(
                locust_command(locustfile, "--worker", "--master-host", "127.0.0.1", "--master-port", str(port)),
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for _ in range(workers)
        ]
        try:
            _wait_for_requests(target, 20 * max(1, workers))
            for process in (master, *started):
                process.send_signal(signal.SIGHUP)
            stdout, stderr = communicate_or_explain(master, WAIT_SECONDS)
            for worker in started:
                worker.wait(WAIT_SECONDS)
            served = len(target.records())
        finally:
            stop_processes([master, *started], grace=5)
    return master, started, stdout, stderr, served


@pytest.mark.integration
@pytest.mark.parametrize("workers", [0, 2], ids=["local", "master-and-two-workers"])
def test_sighup_mid_step_ends_the_run_as_sigterm_does_and_keeps_every_measured_request(tmp_path, workers):
    """The defect: SIGHUP (a closed terminal, a dropped ssh) killed the run at once, its requests never written."""
    master, started, stdout, stderr, served = _hang_up_run(tmp_path, workers)
    assert master.returncode == 0 and [w.returncode for w in started] == [0] * workers, stderr[-3000:]
    folder = resolve(tmp_path)
    doc = json.loads((folder / "run.json").read_text())
    assert (doc["state"], doc["ended_by"], doc["exit_code"]) == ("ended", "SIGHUP", 0)
    assert doc["cut_short"]["by"] == "SIGHUP" and doc["cut_short"]["steps_not_run"] == ["4 users"]
    measured = sum(int(row["requests"]) for row in read_steps(tmp_path) if row["name"] == "Aggregated")
    users_in_flight = 2
    assert served - users_in_flight <= measured <= served
    assert "exit code 0 (run ended by SIGHUP)" in stdout
    assert "SIGHUP" in (folder / "report.md").read_text()
