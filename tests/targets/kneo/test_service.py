"""KneoService's stop: every process of a multi-process service is told to stop before any is waited for, and one
that ignores SIGTERM is killed. Stand-in processes (plain Python children, not kneo-serv) play the service's
processes: the seam tested is the signalling, below kneo-serv itself."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from swarmgauge.targets.kneo import service as service_module
from swarmgauge.targets.kneo.service import KneoService

#: a stand-in process: says when it got SIGTERM and when it leaves, taking a while to leave (a kneo-serv's shutdown)
STAND_IN = """
import os, signal, sys, time
name, journal, leave_s = sys.argv[1], sys.argv[2], float(sys.argv[3])
def note(what):
    with open(journal, "a") as f:
        f.write(f"{what} {name}\\n")
def on_term(*_):
    note("term")
    time.sleep(leave_s)
    note("exit")
    os._exit(0)
signal.signal(signal.SIGTERM, on_term if leave_s >= 0 else signal.SIG_IGN)
note("ready")
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    time.sleep(0.05)
"""


def _stand_ins(tmp_path: Path, count: int, leave_s: float) -> tuple[KneoService, Path, list[subprocess.Popen]]:
    journal = tmp_path / "journal"
    service = KneoService(workdir=tmp_path)  # workdir given: stop() leaves it in place
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", STAND_IN, str(index), str(journal), str(leave_s)], start_new_session=True
        )
        for index in range(count)
    ]
    for proc in procs:
        service.adopt(proc)  # the stand-ins take the started processes' place
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if journal.exists() and journal.read_text().count("ready") == count:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the stand-in processes never started")
    return service, journal, procs


def test_stop_signals_every_process_before_waiting_for_any(tmp_path: Path) -> None:
    service, journal, procs = _stand_ins(tmp_path, 3, leave_s=0.5)
    service.stop()
    events = [line for line in journal.read_text().splitlines() if not line.startswith("ready")]
    assert sorted(events) == ["exit 0", "exit 1", "exit 2", "term 0", "term 1", "term 2"]
    first_exit = next(i for i, line in enumerate(events) if line.startswith("exit"))
    assert sorted(events[:first_exit]) == ["term 0", "term 1", "term 2"]
    assert all(proc.poll() is not None for proc in procs)
    assert tmp_path.is_dir()


def test_a_process_that_ignores_sigterm_is_killed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(service_module, "STOP_GRACE_S", 0.5)
    service, _journal, procs = _stand_ins(tmp_path, 2, leave_s=-1)
    service.stop()
    codes = [proc.returncode for proc in procs]
    assert codes == [-9, -9]
