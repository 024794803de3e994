"""A fork parent shared by many runs: each run's kneo-serv forked from a clone of one template that imported kneo-serv
once, the runs apart from each other, every process gone with its run or with the template, and a run that finds no
template (or a broken one) starting as it would without it, with one log line. Real kneo-serv; skipped, with the
reason, where no Python >= 3.12 exists."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from swarmgauge.targets.kneo.fork_parent import ForkParent
from swarmgauge.targets.kneo.fork_template import TEMPLATE_VARIABLE
from swarmgauge.targets.kneo.service import KneoService, launch_fork_parent, launch_fork_template
from tests.targets.kneo.test_fork_parent import _sync_run

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]  # the first test may build the cached kneo-serv venv


def _gone(pid: int, within: float = 15.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def template(kneo_venv, monkeypatch):
    shared = launch_fork_template()
    monkeypatch.setenv(TEMPLATE_VARIABLE, str(shared.path))
    yield shared
    shared.close()


def test_two_runs_fork_their_kneo_serv_from_clones_of_one_template_and_stay_apart(template):
    first = KneoService(store="sqlite", processes=2, fork_parent=launch_fork_parent())
    second = KneoService(store="sqlite", fork_parent=launch_fork_parent())
    with first, second:
        clones = []
        for service in (first, second):
            clone = service.fork_parent.pid if service.fork_parent is not None else None
            assert clone is not None and psutil.Process(clone).ppid() == template.pid
            assert {psutil.Process(pid).ppid() for pid in service.pids} == {clone}
            clones.append(clone)
        assert clones[0] != clones[1]
        second_pid = second.pids[0]
        first.stop()
        assert _gone(clones[0]) and _sync_run(second.url)["status"] == "completed"  # the other run serves on
        assert psutil.Process(second_pid).is_running()
    assert _gone(clones[1]) and _gone(second_pid)
    assert psutil.Process(template.pid).is_running()  # the template outlives its runs


def test_a_run_killed_outright_takes_its_clone_and_its_kneo_serv_with_it(template, tmp_path):
    script = textwrap.dedent(
        """
        import sys, time
        from swarmgauge.targets.kneo.service import KneoService, launch_fork_parent
        service = KneoService(store="sqlite", fork_parent=launch_fork_parent())
        service.start()
        print(service.fork_parent.pid, service.pids[0], flush=True)
        time.sleep(120)
        """
    )
    run = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        assert run.stdout is not None
        clone, kneo_serv = (int(field) for field in run.stdout.readline().split())
        assert psutil.Process(clone).ppid() == template.pid
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=30)
        assert _gone(clone) and _gone(kneo_serv)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()


def test_closing_the_template_ends_every_clone_and_every_kneo_serv_and_removes_its_socket(template):
    service = KneoService(store="sqlite", fork_parent=launch_fork_parent())
    service.start()
    try:
        clone, kneo_serv = service.fork_parent.pid, service.pids[0]
        template.close()
        assert clone is not None and _gone(clone) and _gone(kneo_serv)
        assert not template.folder.exists()
    finally:
        service.stop()


def test_no_template_at_the_named_socket_is_one_log_line_and_a_fork_parent_of_the_runs_own(
    kneo_venv, tmp_path, monkeypatch, caplog
):
    monkeypatch.setenv(TEMPLATE_VARIABLE, str(tmp_path / "nothing-listens-here.sock"))
    with caplog.at_level(logging.WARNING), KneoService(store="sqlite", fork_parent=launch_fork_parent()) as service:
        assert service.fork_parent is not None and psutil.Process(service.fork_parent.pid).ppid() == os.getpid()
        assert _sync_run(service.url)["status"] == "completed"
    lines = [record.getMessage() for record in caplog.records if "fork parent" in record.getMessage()]
    assert len(lines) == 1 and "no shared fork parent at" in lines[0] and "imports kneo-serv for itself" in lines[0]


def test_a_template_that_cannot_import_kneo_serv_leaves_the_run_to_start_kneo_service_serve(
    kneo_venv, tmp_path, monkeypatch, caplog
):
    broken = tmp_path / "broken" / "kneo_serv"
    broken.mkdir(parents=True)
    # it fails after the run has connected: the run's clone never comes, and the run hears the connection close
    (broken / "__init__.py").write_text("import time\ntime.sleep(2)\nraise ImportError('a kneo_serv that fails')\n")
    monkeypatch.setenv("PYTHONPATH", str(broken.parent))
    shared = launch_fork_template()
    monkeypatch.delenv("PYTHONPATH")
    monkeypatch.setenv(TEMPLATE_VARIABLE, str(shared.path))
    try:
        parent = launch_fork_parent()
        assert isinstance(parent, ForkParent)
        with caplog.at_level(logging.WARNING), KneoService(store="sqlite", fork_parent=parent) as service:
            assert psutil.Process(service.pids[0]).ppid() == os.getpid()  # `kneo service serve`, started as before
            assert _sync_run(service.url)["status"] == "completed"
    finally:
        shared.close()
    lines = [record.getMessage() for record in caplog.records if "fork parent" in record.getMessage()]
    assert len(lines) == 1 and "kneo service serve" in lines[0], lines
    assert "its connection to the shared template closed" in lines[0]
