"""Whole Locust runs against servers that never answer: requests in flight at the end (and at a step's ramp-down) are
recorded as unfinished, count against the gates, and the run exits non-zero.

The servers are fakes below the client seam (``tests/users/silent_servers.py``): a real QUIC server over UDP on
loopback that completes every handshake and answers no stream, and an HTTP server that accepts and never answers.
The Users and locustfiles are the shipped ones. ``--stop-timeout 1`` keeps each run's end short (without it, stopped
users get ``recording.IN_FLIGHT_GRACE_SECONDS``).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from swarmgauge.run_folders import resolve
from tests import REPO_ROOT
from tests.listeners.sim_run import run_distributed, run_local
from tests.users.silent_servers import silent_server

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

READS = REPO_ROOT / "locustfiles" / "demarkus_reads.py"
KNEO = REPO_ROOT / "locustfiles" / "kneo_dispatch.py"
USERS = 3
SHORT = ("-u", str(USERS), "-r", str(USERS), "-t", "4s", "--stop-timeout", "1")
GATE = "fail_ratio<0.01"


def _steps(run_dir: Path) -> list[dict[str, str]]:
    with open(resolve(run_dir) / "steps.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def _unfinished(rows: list[dict[str, str]], step: str = "0") -> int:
    return sum(int(r["unfinished"]) for r in rows if r["step"] == step and r["name"] != "Aggregated")


def _slo(run_dir: Path) -> dict[str, Any]:
    return json.loads((resolve(run_dir) / "slo.json").read_text())


def _assert_gate_failed_on_no_answers(result: Any, run_dir: Path) -> None:
    assert result.returncode == 3, result.stdout[-3000:] + result.stderr[-3000:]
    verdict = _slo(run_dir)["verdicts"][0]
    assert (verdict["expr"], verdict["status"]) == (GATE, "fail")
    assert verdict["reason"] == f"no answers in step 0 ({USERS} unfinished)"
    assert verdict["observed"] > 0.01  # the unfinished requests are in the ratio itself
    assert f"SLO FAIL    {GATE}" in result.stdout and "still in flight when their users stopped" in result.stdout


@pytest.mark.parametrize("user_class", ["FetchUser", "FreshFetchUser"])  # pooled, and a fresh connection each
def test_a_quic_server_that_answers_no_stream_fails_the_gate_and_the_exit_code(tmp_path, user_class):
    run_dir = tmp_path / "run"
    with silent_server("quic") as url:
        result = run_local(
            url, user_class, *SHORT, "--mark-insecure", "--slo", GATE, "--run-dir", str(run_dir), locustfile=READS
        )
    _assert_gate_failed_on_no_answers(result, run_dir)
    rows = _steps(run_dir)
    assert _unfinished(rows) == USERS
    fetch = next(r for r in rows if r["request_type"] == "FETCH")
    assert int(fetch["failures"]) == int(fetch["requests"]) == int(fetch["unfinished"])


def test_a_worker_s_unfinished_requests_reach_the_master_before_its_gates(tmp_path):
    run_dir = tmp_path / "run"
    with silent_server("quic") as url:
        result = run_distributed(
            url,
            "FetchUser",
            *SHORT,
            "--mark-insecure",
            "--slo",
            GATE,
            "--run-dir",
            str(run_dir),
            workers=1,
            locustfile=READS,
        )
    _assert_gate_failed_on_no_answers(result, run_dir)
    assert _unfinished(_steps(run_dir)) == USERS


@pytest.mark.parametrize("mode", ["sync", "queued"])
def test_kneo_against_a_server_that_never_answers_fails_the_gate_and_the_exit_code(tmp_path, mode):
    run_dir = tmp_path / "run"
    with silent_server("http") as url:
        result = run_local(
            url,
            *SHORT,
            "--kneo-mode",
            mode,
            "--kneo-no-gauges",
            "--slo",
            GATE,
            "--run-dir",
            str(run_dir),
            locustfile=KNEO,
        )
    _assert_gate_failed_on_no_answers(result, run_dir)
    cut_off = {r["request_type"]: int(r["unfinished"]) for r in _steps(run_dir) if r["name"] != "Aggregated"}
    assert cut_off == {"run sync" if mode == "sync" else "run submit": USERS}


def test_kneo_against_a_server_that_never_answers_exits_non_zero_without_a_gate(tmp_path):
    with silent_server("http") as url:
        result = run_local(url, *SHORT, "--kneo-no-gauges", "--run-dir", str(tmp_path / "run"), locustfile=KNEO)
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    assert f"exit code 1: no answers in step 0 ({USERS} unfinished)" in result.stdout


def test_requests_in_flight_at_a_ramp_down_are_in_the_step_they_started_in(tmp_path):
    """4 users, then 2: the 2 stopped at the boundary and the 2 stopped at the end all had their request in flight
    since step 0 (started in its warm-up, which leaves out only requests that ended)."""
    run_dir = tmp_path / "run"
    plan = tmp_path / "ramp-down.yaml"
    plan.write_text(
        "name: ramp-down\nkind: stages\nwarmup: 1s\nstages:\n"
        "  - {label: 4 users, users: 4, duration: 3s}\n  - {label: 2 users, users: 2, duration: 3s}\n"
    )
    with silent_server("quic") as url:
        result = run_local(
            url,
            "FetchUser",
            "--plan",
            str(plan),
            "--stop-timeout",
            "1",
            "--mark-insecure",
            "--run-dir",
            str(run_dir),
            locustfile=READS,
        )
    assert result.returncode != 0, result.stderr[-3000:]
    rows = _steps(run_dir)
    assert _unfinished(rows, "0") == 4  # more than the 2 users left at the end: the ramp-down's are there
    assert _unfinished(rows, "1") == 0
    step0 = next(r for r in rows if r["step"] == "0" and r["request_type"] == "FETCH")
    assert float(step0["max_ms"]) > float(step0["p50_ms"]) > 0  # cut at the boundary, and later at the end
