"""docker-compose.yml on a real Docker engine, following the README's lines verbatim: the image builds, a headless
mark run with two scaled workers exits 0 with steps.csv equal to the workers' own tallies and to what the target
served, the results copy out and report, the web UI answers and runs over HTTP, and ``down -v`` leaves nothing."""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from swarmgauge.run_folders import resolve
from tests.deploy.engine import ROOT, Shell, base_environment, engine_build_knobs, engine_unavailable, readme_commands
from tests.deploy.run_checks import WORKERS, check_run, fetches, short_plan

pytestmark = pytest.mark.integration

_REASON = engine_unavailable()
needs_engine = pytest.mark.skipif(_REASON is not None, reason=f"no Docker engine: {_REASON}")
TALLY_OVERRIDE = """services:
  master:
    volumes: ["{tests}:/tally:ro"]
  worker:
    environment: {{SWARMGAUGE_TEST_TALLY_DIR: /tallies}}
    volumes: ["{tests}:/tally:ro", "{tallies}:/tallies"]
"""


def _stack(tmp_path: Path, name: str, knobs: dict[str, str]) -> tuple[Shell, str]:
    """A shell for the README's lines: its own compose project, the test's plans folder and worker tallies."""
    project = f"sgtest-{name}-{os.getpid()}"
    plans, tallies = tmp_path / "plans", tmp_path / "tallies"
    plans.mkdir()
    tallies.mkdir()
    tallies.chmod(0o777)  # the workers run as uid 10001
    short_plan(plans, "0s").rename(plans / "short.yaml")
    override = tmp_path / "tally.compose.yml"
    override.write_text(TALLY_OVERRIDE.format(tests=ROOT / "tests" / "deploy", tallies=tallies))
    env = base_environment()
    env.update(
        {
            "COMPOSE_FILE": f"{ROOT / 'docker-compose.yml'}{os.pathsep}{override}",
            "COMPOSE_PROJECT_NAME": project,
            "SWARMGAUGE_PLANS": str(plans),
            "SWARMGAUGE_PLAN": "/plans/short.yaml",
            "LOCUST_LOCUSTFILE": "locustfiles/demarkus_reads.py,/tally/worker_tally.py",
        }
    )
    env.update(engine_build_knobs())
    env.update(knobs)
    work = tmp_path / "work"
    (work / ".venv" / "bin").mkdir(parents=True)  # the README's lines run from a clone with its .venv
    (work / ".venv" / "bin" / "swarmgauge").symlink_to(Path(sys.executable).parent / "swarmgauge")
    return Shell(work, env), project


def _down(shell: Shell) -> None:
    """Whatever happened, the test's project goes (the README's own `down -v` is checked separately)."""
    shell.docker("compose", "--profile", "mark", "down", "-v", "--remove-orphans", "--timeout", "5")


def _nothing_left(shell: Shell, project: str) -> None:
    assert shell.leftovers(project) == {"containers": [], "volumes": [], "networks": []}


@needs_engine
def test_headless_ci_run_with_two_workers_as_the_readme_says(tmp_path: Path):
    shell, project = _stack(tmp_path, "ci", {"LOCUST_HEADLESS": "true", "SWARMGAUGE_RUN_NAME": "ci"})
    build, up, copy, report, down = readme_commands("A CI run", "docker compose build")
    stale = shell.cwd / "runs" / "ci" / "ci"
    stale.mkdir(parents=True)
    (stale / "steps.csv").write_text("an older run\n")
    try:
        built = shell.run(build)
        assert built.returncode == 0, built.stderr[-3000:]
        ran = shell.run(up)
        logs = shell.docker("compose", "--profile", "mark", "logs", "--no-color", "mark").stdout
        master_log = shell.docker("compose", "--profile", "mark", "logs", "--no-color", "master").stdout
        assert re.search(r"report written to /runs/ci/\S*report\.md", master_log), (
            "the master finished its report while stopping"
        )
        # compose's SIGTERM reaches the master once its workers exit, while it writes: one end, no second shutdown
        assert master_log.count("Shutting down (exit code") == 1 and "Traceback" not in master_log, master_log[-3000:]
        copied = shell.run(copy)
        assert copied.returncode == 0, copied.stderr[-2000:]
        run_dir = shell.cwd / "runs" / "ci"
        assert not (run_dir / "ci").exists() and not (shell.cwd / "runs" / "runs").exists(), "no nesting"
        (resolve(run_dir) / "report.md").unlink()
        reported = shell.run(report)
        assert reported.returncode == 0 and "report.md" in reported.stdout, reported.stderr[-2000:]
        tallies = [json.loads(p.read_text()) for p in sorted((tmp_path / "tallies").glob("worker-*.json"))]
        check_run(ran, tallies, run_dir)
        served = re.search(r"served (\d+) requests", logs)
        assert served, logs[-2000:]
        assert int(served.group(1)) == fetches(run_dir), "steps.csv counts every FETCH the target served"
        print((resolve(run_dir) / "steps.csv").read_text())
        taken_down = shell.run(down)
        assert taken_down.returncode == 0, taken_down.stderr[-2000:]
        _nothing_left(shell, project)
    finally:
        _down(shell)


