"""locustfiles/kneo_dispatch.py as real headless Locust runs against the real kneo-serv: the reconciliation in the
run directory and report, the gauges, backpressure, a store that does not match (exit 3), a bad DSN (results kept),
and secrets that never reach the output."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from swarmgauge.files import write_atomic
from swarmgauge.run_folders import resolve
from swarmgauge.targets.kneo import KneoService
from swarmgauge.targets.postgres import PostgresCluster, free_port

ROOT = Path(__file__).resolve().parents[2]
LOCUST = str(Path(sys.executable).parent / "locust")
pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]  # the first test may build the cached kneo-serv venv


def _database(cluster: PostgresCluster) -> str:
    import psycopg

    name = f"kneo_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(cluster.dsn, autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    return cluster.dsn.rsplit("/", 1)[0] + "/" + name


@pytest.fixture(scope="module")
def sqlite_service(kneo_venv):
    with KneoService(store="sqlite") as service:
        yield service


def run_locust(run_dir: Path, *args: str, users: str = "2", step_time: str = "3s") -> subprocess.CompletedProcess:
    cmd = [
        LOCUST,
        "-f",
        "locustfiles/kneo_dispatch.py",
        "--headless",
        "--only-summary",
        "--run-dir",
        str(run_dir),
        "--steps",
        users,
        "--step-time",
        step_time,
        "--sample-interval",
        "1",
        *args,
    ]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=240)


def _master_port_args() -> list[str]:
    """``--processes`` binds Locust's master on 5557 unless told: a free port, so parallel test runs do not meet."""
    port = str(free_port())
    return ["--master-bind-port", port, "--master-port", port]


def _explain(run_dir: Path, proc: subprocess.CompletedProcess) -> str:
    """What a failed assertion on the exit code shows: the gate verdicts, the checks, the end of stderr."""
    parts = [proc.stderr[-1200:]]
    for name in ("slo.json", "kneo.json"):
        if (resolve(run_dir) / name).is_file():
            parts.append(f"{name}: {(resolve(run_dir) / name).read_text()[-1500:]}")
    return "\n".join(parts)


def _result(run_dir: Path) -> dict:
    return json.loads((resolve(run_dir) / "kneo.json").read_text())


def _all_output(run_dir: Path, proc: subprocess.CompletedProcess) -> str:
    texts = [proc.stdout, proc.stderr]
    texts += [p.read_text(errors="replace") for p in resolve(run_dir).iterdir() if p.is_file()]
    return "\n".join(texts)


def _steps(run_dir: Path) -> list[dict]:
    with open(resolve(run_dir) / "steps.csv") as handle:
        return list(csv.DictReader(handle))


def test_embedded_sqlite_sync_run_reconciles_and_reports_backlog_and_rss(kneo_venv, tmp_path):
    proc = run_locust(tmp_path, users="1,3")
    assert proc.returncode == 0, _explain(tmp_path, proc)
    result = _result(tmp_path)
    assert result["mismatches"] == 0 and result["error"] is None
    assert result["ledger"]["accepted"] > 0 and result["ledger"]["indeterminate"] == 0
    assert result["ledger"]["observed"] == {"completed": result["ledger"]["accepted"]}
    assert "kneo reconciliation" in proc.stdout and "matches" in proc.stdout
    rows = list(csv.DictReader(open(resolve(tmp_path) / "resources.csv")))
    metrics = {(r["source"].split(":", 1)[0], r["metric"]) for r in rows}
    assert {("prom", "kneo_runs_queued"), ("prom", "kneo_worker_count"), ("psutil", "rss_bytes")} <= metrics
    report = (resolve(tmp_path) / "report.md").read_text()
    assert "## kneo-serv runs" in report and "| accepted runs present" in report
    assert "Backlog over time" in report and "service RSS MiB (peak)" in report
    slo = json.loads((resolve(tmp_path) / "slo.json").read_text())
    assert [(v["expr"], v["status"]) for v in slo["verdicts"]] == [("kneo_mismatches==0", "pass")]
    steps = _steps(tmp_path)
    assert {r["request_type"] for r in steps} == {"run sync", ""} and "queue_full" in steps[0]


