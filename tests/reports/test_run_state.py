"""A run.json still "running" is marked ended by SIGKILL or crash only when its process is gone from this host."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

from swarmgauge.reports import context, run_state
from swarmgauge.run_folders import CRASHED, ENDED, RUNNING, process_identity


def _gone_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(30)
    return child.pid


def _running(tmp_path, **process) -> dict:
    info = {"state": RUNNING, "started_at": 1.0, "steps": [{"index": 0}], **process}
    (tmp_path / "run.json").write_text(json.dumps(info))
    return info


def test_a_running_run_whose_process_is_gone_is_marked_and_rewritten(tmp_path):
    info = _running(tmp_path, pid=_gone_pid(), hostname=socket.gethostname(), pid_started_at=1.0)
    marked = run_state.settle(tmp_path, info)
    assert (marked["state"], marked["ended_by"]) == (ENDED, CRASHED)
    assert json.loads((tmp_path / "run.json").read_text())["ended_by"] == CRASHED
    assert oct((tmp_path / "run.json").stat().st_mode & 0o777) == "0o600"
    rows = dict(context.context_rows(marked))
    assert rows["ended by"].startswith(CRASHED)
    assert "1 step(s) written as each ended" in context.render(marked)[0]


def test_a_live_process_a_reused_pid_and_another_host(tmp_path):
    live = _running(tmp_path, **process_identity())
    assert run_state.settle(tmp_path, live) == live
    assert "still running" in run_state.ended_by_text(live)
    reused = _running(tmp_path, pid=os.getpid(), hostname=socket.gethostname(), pid_started_at=1.0)
    assert run_state.settle(tmp_path, reused)["ended_by"] == CRASHED  # the pid lives, but as another process
    elsewhere = _running(tmp_path, pid=_gone_pid(), hostname="another-host", pid_started_at=1.0)
    assert run_state.settle(tmp_path, elsewhere) == elsewhere


def test_a_run_ended_by_a_signal_says_which(tmp_path):
    info = {"state": ENDED, "ended_by": "SIGHUP", "exit_code": 0}
    assert run_state.settle(tmp_path, info) == info
    assert dict(context.context_rows(info))["ended by"].startswith("SIGHUP")
    assert "ended by" not in dict(context.context_rows({"state": ENDED, "ended_by": None, "exit_code": 0}))
