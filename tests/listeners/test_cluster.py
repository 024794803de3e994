"""The master-worker channel against a real master: a rogue worker (Locust's own rpc client) gets no secret, with a
cluster key it gets nothing at all, a worker with the key runs the load, and one lacking a secret says which.

On loopback; the master listens on 127.0.0.1 unless told (checked in the kernel's table of listening sockets).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from swarmgauge.errors import UsageError
from swarmgauge.listeners.cluster import missing_secret_error, missing_secrets, read_cluster_key
from swarmgauge.targets.launch import stop_processes
from tests.listeners.sim_run import ROOT, free_port, locust_command, read_steps, sim_target

LOCUSTFILE = Path(__file__).resolve().parent / "cluster_locustfile.py"
TOKEN = "SGTOKMASTER9"
ROGUE_SECONDS = 6.0
RUN_SECONDS = 120


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOCUST_", "SWARMGAUGE_"))}
    return {**env, **extra}


def _master(port: int, host: str, *args: str, run_dir: Path | None = None) -> subprocess.Popen:
    command = locust_command(
        LOCUSTFILE,
        "--headless",
        "--master",
        "--master-bind-port",
        str(port),
        "--expect-workers",
        "1",
        "--expect-workers-max-wait",
        "60",
        "--host",
        host,
        "--steps",
        "1",
        "--step-time",
        "3",
        "--mark-token",
        TOKEN,
        *(["--run-dir", str(run_dir)] if run_dir else []),
        *args,
    )
    return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())


def _worker(port: int, *args: str, **env: str) -> subprocess.Popen:
    command = locust_command(LOCUSTFILE, "--worker", "--master-host", "127.0.0.1", "--master-port", str(port), *args)
    return subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(**env)
    )


def _rogue(port: int, seconds: float = ROGUE_SECONDS) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "tests.listeners.rogue_worker", "127.0.0.1", str(port), str(seconds)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=seconds + 60,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def _wait_listening(port: int, timeout: float = 60.0) -> list[str]:
    """The local addresses (hex, as the kernel lists them) that listen on ``port``, once there is one."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = []
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            for line in Path(table).read_text().splitlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                address, _, hex_port = local.rpartition(":")
                if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                    found.append(address)
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"nothing listens on port {port} after {timeout} s")


def _refused_worker(port: int, tmp_path: Path, timeout: float = 30.0) -> tuple[int | None, str]:
    """A real worker with another key: its exit code (None if it was still running at ``timeout``) and its log."""
    wrong = tmp_path / "wrong.key"
    wrong.write_text("another key, not the master's one\n")
    log = tmp_path / "wrong-key-worker.log"
    worker = _worker(port, "--cluster-key-file", str(wrong), "--logfile", str(log), LOCUST_MARK_TOKEN=TOKEN)
    try:
        code: int | None = worker.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        code = None
    finally:
        stop_processes([worker], grace=0)
    return code, log.read_text() if log.exists() else ""


def _finish(process: subprocess.Popen, timeout: float = RUN_SECONDS) -> tuple[int, str]:
    try:
        _out, err = process.communicate(timeout=timeout)
    finally:
        stop_processes([process], grace=5)
    return process.returncode, err


@pytest.mark.integration
def test_a_rogue_worker_gets_work_but_no_secret_and_the_master_listens_on_loopback_only():
    port = free_port()
    master = _master(port, "http://127.0.0.1:9")
    try:
        listening = _wait_listening(port)
        rogue = _rogue(port)
    finally:
        code, log = _finish(master)
    assert set(listening) <= {"0100007F", "0000000000000000FFFF00000100007F"}, listening  # 127.0.0.1 only
    assert "spawn " in rogue, rogue[-2000:]  # the rogue was sent the run's options...
    assert TOKEN not in rogue and TOKEN not in log  # ...without the token, and the master never logged it
    assert "'swarmgauge_secrets_set': ['mark_token']" in rogue  # the name only, for a worker to say it lacks it
    assert "the master listens for workers on 127.0.0.1" in log, log[-3000:]


@pytest.mark.integration
def test_with_a_cluster_key_a_rogue_gets_nothing_and_a_worker_with_the_key_runs_the_load(tmp_path):
    key = tmp_path / "cluster.key"
    key.write_text("a shared key of the test, 32 bytes\n")
    port, runs = free_port(), tmp_path / "runs"
    with sim_target() as target:
        master = _master(port, target.url, "--cluster-key-file", str(key), run_dir=runs)
        worker = None
        try:
            _wait_listening(port)
            rogue = _rogue(port)
            wrong_key_code, wrong_key_says = _refused_worker(port, tmp_path)
            worker = _worker(port, "--cluster-key-file", str(key), LOCUST_MARK_TOKEN=TOKEN)
            code, log = _finish(master)
            worker_code, worker_log = _finish(worker, timeout=30)
        finally:
            stop_processes([p for p in (master, worker) if p is not None], grace=5)
        served = len(target.records())
    assert rogue == ""  # no ack, no spawn, no heartbeat: not one message
    assert "refused this worker's handshake: its --cluster-key-file holds another key" in wrong_key_says
    assert wrong_key_says.count("refused this worker's handshake") == 1
    assert wrong_key_code == 2  # it stops by itself at once, instead of retrying for minutes
    refusals = [line for line in log.splitlines() if "refused a worker connection" in line]
    assert len(refusals) == 1, log[-3000:]
    assert "it does not hold the cluster key" in refusals[0]
    assert code == 0 and worker_code == 0, (log[-3000:], worker_log[-3000:])
    requests = sum(int(row["requests"]) for row in read_steps(runs) if row["name"] == "Aggregated")
    assert requests > 0 and served > 0
    assert key.read_text().strip() not in log + worker_log + (runs / "latest" / "run.json").read_text()


@pytest.mark.integration
def test_a_worker_without_the_secret_its_master_set_says_which_and_loads_nothing():
    port = free_port()
    with sim_target() as target:
        master = _master(port, target.url)
        try:
            _wait_listening(port)
            worker = _worker(port)
            worker_code, worker_log = _finish(worker, timeout=60)
        finally:
            code, log = _finish(master)
        served = len(target.records())
    missing = [line for line in worker_log.splitlines() if "MissingSecretError" in line]
    assert worker_code == 2 and len(missing) == 1, worker_log[-3000:]
    assert "--mark-token (LOCUST_MARK_TOKEN or SWARMGAUGE_MARK_TOKEN)" in missing[0]
    assert "Traceback" not in worker_log and served == 0
    assert "quit" in log


def test_a_key_file_that_is_missing_or_short_is_one_line(tmp_path):
    short = tmp_path / "short.key"
    short.write_text("too short\n")
    with pytest.raises(UsageError, match="at least 16 bytes"):
        read_cluster_key(str(short))
    with pytest.raises(UsageError, match="No such file"):
        read_cluster_key(str(tmp_path / "absent.key"))


def test_a_worker_names_each_secret_its_master_set_and_it_lacks():
    from types import SimpleNamespace

    from locust import argument_parser

    import swarmgauge.users.mark_user  # noqa: F401 - declares --mark-token

    argument_parser.get_parser()  # runs the option declarations
    options = SimpleNamespace(swarmgauge_secrets_set=["mark_token", "mcp_token"], mark_token="", mcp_token="mine")
    assert missing_secrets(options) == ["--mark-token"]
    assert str(missing_secret_error(["--mark-token"])).startswith(
        "MissingSecretError: the master sets --mark-token (LOCUST_MARK_TOKEN or SWARMGAUGE_MARK_TOKEN)"
    )
