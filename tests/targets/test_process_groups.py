"""Embedded targets run in a session of their own (issue 33, point 6): a terminal's Ctrl-C, sent to the whole
foreground process group, reaches Locust only; Locust stops its users, then the target, and records no failure that
did not happen."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from swarmgauge.targets.launch import child_env, launch_target, stop_processes
from tests.listeners.sim_run import ROOT, locust_command, still_running

READS = ROOT / "locustfiles" / "demarkus_reads.py"
WAIT_SECONDS = 90.0
REQUESTS_BEFORE_CTRL_C = 30


def test_a_launched_target_leads_a_session_of_its_own():
    with launch_target("sim-http", ["--port", "0", "--max-seconds", "60"], timeout=30) as target:
        assert os.getsid(target.pid) == target.pid
        assert os.getpgid(target.pid) != os.getpgid(0)


def _aggregated(csv_prefix: Path) -> tuple[int, int]:
    """(requests, failures) of the Aggregated row of Locust's --csv stats, (0, 0) before the first write."""
    path = Path(f"{csv_prefix}_stats.csv")
    if not path.is_file():
        return 0, 0
    with path.open() as handle:
        for row in csv.DictReader(handle):
            if row.get("Name") == "Aggregated":
                return int(row["Request Count"]), int(row["Failure Count"])
    return 0, 0


@pytest.mark.integration
def test_ctrl_c_to_the_foreground_group_records_no_failure(tmp_path):
    csv_prefix = tmp_path / "locust"
    with (tmp_path / "out.log").open("w") as out:
        process = subprocess.Popen(
            locust_command(
                READS,
                "FetchUser",
                "--headless",
                "-u",
                "4",
                "-r",
                "4",
                "-t",
                "120s",
                "--run-dir",
                str(tmp_path / "run"),
                "--csv",
                str(csv_prefix),
            ),
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group: the terminal's foreground group, as a shell makes it
        )
        try:
            deadline = time.monotonic() + WAIT_SECONDS
            while _aggregated(csv_prefix)[0] < REQUESTS_BEFORE_CTRL_C and time.monotonic() < deadline:
                assert process.poll() is None, (tmp_path / "out.log").read_text()[-3000:]
                time.sleep(0.5)
            os.killpg(process.pid, signal.SIGINT)  # what a terminal does on Ctrl-C
            process.wait(timeout=WAIT_SECONDS)
        finally:
            stop_processes([process], grace=5)
    log = (tmp_path / "out.log").read_text()
    requests, failures = _aggregated(csv_prefix)
    assert requests >= REQUESTS_BEFORE_CTRL_C, log[-3000:]
    assert failures == 0, log[-3000:]
    assert process.returncode == 0, log[-3000:]


KNEO_PARENT = """
import sys, time
from swarmgauge.targets.kneo.service import KneoService
service = KneoService(store="sqlite", processes=2).start()
print(" ".join(str(pid) for pid in [*service.pids, service.fork_parent.pid]), flush=True)
time.sleep(120)
"""

MDK_PARENT = """
import sys, time
from swarmgauge.targets.mdk.stack import MDKStack
stack = MDKStack(devices=2, workers=1).start()
print(" ".join(str(stack.pid(name)) for name in stack.components), flush=True)
time.sleep(120)
"""


def _words_of_a_killed_parent(script: str) -> list[str]:
    """Run ``script``, read the line it prints once its children are up (their pids running, checked), SIGKILL it;
    the line's words."""
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=child_env())
    try:
        words = (parent.stdout.readline() if parent.stdout else "").split()
        assert all(psutil.pid_exists(int(word)) for word in words if word.isdigit()), "a child was gone before the kill"
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(10)
        return words
    finally:
        stop_processes([parent], grace=0)


@pytest.mark.integration
def test_kneo_serv_exits_when_the_process_that_started_it_is_killed(kneo_venv):
    # each kneo-serv leads a session of its own (a terminal's Ctrl-C must not reach it): only the parent-death
    # signal ends it when a SIGKILLed locust cannot; it was left serving, its port and store held, for an hour. The
    # processes are forked from the fork parent: it dies with the locust, and they die with it
    pids = [int(word) for word in _words_of_a_killed_parent(KNEO_PARENT)]
    assert len(pids) == 3, "kneo-serv or its fork parent did not start"
    assert still_running(pids, 10) == [], "kneo-serv still running after its parent was killed"


@pytest.mark.integration
def test_the_mdk_stand_in_exits_when_the_process_that_started_it_is_killed():
    pids = [int(word) for word in _words_of_a_killed_parent(MDK_PARENT)]
    assert len(pids) >= 4, "the stand-in did not start"
    assert still_running(pids, 10) == [], "stand-in processes still running after their parent was killed"


PG_PARENT = """
import time
from swarmgauge.targets.postgres import PostgresCluster
cluster = PostgresCluster().start()
with open(cluster.data_dir / "postmaster.pid") as handle:
    print(handle.readline().strip(), cluster.root, flush=True)
time.sleep(120)
"""


@pytest.mark.integration
def test_a_throwaway_postgresql_ends_with_its_dir_when_its_owner_is_killed():
    # pg_ctl detaches the postmaster: a watchdog with the parent-death signal ends it and removes its temp dir
    words = _words_of_a_killed_parent(PG_PARENT)
    assert len(words) == 2, "the cluster did not start"
    postmaster, root = int(words[0]), Path(words[1])
    assert still_running([postmaster], 20) == [], "the postmaster outlived its owner"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and root.exists():  # removed once the postmaster is gone
        time.sleep(0.2)
    assert not root.exists(), "the cluster's temp dir outlived its owner"
