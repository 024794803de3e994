"""The read locustfile as people run it: headless, embedded default or a given host, local and distributed."""

from __future__ import annotations

import argparse
import csv
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from swarmgauge.quic.engine import ENGINES
from swarmgauge.targets.launch import child_env, launch_target
from tests import REPO_ROOT

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs

LOCUSTFILE = REPO_ROOT / "locustfiles" / "demarkus_reads.py"


def locust(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=child_env(),
        cwd=REPO_ROOT,
    )


def stats_rows(prefix: Path) -> list[dict[str, str]]:
    with open(f"{prefix}_stats.csv", newline="") as handle:
        return [row for row in csv.DictReader(handle) if row["Name"] != "Aggregated"]


@pytest.mark.parametrize("quic_engine", ENGINES)
def test_embedded_default_starts_and_stops_with_the_run(tmp_path, quic_engine):
    """A headless reads run on each QUIC engine against the embedded target: requests, no failures."""
    result = locust(
        "--mark-quic-engine",
        quic_engine,
        "FetchUser",
        "LookupUser",
        "ListUser",
        "--headless",
        "-u",
        "3",
        "-r",
        "3",
        "-t",
        "3s",
        "--csv",
        str(tmp_path / "run"),
        "--mark-corpus",
        "40",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    started = re.search(r"started the embedded mark at (mark://127\.0\.0\.1:\d+) \(pid (\d+)", result.stderr)
    assert started, result.stderr[-2000:]
    assert "stopped the embedded mark" in result.stderr
    pid = int(started.group(2))
    try:
        os.kill(pid, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    assert not alive
    rows = {(r["Type"], r["Name"]): r for r in stats_rows(tmp_path / "run")}
    for key in [("FETCH", "/corpus/{topic}/{doc}"), ("LOOKUP", "/"), ("LIST", "/corpus/{topic}")]:
        assert int(rows[key]["Request Count"]) > 0 and rows[key]["Failure Count"] == "0"
    assert rows[("QUIC", "handshake")]["Request Count"] == "3"


def served_count(stderr: str) -> int:
    found = re.search(r"served (\d+) requests", stderr)
    assert found, stderr[-1000:]
    return int(found.group(1))


def test_distributed_run_counts_every_request_exactly_once(tmp_path):
    server = launch_target("mark", ["--port", "0", "--seed-corpus", "300"])
    base = ["--host", server.url, "--mark-insecure"]
    workers: list[subprocess.Popen] = []
    try:
        master_port = _free_tcp_port()
        master = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "locust",
                "-f",
                str(LOCUSTFILE),
                "FetchUser",
                "--headless",
                "--master",
                "--expect-workers",
                "2",
                "--master-bind-port",
                str(master_port),
                "-u",
                "4",
                "-r",
                "4",
                "-t",
                "4s",
                "--stop-timeout",
                "5",  # users finish the request in flight, so the server saw no extra ones
                "--csv",
                str(tmp_path / "dist"),
                *base,
            ],
            env=child_env(),
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        workers = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "locust",
                    "-f",
                    str(LOCUSTFILE),
                    "FetchUser",
                    "--worker",
                    "--master-port",
                    str(master_port),
                ],
                env=child_env(),
                cwd=REPO_ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for _ in range(2)
        ]
        _, master_err = master.communicate(timeout=120)
        assert master.returncode == 0, master_err[-2000:]
    finally:
        for worker in workers:
            worker.wait(30) if worker.poll() is None else None
        server.process.send_signal(signal.SIGTERM)
        server.process.wait(15)
        server_log = server.stderr_tail(limit=1 << 20)
        server.stop()
    rows = stats_rows(tmp_path / "dist")
    fetches = sum(int(r["Request Count"]) for r in rows if r["Type"] == "FETCH")
    failures = sum(int(r["Failure Count"]) for r in rows)
    assert fetches > 0 and failures == 0
    assert fetches == served_count(server_log)


def _free_tcp_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_web_ui_lists_the_read_users_for_the_class_picker(tmp_path):
    port = _free_tcp_port()
    ui = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "locust",
            "-f",
            str(LOCUSTFILE),
            "--class-picker",
            "--web-host",
            "127.0.0.1",
            "--web-port",
            str(port),
            "--host",
            "mark://127.0.0.1:6309",
        ],
        env=child_env(),
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    import requests

    try:
        page = ""
        for _ in range(60):
            try:
                page = requests.get(f"http://127.0.0.1:{port}/", timeout=2).text
                break
            except requests.ConnectionError:
                time.sleep(0.25)
    finally:
        ui.send_signal(signal.SIGINT)
        try:
            ui.wait(20)
        except subprocess.TimeoutExpired:
            ui.kill()
            ui.wait(10)
    for name in ("FetchUser", "FreshFetchUser", "LookupUser", "ListUser"):
        assert name in page
    assert "mark_token" in page and "mark_connection" in page


def test_a_fresh_iteration_is_one_request_one_handshake_and_one_dialled_fetch(tmp_path):
    """FreshFetchUser records the page tool's timing (dial inside the request) once per FETCH, never a second task."""
    result = locust(
        "FreshFetchUser", "--headless", "-u", "2", "-r", "2", "-t", "3s", "--csv", str(tmp_path / "run"),
        "--mark-corpus", "40",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    counts = {(row["Type"], row["Name"]): int(row["Request Count"]) for row in stats_rows(tmp_path / "run")}
    fetches = counts[("FETCH", "/corpus/{topic}/{doc}")]
    dialled = counts[("FETCH+dial", "/corpus/{topic}/{doc}")]
    assert fetches > 0 and abs(dialled - fetches) <= 2  # the run's end may cut an iteration between its two events
    assert abs(counts[("QUIC", "handshake")] - fetches) <= 2


@pytest.mark.parametrize("user_name", ["FetchUser", "LookupUser", "ListUser"])
def test_a_reader_has_its_corpus_when_made_and_starting_adds_no_attribute(user_name):
    """Locust makes a batch of users before their first task; an attribute first set in ``on_start`` would no longer
    fit the class's shared attribute table and give every user a dictionary of its own (issue 34)."""
    from locust.env import Environment

    import swarmgauge.locustfiles.demarkus_reads as reads

    user_class = getattr(reads, user_name)
    options = argparse.Namespace(
        mark_insecure=True, mark_connection="", mark_timeout=10.0, mark_corpus=40, mark_quic_engine="qh3"
    )
    environment = Environment(user_classes=[user_class], host="mark://127.0.0.1:6309", parsed_options=options)
    user = user_class(environment)
    made = set(vars(user))
    assert len(user.paths) == 40 and all(path.startswith("/corpus/") for path in user.paths)
    assert 0.0 <= user.random.random() < 1.0
    user.on_start()
    assert set(vars(user)) == made
