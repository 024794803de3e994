"""The real kneo-serv 1.2.0 as a target: Python discovery, the CLI's ready lines, PostgreSQL with two processes,
kill and restart. Skipped, with the reason, only where no Python >= 3.12 exists."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from swarmgauge.errors import UsageError
from swarmgauge.listeners.sources import parse_source
from swarmgauge.targets.kneo import KneoService, NoSuitablePython, find_python
from swarmgauge.targets.kneo.service import idle_poll_env
from swarmgauge.targets.postgres import PostgresError, find_bindir

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]  # the first test may build the cached kneo-serv venv


def http_get(url: str) -> tuple[int, bytes]:
    """A GET's status and body, an HTTP error's too (shared with the fork parent's tests)."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _post_run(url: str, **extra) -> dict:
    body = {"input": "hello", "spec_path": "echo.yaml", "target": "agent", **extra}
    request = urllib.request.Request(
        f"{url}/v1/runs", data=json.dumps(body).encode(), method="POST", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def _start_cli(*args: str) -> tuple[subprocess.Popen, dict[str, list[str]]]:
    """Start ``swarmgauge target kneo`` and read its announcement lines up to ``pids``."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "swarmgauge.cli", "target", "kneo", *args, "--max-seconds", "120"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: dict[str, list[str]] = {}
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        key, _, value = line.strip().partition(" ")
        lines.setdefault(key, []).append(value)
        if key == "pids":
            return proc, lines
    proc.kill()
    raise AssertionError(f"no pids line: {lines} {proc.stderr.read()[-800:]}")


def _stop_cli(proc: subprocess.Popen) -> tuple[int, str]:
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return proc.returncode, err


def test_explicit_python_that_is_not_312_is_a_named_error():
    with pytest.raises(NoSuitablePython, match="--python /bin/true"):
        find_python("/bin/true")


def test_without_any_python_312_the_cli_says_where_it_looked_in_one_line(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path), "PYENV_ROOT": str(tmp_path / "pyenv")}
    result = subprocess.run(
        [sys.executable, "-m", "swarmgauge.targets.kneo", "--store", "sqlite"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "no Python >= 3.12" in lines[0] and "pyenv" in lines[0] and "python3.12" in lines[0]
    prepare = subprocess.run(
        [sys.executable, "-m", "swarmgauge.targets.kneo", "prepare"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert prepare.returncode == 0 and "skipped: no Python >= 3.12" in prepare.stderr


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"store": "mysql"}, "--store must be sqlite or postgres"),
        ({"store": "postgres"}, "--store postgres needs --dsn"),
        ({"host": "0.0.0.0"}, "loopback only"),
    ],
)
def test_bad_service_settings_are_usage_errors(kwargs, message):
    with pytest.raises(UsageError, match=message):
        KneoService(**kwargs)


def test_cli_sqlite_prints_ready_and_store_file_and_serves_runs(kneo_venv):
    proc, lines = _start_cli("--store", "sqlite")
    try:
        assert len(lines["ready"]) == 1 and lines["ready"][0].startswith("http://127.0.0.1:")
        url = lines["ready"][0]
        assert http_get(f"{url}/readyz")[0] == 200
        run = _post_run(url)
        assert run["status"] == "completed"
        store_file = Path(lines["store-file"][0])
        assert store_file.read_text().strip() == lines["store"][0]
        assert lines["store"][0].endswith(".kneo/kneo_runs.sqlite") and Path(lines["store"][0]).is_file()
        workdir = store_file.parent
    finally:
        code, err = _stop_cli(proc)
    assert code == 0, err[-800:]
    assert not workdir.exists()


def test_cli_postgres_two_processes_share_one_store_and_never_print_the_password(kneo_venv):
    try:
        find_bindir()
    except PostgresError as exc:
        pytest.skip(f"no PostgreSQL here: {exc}")
    proc, lines = _start_cli("--store", "postgres", "--processes", "2")
    try:
        assert len(lines["ready"]) == 2
        first, second = lines["ready"]
        assert first != second
        dsn = Path(lines["store-file"][0]).read_text().strip()
        password = dsn.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
        assert lines["store"][0] == dsn.replace(password, "***")
        run = _post_run(first, async_mode=True)
        deadline = time.monotonic() + 30
        status = None
        while time.monotonic() < deadline:
            code, body = http_get(f"{second}/v1/runs/{run['run_id']}")
            status = json.loads(body).get("status") if code == 200 else code
            if status == "completed":
                break
            time.sleep(0.2)
        assert status == "completed"
        assert len(lines["pids"][0].split()) == 2
    finally:
        code, err = _stop_cli(proc)
    assert code == 0
    assert password not in err


def test_two_processes_share_one_sqlite_file_a_run_saved_by_one_is_read_by_the_other(kneo_venv):
    """Two service processes on one SQLite file (what a user scaling kneo-serv on SQLite runs): each serves runs, and
    a run one of them saved is read back through the other."""
    with KneoService(store="sqlite", processes=2) as service:
        first, second = service.urls
        assert len(set(service.pids)) == 2 and service.sqlite_path is not None and service.sqlite_path.is_file()
        runs = [_post_run(url) for url in (first, second, first)]
        assert [run["status"] for run in runs] == ["completed"] * 3
        code, body = http_get(f"{second}/v1/runs/{runs[0]['run_id']}")
        assert code == 200 and json.loads(body)["status"] == "completed"


def test_killed_process_restarts_on_its_port_and_the_pidfile_follows(kneo_venv):
    with KneoService(store="sqlite") as service:
        old_pid = int(service.pid_path(0).read_text())
        assert service.pids == [old_pid]
        service.kill_process(0)
        with pytest.raises(OSError):
            urllib.request.urlopen(f"{service.url}/readyz", timeout=2)
        service.start_process(0)
        new_pid = int(service.pid_path(0).read_text())
        assert new_pid != old_pid and service.pids == [new_pid]
        assert _post_run(service.url)["status"] == "completed"
        workdir = service.workdir
    assert not workdir.exists()


def test_gauge_sources_are_valid_sampler_specs(kneo_venv):
    with KneoService(store="sqlite") as service:
        specs = service.gauge_sources()
        assert [spec.split(":", 1)[0] for spec in specs] == ["prom", "psutil"]
        readings = {r.metric: r.value for spec in specs for r in parse_source(spec).sample()}
    assert readings["kneo_worker_count"] == 1.0
    assert readings["kneo_runs_queued"] == 0.0
    assert readings["rss_bytes"] > 10 * 2**20


def test_a_process_that_cannot_start_is_a_named_error_with_its_log(kneo_venv, tmp_path):
    from swarmgauge.targets.kneo import KneoStartError

    service = KneoService(store="sqlite", workdir=tmp_path, extra_env={"KNEO_SERV_WORKER_CONCURRENCY": "zero"})
    with pytest.raises(KneoStartError, match="exited"):
        service.start()
    assert service.pids == []
    assert os.path.exists(tmp_path / "kneo-serv-0.log")


def test_idle_poll_below_zero_is_a_usage_error_and_a_set_one_reaches_the_service(kneo_venv):
    with pytest.raises(UsageError, match="--kneo-embedded-idle-poll must be above 0 seconds"):
        idle_poll_env(0.0)
    # exec: /proc/PID/environ is the environment a process was exec'd with; a forked one's is its fork parent's
    with KneoService(store="sqlite", extra_env=idle_poll_env(1.0), start_method="exec") as service:
        environ = Path(f"/proc/{service.pids[0]}/environ").read_bytes().split(b"\0")
    assert b"KNEO_SERV_WORKER_IDLE_POLL_SECONDS=1" in environ  # kneo-serv's default, not the harness's 0.2


def test_processes_after_the_first_boot_side_by_side_once_it_has_migrated_the_store(kneo_venv, monkeypatch):
    """The first process alone (it runs the migrations), then the others all spawned before any of them is waited
    for; each then serves runs on the one store."""
    from swarmgauge.targets.postgres import PostgresCluster

    try:
        find_bindir()
    except PostgresError as exc:
        pytest.skip(f"no PostgreSQL here: {exc}")
    seen: list[str] = []
    spawn, wait_ready = KneoService.spawn_process, KneoService._wait_ready

    def recording_spawn(self, index):
        seen.append(f"spawn {index}")
        spawn(self, index)

    def recording_wait(self, index):
        wait_ready(self, index)
        seen.append(f"ready {index}")

    monkeypatch.setattr(KneoService, "spawn_process", recording_spawn)
    monkeypatch.setattr(KneoService, "_wait_ready", recording_wait)
    with (
        PostgresCluster(fsync=False) as cluster,
        KneoService(store="postgres", dsn=cluster.dsn, processes=3) as service,
    ):
        assert seen == ["spawn 0", "ready 0", "spawn 1", "spawn 2", "ready 1", "ready 2"]
        assert len(set(service.pids)) == 3
        assert all(_post_run(url)["status"] == "completed" for url in service.urls)