def test_an_embedded_run_leaves_no_kneo_folder_in_the_folder_it_was_started_from(kneo_venv, tmp_path):
    """kneo-serv keeps its SQLite store in ``.kneo/`` under its own working folder: the embedded one gets a folder of
    its own, so a run started from any folder (a test's is the repository's root) leaves nothing there."""
    started_in, run_dir = tmp_path / "cwd", tmp_path / "runs"
    started_in.mkdir()
    locustfile = str(ROOT / "locustfiles" / "kneo_dispatch.py")
    cmd = [LOCUST, "-f", locustfile, "--headless", "--only-summary", "--run-dir", str(run_dir), "--steps", "1"]
    proc = subprocess.run([*cmd, "--step-time", "2s"], cwd=started_in, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, _explain(run_dir, proc)
    assert list(started_in.iterdir()) == []
    store = Path(_result(run_dir)["store"])
    assert store.is_absolute() and store.parent.name == ".kneo" and started_in not in store.parents
    assert not store.parent.parent.exists()  # the service's own folder went with it


def test_postgres_queued_run_with_auth_reconciles_and_never_shows_the_key_or_password(kneo_venv, pg_cluster, tmp_path):
    dsn = _database(pg_cluster)
    key = f"key-{uuid.uuid4().hex}"
    with KneoService(store="postgres", dsn=dsn, api_keys=[f"loader:{key}:operator"]) as service:
        store_file = tmp_path / "store"
        write_atomic(store_file, dsn + "\n")
        run_dir = tmp_path / "run"
        proc = run_locust(
            run_dir,
            "--host",
            service.url,
            "--kneo-mode",
            "queued",
            "--kneo-store-file",
            str(store_file),
            "--kneo-api-key",
            key,
            users="4",
        )
    assert proc.returncode == 0, _explain(run_dir, proc)
    result = _result(run_dir)
    assert result["mismatches"] == 0, result["checks"]
    assert result["ledger"]["accepted"] > 0 and result["store_statuses"] == {"completed": result["ledger"]["accepted"]}
    output = _all_output(run_dir, proc)
    assert key not in output and pg_cluster.password not in output
    assert {r["request_type"] for r in _steps(run_dir)} >= {"run submit", "run poll", "run queued"}


def test_queue_depth_two_burst_gets_queue_full_and_still_matches_row_for_row(kneo_venv, pg_cluster, tmp_path):
    dsn = _database(pg_cluster)
    with KneoService(store="postgres", dsn=dsn, max_queue_depth=2) as service:
        proc = run_locust(tmp_path, "--host", service.url, "--kneo-mode", "queued", "--kneo-store", dsn, users="10")
    assert proc.returncode == 1, _explain(tmp_path, proc)  # QueueFull is recorded as a failure; the gate still holds
    result = _result(tmp_path)
    assert result["mismatches"] == 0, result["checks"]
    queue_full = result["ledger"]["queue_full"]
    assert queue_full > 0 and result["store_statuses"]["failed"] == queue_full
    check = next(c for c in result["checks"] if c["check"].startswith("queue_full"))
    assert check["locust"] == check["store"] == queue_full and check["ok"]
    assert sum(int(r["queue_full"]) for r in _steps(tmp_path) if r["name"] == "Aggregated") == queue_full
    failures = (resolve(tmp_path) / "locust_failures.csv").read_text()
    assert "QueueFull" in failures and "RunFailed" not in failures
    slo = json.loads((resolve(tmp_path) / "slo.json").read_text())
    assert slo["passed"] is True


def test_a_store_that_does_not_match_fails_the_gate_with_exit_3(sqlite_service, tmp_path, kneo_venv):
    with KneoService(store="sqlite") as other:
        proc = run_locust(tmp_path, "--host", sqlite_service.url, "--kneo-store", other.store_locator, users="1")
    assert proc.returncode == 3, _explain(tmp_path, proc)
    result = _result(tmp_path)
    assert result["mismatches"] >= 1
    present = result["checks"][0]
    assert present["check"] == "accepted runs present" and present["store"] == 0 and not present["ok"]
    assert "FAIL" in proc.stdout
    assert json.loads((resolve(tmp_path) / "slo.json").read_text())["passed"] is False


def test_bad_dsn_gives_a_clear_error_and_keeps_the_runs_other_results(sqlite_service, tmp_path):
    secret = f"pw{uuid.uuid4().hex[:8]}"
    proc = run_locust(
        tmp_path,
        "--host",
        sqlite_service.url,
        "--kneo-store",
        f"postgresql://kneo:{secret}@127.0.0.1:1/kneo",
        "--kneo-drain-timeout",
        "1",
        users="1",
    )
    # the reconciliation gate could not be judged: a gate over no data fails the run (issue 21), never passes it
    assert proc.returncode == 3, _explain(tmp_path, proc)
    verdicts = json.loads((resolve(tmp_path) / "slo.json").read_text())["verdicts"]
    assert [(v["expr"], v["status"]) for v in verdicts] == [("kneo_mismatches==0", "no data")]
    result = _result(tmp_path)
    assert result["error"].startswith("StoreUnavailable: PostgreSQL store postgresql://kneo:***@127.0.0.1:1/kneo")
    assert result["mismatches"] is None and result["ledger"]["accepted"] > 0
    assert "reconciliation" in proc.stdout and "not done" in proc.stdout
    assert int(next(r for r in _steps(tmp_path) if r["request_type"] == "run sync")["requests"]) > 0
    assert "reconciliation not done" in (resolve(tmp_path) / "report.md").read_text()
    assert secret not in _all_output(tmp_path, proc)


def test_missing_store_file_stops_before_any_load_in_one_line(tmp_path, sqlite_service):
    proc = run_locust(tmp_path, "--host", sqlite_service.url, "--kneo-store-file", str(tmp_path / "nope"))
    assert proc.returncode == 2
    assert "swarmgauge: --kneo-store-file" in proc.stderr and "cannot read a store" in proc.stderr


def test_workers_send_their_ledgers_to_the_master_and_the_run_reconciles(sqlite_service, tmp_path):
    proc = run_locust(
        tmp_path,
        "--host",
        sqlite_service.url,
        "--kneo-store",
        sqlite_service.store_locator,
        "--kneo-mode",
        "queued",
        "--processes",
        "2",
        *_master_port_args(),
        users="2,4",
    )
    assert proc.returncode == 0, _explain(tmp_path, proc)
    result = _result(tmp_path)
    assert result["mismatches"] == 0, result["checks"]
    assert result["ledger"]["accepted"] > 0
    assert result["store_statuses"] == {"completed": result["ledger"]["accepted"]}
    assert json.loads((resolve(tmp_path) / "run.json").read_text())["runner"] == "MasterRunner"


@pytest.mark.integration
def test_a_batch_on_two_processes_drains_and_reports_its_rate_and_queue_wait(kneo_venv, tmp_path):
    run_dir = tmp_path / "batch"
    proc = run_locust(
        run_dir,
        "--kneo-embedded-store",
        "postgres",
        "--kneo-embedded-processes",
        "2",
        "--kneo-mode",
        "batch",
        "--kneo-batch",
        "24",
        "--kneo-drain-timeout",
        "60",
        users="4",
        step_time="15s",
    )
    assert proc.returncode == 0, _explain(run_dir, proc)
    doc = _result(run_dir)
    assert doc["mismatches"] == 0 and doc["ledger"]["accepted"] == 24
    drain = doc["queue_drain"]
    assert drain["runs"] == drain["dispatched"] == drain["batch"] == 24
    assert drain["unfinished"] == 0 and drain["runs_per_s"] > 0
    assert 0 < drain["wait_p50_ms"] <= drain["wait_p95_ms"] <= drain["wait_p99_ms"]
    assert 1 <= drain["peak_queued"] <= 24  # from the store's stamps: saved, then started by a worker
    assert "kneo queue drain: 24 runs" in proc.stdout
    # the plan ended once the batch was sent, not after its 15 s hold of idle users: the drain came next
    assert "the batch is submitted (--kneo-batch): the plan ends here" in proc.stderr
    (step,) = {row["step"]: row for row in csv.DictReader(open(resolve(run_dir) / "steps.csv"))}.values()
    assert float(step["duration_s"]) < 15 and int(step["requests"]) == 24
    started = [
        r for r in csv.DictReader(open(resolve(run_dir) / "resources.csv")) if r["metric"] == "kneo_runs_started_total"
    ]
    assert len({r["source"] for r in started}) == 2  # both processes sampled


def test_a_batch_of_zero_stops_before_any_load_in_one_line(tmp_path, sqlite_service):
    proc = run_locust(
        tmp_path / "zero",
        "--host",
        sqlite_service.url,
        "--kneo-store",
        str(sqlite_service.sqlite_path),
        "--kneo-mode",
        "batch",
        "--kneo-batch",
        "0",
    )
    assert proc.returncode == 2 and "swarmgauge: --kneo-batch 0: must be a whole number at least 1" in proc.stderr


def test_an_idle_poll_of_zero_stops_before_any_service_starts_in_one_line(tmp_path):
    proc = run_locust(tmp_path / "poll", "--kneo-embedded-idle-poll", "0")
    assert proc.returncode == 2 and "--kneo-embedded-idle-poll 0" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "poll").exists()