@needs_engine
def test_a_failed_slo_is_the_exit_code_of_the_readme_up_line(tmp_path: Path):
    shell, project = _stack(
        tmp_path,
        "slo",
        {"LOCUST_HEADLESS": "true", "SWARMGAUGE_RUN_NAME": "slo", "SWARMGAUGE_SLO": "FETCH:p99<0.001ms@step"},
    )
    _, up, _, _, down = readme_commands("A CI run", "docker compose build")
    try:
        ran = shell.run(up)
        assert ran.returncode == 3, ran.stdout[-3000:]
        assert shell.run(down).returncode == 0
        _nothing_left(shell, project)
    finally:
        _down(shell)


@needs_engine
def test_the_kneo_profile_database_builds_from_debian_packages_and_takes_only_its_password(tmp_path: Path):
    """PostgreSQL 15 built from deploy/postgres/ (no registry): healthy, the kneo database, password auth, and the
    password in no log."""
    password = f"pg-{os.getpid()}-secret"
    shell, project = _stack(tmp_path, "pg", {"SWARMGAUGE_POSTGRES_PASSWORD": password})
    psql = [
        "compose",
        "--profile",
        "kneo",
        "exec",
        "-T",
        "-e",
        "PGPASSWORD={}",
        "postgres",
        "psql",
        "-h",
        "127.0.0.1",
        "-U",
        "kneo",
        "-d",
        "kneo",
        "-tAc",
        "select current_database(), split_part(version(), ' ', 2)",
    ]
    try:
        started = shell.docker("compose", "--profile", "kneo", "up", "-d", "--wait", "postgres", timeout=900)
        assert started.returncode == 0, started.stderr[-3000:]
        answer = shell.docker(*[part.format(password) for part in psql])
        assert answer.returncode == 0 and answer.stdout.strip().startswith("kneo|15."), answer.stderr
        refused = shell.docker(*[part.format("wrong") for part in psql])
        assert refused.returncode != 0 and "password authentication failed" in refused.stderr
        logs = shell.docker("compose", "--profile", "kneo", "logs", "--no-color").stdout
        assert password not in logs
        assert shell.docker("compose", "--profile", "kneo", "down", "-v").returncode == 0
        _nothing_left(shell, project)
    finally:
        shell.docker("compose", "--profile", "kneo", "down", "-v", "--remove-orphans", "--timeout", "5")


def _free_port(preferred: int) -> int:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", preferred))
            return preferred
        except OSError:
            probe.bind(("127.0.0.1", 0))
            return probe.getsockname()[1]


def _get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def _wait_for(what: str, check, seconds: float = 90):
    """Polls ``check`` until it returns something true; bounded in time and in count."""
    deadline = time.monotonic() + seconds
    for _ in range(int(seconds * 2)):
        try:
            found = check()
        except OSError:
            found = None
        if found:
            return found
        if time.monotonic() > deadline:
            break
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


@needs_engine
def test_web_ui_answers_on_loopback_and_a_run_started_over_http_makes_requests(tmp_path: Path):
    """No plan file: the steps and user class come from the knobs (SWARMGAUGE_PLAN emptied)."""
    port = _free_port(8089)
    shell, project = _stack(
        tmp_path,
        "web",
        {
            "SWARMGAUGE_WEB_PORT": str(port),
            "SWARMGAUGE_PLAN": "",
            "SWARMGAUGE_STEPS": "2",
            "SWARMGAUGE_STEP_TIME": "60s",
            "LOCUST_USER_CLASSES": "FetchUser",
        },
    )
    up, down = readme_commands("A CI run", " up -d ")
    base = f"http://127.0.0.1:{port}"
    try:
        started = shell.run(up)
        assert started.returncode == 0, started.stderr[-3000:]
        _wait_for("the web UI", lambda: urllib.request.urlopen(base + "/", timeout=5).status == 200)
        _wait_for(f"{WORKERS} workers", lambda: _get_json(base + "/stats/requests").get("worker_count") == WORKERS)
        form = urllib.parse.urlencode({"user_count": "2", "spawn_rate": "2"}).encode()
        with urllib.request.urlopen(urllib.request.Request(base + "/swarm", data=form), timeout=10) as response:
            assert json.loads(response.read())["success"] is True
        stats = _wait_for(
            "requests",
            lambda: (
                (s := _get_json(base + "/stats/requests"))
                and any(r["name"] == "Aggregated" and r["num_requests"] > 0 for r in s["stats"])
                and s
            ),
        )
        names = {r["name"] for r in stats["stats"]} - {"Aggregated"}
        assert names <= {"/corpus/{topic}/{doc}", "handshake"}, f"FetchUser only: {names}"
        with urllib.request.urlopen(urllib.request.Request(base + "/stop", method="POST"), timeout=10) as response:
            assert response.status == 200
        taken_down = shell.run(down)
        assert taken_down.returncode == 0, taken_down.stderr[-2000:]
        _nothing_left(shell, project)
    finally:
        _down(shell)
