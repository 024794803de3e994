"""locustfiles/mcp_churn.py as people run it: real headless Locust against the embedded gateway (SDK server) and its
Mark server. Half a minute of churn at a fixed rate starts that many sessions (the scheduler issues rate x duration
tickets, each one session), the report states memory per live session and the idle-TTL drop (the TTL well inside the
churn, so live sessions level off at 1 to 1.5 x rate x TTL as the gateway sweeps every TTL/2, then the idle stage
outlasts it); the comparison run reports gateway minus direct p50 at 1 user."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from swarmgauge.run_folders import resolve
from swarmgauge.targets.launch import child_env
from tests import REPO_ROOT

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs

LOCUSTFILE = REPO_ROOT / "locustfiles" / "mcp_churn.py"
RATE, CHURN, TTL, IDLE = 10, 30, 10, 13
TOKEN = "churn-secret-7d1f"


def locust(*args: str, timeout: float = 150) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=child_env(),
        cwd=REPO_ROOT,
    )


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def _pid_alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.timeout(170)
def test_half_a_minute_of_churn_starts_that_many_sessions_and_the_report_shows_memory_and_the_ttl_drop(tmp_path):
    plan = tmp_path / "churn.yaml"
    plan.write_text(
        "name: churn-half-minute\nkind: stages\nstages:\n"
        f"  - {{label: churn, rate: {RATE}, duration: {CHURN}s, max_users: 32, drop_after: 5s, "
        "user_classes: [MCPChurnUser]}\n"
        f"  - {{label: idle, users: 0, duration: {IDLE}s}}\n"
    )
    run_dir = tmp_path / "run"
    result = locust(
        "--headless",
        "--plan",
        str(plan),
        "--run-dir",
        str(run_dir),
        "--sample-interval",
        "1",
        "--stop-timeout",
        "5",
        "--mcp-token",
        TOKEN,
        "--csv",
        str(run_dir / "locust"),
        "--mcp-embedded-args",
        f"--session-idle-timeout {TTL}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    started = re.search(r"started the embedded MCP gateway at \S+ \(pid (\d+)\)", result.stderr)
    assert started and "stopped the embedded MCP gateway" in result.stderr
    assert not _pid_alive(int(started.group(1)))

    rows = read_csv(resolve(run_dir) / "steps.csv")
    churn = {r["name"]: r for r in rows if r["label"] == "churn"}
    expected = RATE * CHURN
    assert int(churn["Aggregated"]["tickets"]) == expected
    sessions = int(churn["Aggregated"]["sessions_started"])
    assert abs(sessions - expected) <= 0.01 * expected
    assert int(churn["initialize"]["requests"]) == sessions
    assert int(churn["tools/call mark_fetch"]["requests"]) >= sessions - 2  # the last ones may still be in flight
    assert int(churn["Aggregated"]["failures"]) == 0
    assert int(churn["Aggregated"]["sessions_expired"]) == 0  # churn never comes back to a session
    stats = read_csv(Path(f"{run_dir / 'locust'}_stats.csv"))
    assert "DELETE" not in {r["Name"] for r in stats}

    summary = json.loads((resolve(run_dir) / "summary.json").read_text())["MCP sessions"]
    assert summary["sessions"]["sessions_started"] == sessions
    memory = summary["memory_per_session"]
    assert memory["live_source"] == "gateway gauge" and memory["samples"] >= 5
    assert memory["source"] == f"psutil:pid={started.group(1)}" and memory["bytes"] > 0
    drop = summary["ttl_drop"]
    assert RATE * TTL * 0.8 <= drop["peak_live"] <= RATE * TTL * 1.5 * 1.1  # swept every TTL/2: up to 1.5 TTL
    assert drop["low_live"] <= 0.1 * drop["peak_live"] and drop["low_at_s"] > drop["peak_at_s"]
    report = (resolve(run_dir) / "report.md").read_text()
    assert (
        "Memory per live session on the gateway" in report
        and "Idle TTL: live sessions reached" in report
        and "fell to" in report
    )

    for path in resolve(run_dir).iterdir():
        assert TOKEN not in path.read_text(errors="replace"), path.name
    assert TOKEN not in result.stderr + result.stdout


@pytest.mark.timeout(90)
def test_gateway_vs_direct_at_one_user_is_reported(tmp_path):
    run_dir = tmp_path / "compare"
    result = locust(
        "--headless", "--mcp-scenario", "compare", "--mcp-compare-time", "5s", "--run-dir", str(run_dir), timeout=80
    )
    assert result.returncode == 0, result.stderr[-3000:]
    rows = read_csv(resolve(run_dir) / "steps.csv")
    # at 1 user, as the report compares them: a call still in flight when the gateway user stops is recorded in
    # the 0-user "switch" step between the two, which the comparison leaves out
    one = [r for r in rows if r["users"] == "1" and r["label"] != "switch"]
    gateway = [r for r in one if r["request_type"] == "MCP" and r["name"] == "tools/call mark_fetch"]
    direct = [r for r in one if r["request_type"] == "FETCH"]
    assert len(gateway) == 1 and len(direct) == 1
    assert gateway[0]["users"] == direct[0]["users"] == "1" and gateway[0]["step"] != direct[0]["step"]
    assert int(gateway[0]["requests"]) > 0 and int(direct[0]["requests"]) > 0
    assert gateway[0]["failures"] == direct[0]["failures"] == "0"
    compared = json.loads((resolve(run_dir) / "summary.json").read_text())["MCP sessions"]["gateway_vs_direct"]
    assert compared["difference_ms"] == pytest.approx(float(gateway[0]["p50_ms"]) - float(direct[0]["p50_ms"]))
    assert "Gateway vs direct at 1 user" in (resolve(run_dir) / "report.md").read_text()


@pytest.mark.timeout(60)
def test_bad_embedded_gateway_options_stop_the_run_in_one_line(tmp_path):
    result = locust("--headless", "-t", "2s", "--mcp-embedded-args", "--max-sessions -3", timeout=50)
    assert result.returncode == 2
    # refused by the gateway's own parser at init, before the gateway or any load starts (issue 33 point 5)
    assert "swarmgauge: --mcp-embedded-args: argument --max-sessions: must be positive" in result.stderr


@pytest.mark.timeout(90)
def test_the_churn_rate_option_replaces_the_default_plans_rate_and_the_run_says_so(tmp_path):
    """Issue 28, defect 3: ``--mcp-churn-rate 10`` ran the default plan's 5 sessions/s and said nothing."""
    run_dir = tmp_path / "churn"
    result = locust("--headless", "--mcp-churn-rate", "10", "-t", "3s", "--run-dir", str(run_dir), timeout=80)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "--mcp-churn-rate 10 replaces the 5 sessions/s of plan 'mcp-churn'" in result.stderr
    rows = read_csv(resolve(run_dir) / "steps.csv")
    assert {(r["label"], r["target_rate"]) for r in rows} == {("churn 10 sessions/s", "10.0")}
    plan = json.loads((resolve(run_dir) / "run.json").read_text())["plan"]
    assert [(o["option"], o["given"]) for o in plan["overrides"]] == [("--mcp-churn-rate", 10.0)]


