"""Every listener's options register together: a locustfile importing ``listeners.all`` starts and stops cleanly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs

ROOT = Path(__file__).resolve().parents[2]

LOCUSTFILE = """
import swarmgauge.listeners.all  # noqa: F401
from locust import User, constant, task


class IdleUser(User):
    wait_time = constant(0.2)

    @task
    def nothing(self):
        pass
"""


def test_listeners_all_options_parse_and_run(tmp_path: Path):
    locustfile = tmp_path / "idle_locustfile.py"
    locustfile.write_text(LOCUSTFILE)
    result = subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(locustfile), "--headless", "-u", "1", "-t", "1s", "--only-summary"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "TypeError" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == 0, result.stderr[-2000:]
