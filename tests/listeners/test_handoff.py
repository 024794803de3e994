"""``--handoff DIR``: a run starts up and waits for its go before any load, and says when its measurements are over."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import pytest

from swarmgauge.errors import UsageError
from swarmgauge.listeners.handoff import GO, LOAD_DONE, LOAD_END, READY, say_load_done, wait_for_go

IDLE_LOCUSTFILE = """
import swarmgauge.locust  # noqa: F401 - every listener
from locust import User, constant, task


class IdleUser(User):
    wait_time = constant(0.1)

    @task
    def idle(self):
        pass
"""


def test_the_wait_ends_at_the_go_and_a_go_that_never_comes_is_one_line_not_a_load(tmp_path):
    timer = threading.Timer(0.2, (tmp_path / GO).touch)
    timer.start()
    wait_for_go(tmp_path, max_wait_s=60)
    timer.join()
    assert (tmp_path / READY).stat().st_mtime <= (tmp_path / GO).stat().st_mtime  # its start-up's end, marked first
    with pytest.raises(UsageError, match=r"--handoff .*: no go within 0 s; no load sent"):
        wait_for_go(tmp_path / "elsewhere", max_wait_s=0.1)


def test_load_done_freezes_the_heap_out_of_the_collector_only_for_a_run_handed_over(tmp_path):
    """Past load-done a handed-over run only writes its files and exits: its heap leaves the cyclic collector, so the
    interpreter's teardown does not scan it again; a run without --handoff keeps it."""
    plain = SimpleNamespace(parsed_options=SimpleNamespace(handoff="", headless=True), runner=None)
    handed = SimpleNamespace(parsed_options=SimpleNamespace(handoff=str(tmp_path), headless=True), runner=None)
    gc.unfreeze()
    try:
        say_load_done(plain)
        assert gc.get_freeze_count() == 0 and not (tmp_path / LOAD_DONE).exists()
        say_load_done(handed)
        assert gc.get_freeze_count() > 0 and (tmp_path / LOAD_DONE).exists()
    finally:
        gc.unfreeze()


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_a_headless_run_starts_up_waits_for_its_go_then_says_its_load_is_done(tmp_path):
    locustfile = tmp_path / "idle.py"
    locustfile.write_text(IDLE_LOCUSTFILE)
    handoff, runs, log = tmp_path / "handoff", tmp_path / "runs", tmp_path / "locust.log"
    handoff.mkdir()
    command = [sys.executable, "-m", "locust", "-f", str(locustfile), "--headless", "-u", "1", "-t", "1s"]
    command += ["--run-dir", str(runs), "--handoff", str(handoff), "--host", "http://127.0.0.1:9"]
    with open(log, "w") as output:
        process = subprocess.Popen(command, stdout=output, stderr=output, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while "Starting Locust" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(3)  # three times its -t: a run that had not waited would have ended
        assert process.poll() is None, log.read_text()[-2000:]
        assert not list(runs.rglob("steps.csv")) and not (handoff / LOAD_DONE).exists()  # no load yet
        (handoff / GO).touch()
        assert process.wait(timeout=60) == 0, log.read_text()[-2000:]
    finally:
        if process.poll() is None:
            process.kill()
    assert (handoff / LOAD_DONE).exists() and list(runs.rglob("steps.csv"))
    # the phases' marks, in order: start-up done, users stopped, measurements over (cli/demo_phases.py reads them)
    marks = [(handoff / name).stat().st_mtime for name in (READY, GO, LOAD_END, LOAD_DONE)]
    assert marks == sorted(marks)