@pytest.mark.timeout(60)
def test_the_churn_rate_option_beside_a_plan_with_a_rate_of_its_own_stops_the_run(tmp_path):
    result = locust(
        "--headless", "--rate", "8", "--duration", "3s", "--mcp-churn-rate", "10", "--run-dir", str(tmp_path / "r")
    )
    assert result.returncode == 2, result.stderr[-3000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("swarmgauge:")]
    assert len(lines) == 1 and "--mcp-churn-rate 10 cannot apply: step 'arrival_rate 8/s'" in lines[0], lines
    assert not (tmp_path / "r").exists()


@pytest.mark.timeout(90)
def test_the_embedded_gateway_stops_at_the_targets_step_after_the_run_folder_closed(tmp_path):
    """Issue 31 point 6: the gateway and its Mark server stopped in the locustfile's own ``quitting`` listener, before
    the run's folder closed; now they stop at the lifecycle's ``targets stopped`` step, like every embedded target:
    after the report is written, the gateway before the Mark server behind it."""
    run_dir = tmp_path / "churn"
    result = locust("--headless", "--mcp-churn-rate", "2", "-t", "2s", "--run-dir", str(run_dir), timeout=80)
    assert result.returncode == 0, result.stderr[-3000:]
    started = re.search(r"started the embedded MCP gateway at \S+ \(pid (\d+)\)", result.stderr)
    assert started and not _pid_alive(int(started.group(1)))
    log = result.stderr
    report = log.index("report written to")
    gateway = log.index("stopped the embedded MCP gateway")
    mark = log.index("stopped the embedded Mark server")
    assert report < gateway < mark
    assert log.count("stopped the embedded MCP gateway") == 1 and log.count("stopped the embedded Mark server") == 1
