"""The throwaway PostgreSQL target: a real cluster (initdb + pg_ctl), its DSN, redaction, removal on stop."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from swarmgauge.targets import postgres
from swarmgauge.targets.postgres import TEMPLATE_READY, PostgresCluster, PostgresError, find_bindir, redact_dsn

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs

ROOT = Path(__file__).resolve().parents[2]


def _bindir_or_skip() -> Path:
    try:
        return find_bindir()
    except PostgresError as exc:
        pytest.skip(f"no PostgreSQL here: {exc}")


@pytest.fixture(scope="module")
def cluster():
    _bindir_or_skip()
    with PostgresCluster(fsync=False) as running:
        yield running


def test_redact_dsn_hides_only_the_password():
    text = "connect postgresql://kneo:s3cr3t@127.0.0.1:5432/db and postgres://u:p%40ss@h/d; sqlite /tmp/x.sqlite"
    redacted = redact_dsn(text)
    assert "s3cr3t" not in redacted and "p%40ss" not in redacted
    assert "postgresql://kneo:***@127.0.0.1:5432/db" in redacted
    assert "postgres://u:***@h/d" in redacted and "/tmp/x.sqlite" in redacted


def test_cluster_accepts_its_dsn_and_keeps_the_password_out_of_the_redacted_one(cluster):
    assert cluster.password not in cluster.redacted_dsn
    assert cluster.dsn.startswith("postgresql://swarmgauge:") and "@127.0.0.1:" in cluster.dsn
    with psycopg.connect(cluster.dsn, connect_timeout=5) as connection:
        assert connection.execute("select current_database()").fetchone() == ("swarmgauge",)
        assert connection.execute("show listen_addresses").fetchone() == ("127.0.0.1",)


def test_wrong_password_is_refused(cluster):
    wrong = cluster.dsn.replace(cluster.password, "not-the-password")
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(wrong, connect_timeout=5)


def test_stop_removes_the_cluster_directory():
    _bindir_or_skip()
    running = PostgresCluster(fsync=False).start()
    root = running.root
    assert root is not None and (root / "data" / "PG_VERSION").is_file()
    running.stop()
    assert not root.exists()
    running.stop()  # a second stop is harmless


def recorded_tools(monkeypatch, tmp_path: Path) -> list[tuple[str, ...]]:
    """Every PostgreSQL tool the clusters run from now on, with a template of their own (made afresh here)."""
    calls: list[tuple[str, ...]] = []
    run_tool = PostgresCluster._pg

    def recording(self, tool, *args, **kwargs):
        calls.append((tool, *args))
        return run_tool(self, tool, *args, **kwargs)

    monkeypatch.setattr(PostgresCluster, "_pg", recording)
    monkeypatch.setattr(postgres, "template_dir", lambda *_key: tmp_path / "template")
    return calls


def test_a_throwaway_cluster_skips_the_syncs_no_one_reads_but_keeps_its_fsync_setting(monkeypatch, tmp_path):
    """initdb's bootstrap files are not synced and the stop does not checkpoint (the directory is removed next); the
    running cluster keeps the fsync it was asked for, which the measured writes pay."""
    _bindir_or_skip()
    calls = recorded_tools(monkeypatch, tmp_path)
    running = PostgresCluster(fsync=True).start()
    try:
        with psycopg.connect(running.dsn) as conn:
            assert conn.execute("SHOW fsync").fetchone()[0] == "on"
    finally:
        running.stop()
    initdb = next(call for call in calls if call[0] == "initdb")
    stop = next(call for call in calls if call[0] == "pg_ctl" and call[-1] == "stop")
    assert "--no-sync" in initdb
    assert stop[stop.index("-m") + 1] == "immediate"


def test_initdb_runs_once_and_each_cluster_starts_from_its_copy_with_a_password_of_its_own(monkeypatch, tmp_path):
    """The first cluster makes the template (initdb, the database); the next copies it and runs no initdb; each
    answers only its own password and has the database; the password goes on no command line."""
    _bindir_or_skip()
    calls = recorded_tools(monkeypatch, tmp_path)
    first = PostgresCluster(fsync=False).start()
    try:
        second = PostgresCluster(fsync=False).start()
        try:
            for cluster, other in ((first, second), (second, first)):
                with psycopg.connect(cluster.dsn, connect_timeout=5) as connection:
                    assert connection.execute("select current_database()").fetchone() == ("swarmgauge",)
                with pytest.raises(psycopg.OperationalError):
                    psycopg.connect(cluster.dsn.replace(cluster.password, other.password), connect_timeout=5)
        finally:
            second.stop()
    finally:
        first.stop()
    assert [call[0] for call in calls].count("initdb") == 1
    assert (tmp_path / "template" / TEMPLATE_READY).is_file()
    assert not any(first.password in " ".join(call) or second.password in " ".join(call) for call in calls)


def test_bad_bindir_is_a_named_error(tmp_path):
    with pytest.raises(PostgresError, match="no PostgreSQL binaries"):
        PostgresCluster(bindir=str(tmp_path))


def test_cli_prints_redacted_dsn_and_writes_a_private_dsn_file(tmp_path):
    _bindir_or_skip()
    dsn_file = tmp_path / "dsn"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "swarmgauge.cli",
            "target",
            "postgres",
            "--no-fsync",
            "--max-seconds",
            "0.5",
            "--dsn-file",
            str(dsn_file),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-800:]
    ready = [line for line in result.stdout.splitlines() if line.startswith("ready ")]
    assert len(ready) == 1 and ":***@127.0.0.1:" in ready[0]
    dsn = dsn_file.read_text().strip()
    password = dsn.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
    assert password and password != "***"
    assert password not in result.stdout + result.stderr
    assert stat.S_IMODE(os.stat(dsn_file).st_mode) == 0o600


def test_cli_with_bad_bindir_says_so_in_one_line(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "swarmgauge.cli", "target", "postgres", "--bindir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "no PostgreSQL binaries" in lines[0]


def test_the_sample_spec_finds_the_clusters_postmaster_and_sums_its_backends(cluster):
    from swarmgauge.listeners.sources import parse_source

    with psycopg.connect(cluster.dsn) as conn:  # one backend open while sampled
        readings = {r.metric: r.value for r in parse_source(cluster.sample_spec()).sample()}
        conn.execute("SELECT 1")
    assert readings["rss_bytes"] > 0 and readings["processes"] >= 2  # the postmaster and at least one child
