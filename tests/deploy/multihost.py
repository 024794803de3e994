"""A distributed run laid out as on real hosts: master, two workers and the target each in a namespace of its own.

Built on :class:`tests.deploy.netns_hosts.HostNetwork`: the target (the real sim-http app, which records every
request it serves) listens on the ``target`` host's address, the master binds the ``master`` host's address
(given explicitly with ``--master-bind-host``), and the workers on ``worker-b`` and ``worker-c`` connect to it there.
Load goes only to the target's namespace address. Every wait is bounded.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from swarmgauge.run_folders import resolve
from tests.deploy.netns_hosts import HostNetwork
from tests.listeners.sim_run import locust_command

LOCUSTFILE = Path(__file__).resolve().parents[1] / "listeners" / "workers_locustfile.py"
HOSTS = ["master", "worker-b", "worker-c", "target"]
TARGET_PORT = 8080
MASTER_PORT = 5557
READY_SECONDS = 30.0
FETCH = "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())"


def wait_for(predicate: Any, seconds: float, what: str, poll: float = 0.2) -> None:
    """Until ``predicate()`` is true, at most ``seconds``; AssertionError naming ``what`` otherwise."""
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"not within {seconds:.0f} s: {what}"
        time.sleep(poll)


class Cluster:
    """The four hosts' processes for one run; the network tears them down."""

    def __init__(self, net: HostNetwork, workdir: Path) -> None:
        self.net = net
        self.workdir = workdir
        self.run_dir = workdir / "run"
        self.target_url = f"http://{net['target'].address}:{TARGET_PORT}"
        self.master: subprocess.Popen | None = None
        self.workers: dict[str, subprocess.Popen] = {}

    def log(self, name: str) -> str:
        path = self.workdir / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def start_target(self) -> None:
        address = self.net["target"].address
        argv = [sys.executable, "-m", "tests.deploy.namespace_target", "--host", address, "--port", str(TARGET_PORT)]
        process = self.net.start(
            "target", [*argv, "--delay", "const:5", "--max-seconds", "300"], self.log_path("target")
        )
        wait_for(lambda: "ready http://" in self.log("target") or process.poll() is not None, READY_SECONDS, "target")
        assert process.poll() is None, self.log("target")[-2000:]

    def log_path(self, name: str) -> Path:
        return self.workdir / f"{name}.log"

    def start_master(self, *args: str) -> subprocess.Popen:
        self.master = self.net.start(
            "master",
            locust_command(
                LOCUSTFILE,
                "--headless",
                "--host",
                self.target_url,
                "--master",
                "--master-bind-host",
                self.net["master"].address,
                "--master-bind-port",
                str(MASTER_PORT),
                "--expect-workers",
                "2",
                "--expect-workers-max-wait",
                "60",
                "--run-dir",
                str(self.run_dir),
                *args,
            ),
            self.log_path("master"),
        )
        return self.master

    def start_worker(self, host: str, *args: str, log_name: str | None = None) -> subprocess.Popen:
        argv = ["--worker", "--master-host", self.net["master"].address, "--master-port", str(MASTER_PORT), *args]
        process = self.net.start(host, locust_command(LOCUSTFILE, *argv), self.log_path(log_name or host))
        self.workers[log_name or host] = process
        return process

    def start(
        self, plan: str, worker_args: dict[str, tuple[str, ...]] | None = None, master_args: tuple[str, ...] = ()
    ) -> None:
        """Target, master with the plan (YAML text), and a worker on each worker host."""
        plan_file = self.workdir / "plan.yaml"
        plan_file.write_text(plan)
        self.start_target()
        self.start_master("--plan", str(plan_file), "--stop-timeout", "5", *master_args)
        for host in ("worker-b", "worker-c"):
            self.start_worker(host, *(worker_args or {}).get(host, ()))

    def wait_for_start(self, seconds: float = 60.0) -> float:
        """The wall time the plan's first step began (run.json is written at the run's start), at most ``seconds``."""
        found: list[float] = []

        def began() -> bool:
            assert self.master is not None and self.master.poll() is None, self.log("master")[-3000:]
            try:
                started = json.loads((resolve(self.run_dir) / "run.json").read_text()).get("started_at")
            except (OSError, ValueError):
                return False
            found.extend([float(started)] if started else [])
            return bool(found)

        wait_for(began, seconds, "the run to start")
        return found[0]

    def wait_for_users(self, users: int, seconds: float = 60.0) -> None:
        """Until the master's plan moves to ``users`` users (its own log line: the step's real start)."""
        line = f"Shape test updating to {users} users"

        def reached() -> bool:
            assert self.master is not None and self.master.poll() is None, self.log("master")[-3000:]
            return line in self.log("master")

        wait_for(reached, seconds, f"the step of {users} users")

    def finish(self, seconds: float = 90.0) -> int:
        """The master's exit status once it ends by itself (bounded)."""
        assert self.master is not None
        return self.master.wait(timeout=seconds)

    def run_info(self) -> dict[str, Any]:
        return json.loads((resolve(self.run_dir) / "run.json").read_text())

    def records(self) -> list[dict[str, Any]]:
        """Every request the target served, read from inside the target's namespace."""
        return json.loads(self.net.run("target", [sys.executable, "-c", FETCH, f"{self.target_url}/__records"], 30))


def by_process(records: list[dict[str, Any]], process: subprocess.Popen) -> list[dict[str, Any]]:
    """The records of one worker's requests (the sim locustfile's ids start with the worker's pid)."""
    return [r for r in records if str(r["id"]).startswith(f"{process.pid}-")]
