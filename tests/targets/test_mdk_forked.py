"""``swarmgauge target mdk`` forks its components (``targets/mdk/forked.py``): each is the process a fresh interpreter
would be (its own session, stdin from /dev/null, its log as stdout and stderr, none of the launcher's descriptors,
its pid file and READY line), the Kernel comes last and routes every Worker from its first scan, a drill's kill and
restart (a fresh interpreter) works on a forked stack, and a component that fails reports in its log and exit
status as a spawned one does."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
import requests

from swarmgauge.targets.launch import child_env, launch_target
from swarmgauge.targets.mdk.common import READY_MARK, log_path
from swarmgauge.targets.mdk.stack import MDKStack
from tests import REPO_ROOT

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


def _descriptor_targets(pid: int) -> dict[int, str]:
    folder = Path(f"/proc/{pid}/fd")
    found = {}
    for entry in folder.iterdir():
        try:
            found[int(entry.name)] = os.readlink(entry)
        except OSError:
            continue
    return found


def test_forked_components_are_detached_processes_with_their_own_logs_and_the_kernel_routes_every_worker():
    with launch_target("mdk", ["--devices", "6", "--workers", "3"], wait_for=("ready", "root")) as target:
        root = Path(target.lines["root"])
        stack = MDKStack.attach(root)
        launcher_pipe = _descriptor_targets(target.pid)[1]
        for component in stack.components:
            pid = stack.pid(component)
            assert pid is not None, component
            process = psutil.Process(pid)
            assert process.ppid() == target.pid  # forked by the launcher, no interpreter in between
            assert os.getsid(pid) == pid
            fds = _descriptor_targets(pid)
            assert fds[0] == os.devnull
            assert fds[1] == fds[2] == str(log_path(root, component))
            assert launcher_pipe not in fds.values()
            assert f"{READY_MARK} {component} pid={pid}" in log_path(root, component).read_text()
        status = stack.kernel_status()
        assert sorted(w["workerId"] for w in status["workers"] if w["routable"]) == ["worker-0", "worker-1", "worker-2"]
        summary = requests.get(target.url + "/api/fleet/summary", timeout=10).json()
        assert summary["deviceCount"] == 6


def test_a_drill_kills_and_restarts_a_forked_worker_as_a_fresh_interpreter():
    with launch_target("mdk", ["--devices", "4", "--workers", "2"], wait_for=("ready", "root")) as target:
        stack = MDKStack.attach(Path(target.lines["root"]))
        old = stack.pid("worker-1")
        stack.kill("worker-1")
        stack.restart("worker-1")
        new = stack.pid("worker-1")
        assert new is not None and new != old
        assert "swarmgauge.targets.mdk.process" in " ".join(psutil.Process(new).cmdline())
        deadline, answered = time.monotonic() + 15, 0
        while time.monotonic() < deadline and answered != 4:  # the Kernel sees the old connection gone at its scan
            answered = requests.get(target.url + "/api/fleet/summary", timeout=10).json()["deviceCount"]
            time.sleep(0.1)
        assert answered == 4


def test_the_kernel_starts_after_the_workers_only_when_forked():
    forked = MDKStack(devices=2, workers=2, fork=True)
    spawned = MDKStack(devices=2, workers=2)
    try:
        assert forked.start_stages == [["mocks", "gateway"], ["worker-0", "worker-1"], ["kernel"]]
        assert spawned.start_stages == [["mocks", "kernel", "gateway"], ["worker-0", "worker-1"]]
    finally:
        forked.stop()
        spawned.stop()


def test_a_forked_component_that_fails_says_why_in_its_log_and_exit_status(tmp_path):
    """Run in a fresh single-threaded interpreter, as ``swarmgauge target mdk`` forks (never from a test worker)."""
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from swarmgauge.targets.mdk import forked
        child = forked.fork_component("nobody", Path({str(tmp_path)!r}), Path({str(tmp_path / "nobody.log")!r}))
        print(child.wait(20))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30, env=child_env(), cwd=REPO_ROOT
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"
    assert "unknown stand-in role 'nobody'" in (tmp_path / "nobody.log").read_text()


def test_components_spawn_starts_each_from_a_fresh_interpreter():
    with launch_target("mdk", ["--devices", "2", "--components", "spawn"], wait_for=("ready", "root")) as target:
        stack = MDKStack.attach(Path(target.lines["root"]))
        for component in stack.components:
            cmdline = " ".join(psutil.Process(stack.pid(component)).cmdline())
            assert f"swarmgauge.targets.mdk.process {component}" in cmdline
