"""The demo's forking process: a command forked from it runs as a fresh ``python -m`` process would (its folder,
environment, session, log, arguments and exit code), and a demo workload's handoff works through it. Real forks;
the commands are small modules written into the run folder (``python -m`` finds modules in its working directory)."""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from swarmgauge.cli.demo_pages import Workload
from swarmgauge.cli.demo_runs import abandon, finish_run, start_run
from swarmgauge.cli.demo_zygote import DEMO_PRELOAD, Zygote, ZygoteError
from swarmgauge.targets.launch import child_env

PROBE = """
import json, os, sys
print(json.dumps({"cwd": os.getcwd(), "env": os.environ.get("PROBE"), "argv": sys.argv[1:],
                  "session_leader": os.getsid(0) == os.getpid(), "parent": os.getppid(), "path0": sys.path[0]}))
sys.exit(int(sys.argv[1]))
"""


@pytest.fixture
def zygote():
    forking = Zygote(preload=("json",))
    yield forking
    forking.close()


def test_a_forked_command_runs_in_its_folder_with_its_environment_arguments_log_and_exit_code(tmp_path, zygote):
    run = tmp_path / "run"
    run.mkdir()
    (run / "probe_module.py").write_text(PROBE)
    log = tmp_path / "probe.log"
    process = zygote.spawn(
        [sys.executable, "-m", "probe_module", "3", "two words"], cwd=run, env=child_env({"PROBE": "yes"}), log=log
    )
    assert process.wait(timeout=20) == 3 and process.poll() == 3
    said = json.loads(log.read_text().strip().splitlines()[-1])
    assert said == {
        "cwd": str(run),
        "env": "yes",
        "argv": ["3", "two words"],
        "session_leader": True,
        "parent": zygote.process.pid,
        "path0": str(run),
    }


def test_a_forked_command_ended_by_a_signal_says_so_and_a_wait_is_bounded(tmp_path, zygote):
    (tmp_path / "sleeper.py").write_text("import time\ntime.sleep(30)\n")
    process = zygote.spawn([sys.executable, "-m", "sleeper"], cwd=tmp_path, env=child_env(), log=None)
    with pytest.raises(subprocess.TimeoutExpired):
        process.wait(timeout=0.2)
    os.killpg(process.pid, signal.SIGTERM)
    assert process.wait(timeout=20) == -signal.SIGTERM


def test_only_python_m_commands_are_forked(tmp_path, zygote):
    with pytest.raises(ValueError, match="python -m"):
        zygote.spawn([sys.executable, "script.py"], cwd=tmp_path, env=child_env(), log=None)


def test_the_forking_process_ends_at_its_input_end(tmp_path):
    forking = Zygote(preload=())
    forking.close()
    assert forking.process.returncode == 0


def test_locust_runs_forked_from_a_process_that_imported_it(tmp_path):
    forking = Zygote()
    try:
        log = tmp_path / "locust.log"
        process = forking.spawn([sys.executable, "-m", "locust", "--version"], cwd=tmp_path, env=child_env(), log=log)
        assert process.wait(timeout=30) == 0
        assert log.read_text().startswith("locust ")
    finally:
        forking.close()


FAKE_LOCUST = """
import sys, time
from pathlib import Path
handoff, journal = Path(sys.argv[1]), Path(sys.argv[2])
(handoff / "ready").touch()
for _ in range(1000):
    if (handoff / "go").exists():
        break
    time.sleep(0.01)
(handoff / "load-end").touch()
(handoff / "load-done").touch()
journal.write_text("loaded")
"""


def test_a_demo_run_forked_from_the_zygote_keeps_the_handoff_and_a_run_never_let_go_is_stopped(tmp_path, zygote):
    workload = Workload("w", "a fake run", "brain_leak.py", ("-t", "1s"), None)
    for name in ("run", "waiting"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "fake_locust.py").write_text(FAKE_LOCUST)

    def command(journal: Path):
        return lambda _locustfile, _plan, handoff: [sys.executable, "-m", "fake_locust", str(handoff), str(journal)]

    run = start_run(workload, tmp_path / "run", tmp_path / "run.log", command(tmp_path / "ran"), zygote)
    assert finish_run(run) == 0 and (tmp_path / "ran").read_text() == "loaded"
    waiting = start_run(workload, tmp_path / "waiting", None, command(tmp_path / "never"), zygote)
    abandon(waiting)
    assert waiting.process.poll() is not None and not (tmp_path / "never").exists()


def test_every_demo_locustfile_imports_the_preloaded_framework_before_anything_of_its_own():
    """The forking process imports ``swarmgauge.locust`` (its listeners register at import): a fresh process
    registers the same listeners in the same order only when each locustfile imports it before any statement of its
    own (a listener, an option) and before any other swarmgauge module."""
    from importlib import resources

    from swarmgauge.cli.demo_pages import pages

    assert DEMO_PRELOAD == ("locust.main", "swarmgauge.locust")
    for name in sorted({w.locustfile for page in pages([], 1.0) for w in page.workloads}):
        tree = ast.parse((resources.files("swarmgauge.locustfiles") / name).read_text(encoding="utf-8"))
        for statement in tree.body:
            if isinstance(statement, ast.Import) and statement.names[0].name == "swarmgauge.locust":
                break
            own = isinstance(statement, ast.ImportFrom) and (statement.module or "").startswith("swarmgauge")
            own = own or (isinstance(statement, ast.Import) and statement.names[0].name.startswith("swarmgauge"))
            docstring = isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
            assert not own and (docstring or isinstance(statement, ast.Import | ast.ImportFrom)), (name, statement)
        else:
            raise AssertionError(f"{name} never imports swarmgauge.locust")


def test_a_forking_process_started_without_waiting_is_waited_for_at_its_first_fork_and_closes_once(tmp_path):
    forking = Zygote(preload=("json",), wait=False)
    try:
        process = forking.spawn([sys.executable, "-m", "json.tool", "--help"], cwd=tmp_path, env=child_env(), log=None)
        assert process.wait(timeout=20) == 0
    finally:
        forking.close()
    forking.close()
    assert forking.process.returncode == 0


def test_a_forking_process_whose_imports_fail_says_so_with_a_named_error():
    forking = Zygote(preload=("swarmgauge_no_such_module",), wait=False)
    with pytest.raises(ZygoteError, match="ended"):
        forking.wait_ready()
    assert forking.process.returncode not in (0, None)
