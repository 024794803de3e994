"""A worker whose master was SIGKILLed mid-run stops loading within seconds and exits non-zero (issue 33, point 6)."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.listeners.sim_run import ROOT, sim_target, start_distributed

SIM = Path(ROOT) / "tests/listeners/sim_locustfile.py"
LONG_PLAN = ("--steps", "2", "--step-time", "120")
WAIT_SECONDS = 90.0
#: Locust alone takes 60 s (MASTER_HEARTBEAT_TIMEOUT); swarmgauge's --master-lost-after is 6 s, plus shutdown.
WORKER_GONE_WITHIN_S = 20.0


def _wait_for_requests(target, count: int) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while len(target.records()) < count:
        assert time.monotonic() < deadline, f"fewer than {count} requests reached the target"
        time.sleep(0.5)


@pytest.mark.integration
def test_a_worker_stops_within_seconds_and_exits_non_zero_when_its_master_is_killed(tmp_path):
    with (
        sim_target("--delay", "const:5") as target,
        (tmp_path / "worker.log").open("w") as worker_log,
        start_distributed(
            target.url,
            *LONG_PLAN,
            "--run-dir",
            str(tmp_path / "run"),
            workers=1,
            locustfile=SIM,
            master_output=subprocess.DEVNULL,
            worker_output=worker_log,
            grace=5,
        ) as run,
    ):
        [worker] = run.workers
        _wait_for_requests(target, 20)
        run.master.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        worker.wait(timeout=WAIT_SECONDS)
        gone_after = time.monotonic() - killed_at
    log = (tmp_path / "worker.log").read_text()
    assert gone_after < WORKER_GONE_WITHIN_S, log[-3000:]
    assert worker.returncode == 1, log[-3000:]
    assert "lost the master at 127.0.0.1" in log, log[-3000:]
    assert "Traceback" not in log
