"""A real headless run of ``locustfiles/mcp_churn.py`` (``MCPToolUser``) against server-everything, killed and
restarted mid-run: the run goes on, the session loss is counted, and the report marks the outage window."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import gevent
import pytest

from swarmgauge.run_folders import resolve
from swarmgauge.targets.launch import child_env
from tests import REPO_ROOT
from tests.locustfiles.test_mcp_churn import read_csv
from tests.thirdparty import servers

pytestmark = pytest.mark.integration
RUN_SECONDS = 20


@pytest.mark.timeout(240)
def test_a_run_through_a_server_restart_is_reported_with_its_outage(tmp_path, capsys):
    server = servers.everything_server().start()
    plan = tmp_path / "tool.yaml"
    plan.write_text(
        "name: tool-restart\nkind: stages\nstages:\n"
        f"  - {{label: tools, users: 2, duration: {RUN_SECONDS}s, user_classes: [MCPToolUser]}}\n"
    )
    run_dir = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(REPO_ROOT / "locustfiles" / "mcp_churn.py"),
        "--headless",
        "--plan",
        str(plan),
        "--run-dir",
        str(run_dir),
        "--host",
        server.url + "/mcp",
        "--mcp-tool",
        "echo",
        "--mcp-args",
        '{"message": "hello"}',
        "--mcp-list-weight",
        "0.2",
        "--mcp-timeout",
        "5",
        "--stop-timeout",
        "5",
        "--csv",
        str(run_dir / "locust"),
    ]
    try:
        run = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=child_env(), cwd=REPO_ROOT
        )
        lines: list[str] = []
        reader = gevent.spawn(lambda: lines.extend(iter(run.stderr.readline, "")))
        for _ in range(600):  # the load is on once Locust says every user is spawned (a slow start is no outage)
            if any("All users spawned" in line for line in lines) or run.poll() is not None:
                break
            gevent.sleep(0.1)
        gevent.sleep(4)
        killed = time.time()
        server.stop()
        gevent.sleep(2)
        server.start()
        back = time.time()
        run.wait(timeout=180)
        reader.join(timeout=10)
        stderr = "".join(lines)
    finally:
        server.stop()
    assert run.returncode in (0, 1), stderr[-3000:]  # 1: the run had request failures, as it should
    assert "Traceback" not in stderr, stderr[-3000:]

    windows = json.loads((resolve(run_dir) / "summary.json").read_text())["Outages"]["windows"]
    assert len(windows) == 1, windows
    window = windows[0]
    assert window["start"] <= back and window["end"] >= killed
    assert window["end"] - window["start"] <= (back - killed) + 10
    assert "Outages" in (resolve(run_dir) / "report.md").read_text()

    steps = {r["name"]: r for r in read_csv(resolve(run_dir) / "steps.csv") if r["label"] == "tools"}
    assert int(steps["Aggregated"]["sessions_expired"]) >= 1  # both users lost their session and said so
    assert int(steps["initialize"]["requests"]) - int(steps["initialize"]["failures"]) >= 4  # 2 users x 2 sessions
    with capsys.disabled():
        print(
            f"\n[locust run, server-everything] server down {killed:.1f}..{back:.1f} "
            f"({back - killed:.1f} s); report outage window {window['start']:.1f}..{window['end']:.1f} "
            f"({window['end'] - window['start']:.1f} s), {window['failures']} of {window['requests']} failed"
        )
