"""The zombie count is the kernel's: a child that exited and was never waited for, and nothing else."""

from __future__ import annotations

import subprocess
import sys
import time

from swarmgauge.targets.brain_zombies import ZombieSpawner, count_zombies


def _until(predicate, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_an_exited_child_never_waited_for_counts_and_a_live_one_does_not():
    # a parent of its own: this test process runs gevent (Locust), whose child watcher reaps every child
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time\n"
            "subprocess.Popen([sys.executable, '-c', ''])\n"
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
            "time.sleep(30)",
        ]
    )
    try:
        assert _until(lambda: count_zombies(parent.pid) == 1)
        time.sleep(0.3)
        assert count_zombies(parent.pid) == 1  # the sleeping child is not counted
    finally:
        parent.kill()
        parent.wait()


def test_the_spawner_stops_at_its_limit():
    spawner = ZombieSpawner(2)
    for _ in range(4):
        spawner.spawn()
    try:
        assert len(spawner.children) == 2
    finally:
        for child in spawner.children:
            child.wait()
