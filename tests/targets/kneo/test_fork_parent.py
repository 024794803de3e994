"""kneo-serv processes forked from the fork parent: the real service (readyz, sync runs on SQLite and PostgreSQL,
its settings from the environment it was given), deaths seen with their codes, restarts on the same port, and the
fall-back to ``kneo service serve`` with its one log line. Skipped, with the reason, where no Python >= 3.12 exists."""

from __future__ import annotations

import json
import logging
import os
import signal
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest

from swarmgauge.targets.kneo import fork_parent as fork_parent_module
from swarmgauge.targets.kneo.fork_parent import EXIT_UNKNOWN, ForkedProcess, ForkParent, ForkParentUnavailable
from swarmgauge.targets.kneo.service import KneoService, KneoStartError
from tests.targets.test_kneo import http_get

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]  # the first test may build the cached kneo-serv venv


def _sync_run(url: str) -> dict:
    body = json.dumps({"input": "hello", "spec_path": "echo.yaml", "target": "agent"}).encode()
    request = urllib.request.Request(f"{url}/v1/runs", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def _gauge(url: str, name: str) -> float:
    text = http_get(f"{url}/metrics")[1].decode()
    return float(next(line.split()[-1] for line in text.splitlines() if line.startswith(name + " ")))


def _forked_by(service: KneoService) -> int:
    """The fork parent's pid, checked to be the parent of every process of the service."""
    assert service.fork_parent is not None and service.fork_parent.pid is not None
    parents = {psutil.Process(pid).ppid() for pid in service.pids}
    assert parents == {service.fork_parent.pid}
    return service.fork_parent.pid


def test_a_forked_sqlite_service_is_ready_serves_sync_runs_and_reads_its_settings(kneo_venv):
    with KneoService(store="sqlite", processes=2, worker_concurrency=3) as service:
        _forked_by(service)
        assert [int(service.pid_path(index).read_text()) for index in range(2)] == service.pids
        for url in service.urls:
            assert http_get(f"{url}/readyz")[0] == 200
            assert _sync_run(url)["status"] == "completed"
            assert _gauge(url, "kneo_worker_count") == 3.0  # KNEO_SERV_WORKER_CONCURRENCY, read by the child
        assert service.sqlite_path is not None and service.sqlite_path.is_file()  # its own cwd, not the parent's
        assert "Started server process" in service.log_path(1).read_text()


def test_a_forked_postgresql_service_serves_sync_runs_and_the_pidfile_follows_a_restart(kneo_venv, pg_cluster):
    with KneoService(store="postgres", dsn=pg_cluster.dsn, processes=2) as service:
        fork_parent_pid = _forked_by(service)
        assert all(_sync_run(url)["status"] == "completed" for url in service.urls)
        old_pid = service.pids[1]
        service.kill_process(1)
        service.start_process(1)  # forked again from the same parent, on the same port
        new_pid = int(service.pid_path(1).read_text())
        assert new_pid != old_pid and new_pid in service.pids
        assert _forked_by(service) == fork_parent_pid
        assert _sync_run(service.urls[1])["status"] == "completed"


def test_a_killed_forked_process_is_seen_with_its_signal(kneo_venv):
    with KneoService(store="sqlite") as service:
        proc = service._procs[0]
        assert isinstance(proc, ForkedProcess)
        service.kill_process(0)
        assert proc.poll() == -9
        assert service.pids == []


def test_a_forked_process_that_cannot_start_is_a_start_error_with_its_log_tail(kneo_venv, tmp_path):
    service = KneoService(store="sqlite", workdir=tmp_path, extra_env={"KNEO_SERV_WORKER_CONCURRENCY": "zero"})
    with pytest.raises(KneoStartError, match="exited with 1") as caught:
        service.start()
    assert "KNEO_SERV_WORKER_CONCURRENCY" in str(caught.value)  # kneo-serv's own complaint, from its log
    assert service.pids == [] and service.fork_parent is None  # stop() ended the fork parent too


def test_a_fork_parent_that_cannot_import_kneo_serv_falls_back_with_one_log_line(
    kneo_venv, tmp_path, monkeypatch, caplog
):
    failing = tmp_path / "failing_fork_parent.py"
    failing.write_text('import sys\nprint(\'{"error": "ImportError: no module named kneo_serv"}\')\nsys.exit(1)\n')
    monkeypatch.setattr(fork_parent_module, "SCRIPT", failing)
    with caplog.at_level(logging.WARNING), KneoService(store="sqlite", processes=2) as service:
        assert all(_sync_run(url)["status"] == "completed" for url in service.urls)
        assert all(psutil.Process(pid).ppid() == os.getpid() for pid in service.pids)  # started as before
    lines = [record.getMessage() for record in caplog.records if "fork parent" in record.getMessage()]
    assert len(lines) == 1, lines
    assert "ImportError: no module named kneo_serv" in lines[0] and "kneo service serve" in lines[0]


def test_without_fork_the_fork_parent_says_so(monkeypatch):
    monkeypatch.delattr(os, "fork")
    parent = ForkParent.launch(Path("/nonexistent/python"), {})
    with pytest.raises(ForkParentUnavailable, match="no fork"):
        parent.wait_ready(1)
    parent.close()


def test_the_exec_path_is_still_there_on_request(kneo_venv):
    with KneoService(store="sqlite", start_method="exec") as service:
        assert service.fork_parent is None
        assert psutil.Process(service.pids[0]).ppid() == os.getpid()
        assert _sync_run(service.url)["status"] == "completed"


def test_a_killed_fork_parent_takes_its_processes_and_a_restart_starts_as_kneo_service_serve(kneo_venv, caplog):
    with caplog.at_level(logging.WARNING), KneoService(store="sqlite") as service:
        proc = service._procs[0]
        assert isinstance(proc, ForkedProcess) and service.fork_parent is not None
        os.kill(service.fork_parent.pid or 0, signal.SIGKILL)
        assert proc.wait(timeout=30) == EXIT_UNKNOWN  # its death signal ended it; its status was not ours to read
        service.start_process(0)
        assert psutil.Process(service.pids[0]).ppid() == os.getpid()
        assert _sync_run(service.url)["status"] == "completed"
    lines = [record.getMessage() for record in caplog.records if "fork parent" in record.getMessage()]
    assert len(lines) == 1 and "the fork parent is gone" in lines[0], lines


def test_a_forked_process_reads_the_rss_an_execd_one_does(kneo_venv):
    """Fork maps a library's pages in the child only as it touches them again: without the fork parent's resident
    pages mapped again, a forked kneo-serv's RSS read ~10 MiB under an exec'd one's (the page's figure is RSS)."""

    def rss_after_runs(method: str) -> float:
        with KneoService(store="sqlite", processes=1, start_method=method) as service:
            for _ in range(10):
                assert _sync_run(service.urls[0])["status"] == "completed"
            return psutil.Process(service.pids[0]).memory_info().rss / 2**20

    execd, forked = rss_after_runs("exec"), rss_after_runs("fork")
    assert abs(forked - execd) <= 4.0, (forked, execd)
