"""Helpers for tests that run real Locust processes against a real ``targets/sim_http.py`` on loopback.

``sim_target(...)`` starts the target through the common launcher and yields a handle with its URL and its own record of every
request; ``run_local`` and ``run_distributed`` run ``locust -f LOCUSTFILE --headless`` (the latter as a master
plus workers) and return the master's completed process; ``start_distributed`` starts a master and its workers for a
test that acts on them mid-run (a signal, a kill). Every wait is bounded.
"""

from __future__ import annotations

import csv
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from swarmgauge.run_folders import resolve
from swarmgauge.targets.launch import TargetProcess, launch_target, stop_processes

ROOT = Path(__file__).resolve().parents[2]
SIM_LOCUSTFILE = Path(__file__).resolve().parent / "sim_locustfile.py"
READY_SECONDS = 20.0
RUN_SECONDS = 150.0


@dataclass
class SimTarget:
    url: str
    process: TargetProcess

    def records(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"{self.url}/__records", timeout=10) as response:
            return json.loads(response.read())


@contextmanager
def sim_target(*args: str) -> Iterator[SimTarget]:
    """``swarmgauge target sim-http --port 0 ARGS...``, stopped on exit."""
    with launch_target("sim-http", ["--port", "0", "--max-seconds", "300", *args], timeout=READY_SECONDS) as target:
        yield SimTarget(target.url, target)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _env(extra: dict[str, str] | None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra or {})
    return env


def locust_command(locustfile: Path | str, *args: str) -> list[str]:
    return [sys.executable, "-m", "locust", "-f", str(locustfile), "--only-summary", *args]


def run_local(
    host: str,
    *args: str,
    locustfile: Path | str = SIM_LOCUSTFILE,
    env: dict[str, str] | None = None,
    timeout: float = RUN_SECONDS,
) -> subprocess.CompletedProcess:
    return subprocess.run(
        locust_command(locustfile, "--headless", "--host", host, *args),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_env(env),
    )


@dataclass
class Distributed:
    """A running master and its workers (:func:`start_distributed`)."""

    master: subprocess.Popen
    workers: list[subprocess.Popen]


def _output(where: Any) -> dict[str, Any]:
    """Popen's stdout and stderr for ``where``: both piped as text, both discarded, or both into one file."""
    if where is subprocess.PIPE:
        return {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    if where is subprocess.DEVNULL:
        return {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    return {"stdout": where, "stderr": subprocess.STDOUT}


@contextmanager
def start_distributed(
    host: str,
    *args: str,
    workers: int = 2,
    locustfile: Path | str = SIM_LOCUSTFILE,
    env: dict[str, str] | None = None,
    master_output: Any = subprocess.PIPE,
    worker_output: Any = subprocess.DEVNULL,
    grace: float = 15.0,
) -> Iterator[Distributed]:
    """A master with ``--expect-workers N`` and N ``--worker`` processes on loopback, stopped on exit (``grace`` s
    each before SIGKILL; 0 kills at once). ``master_output``/``worker_output``: ``subprocess.PIPE`` (the master's
    only), ``subprocess.DEVNULL`` or an open file."""
    port = str(free_port())
    master = subprocess.Popen(
        locust_command(
            locustfile,
            "--headless",
            "--host",
            host,
            "--master",
            "--master-bind-host",
            "127.0.0.1",
            "--master-bind-port",
            port,
            "--expect-workers",
            str(workers),
            "--expect-workers-max-wait",
            "60",
            *args,
        ),
        cwd=ROOT,
        env=_env(env),
        **_output(master_output),
    )
    worker_processes = [
        subprocess.Popen(
            locust_command(locustfile, "--worker", "--master-host", "127.0.0.1", "--master-port", port),
            cwd=ROOT,
            env=_env(env),
            **_output(worker_output),
        )
        for _ in range(workers)
    ]
    try:
        yield Distributed(master, worker_processes)
    finally:
        stop_processes([master, *worker_processes], grace=grace)


def run_distributed(
    host: str,
    *args: str,
    workers: int = 2,
    locustfile: Path | str = SIM_LOCUSTFILE,
    env: dict[str, str] | None = None,
    timeout: float = RUN_SECONDS,
) -> subprocess.CompletedProcess:
    """:func:`start_distributed`, run to the master's end; the master's completed process."""
    with start_distributed(host, *args, workers=workers, locustfile=locustfile, env=env) as run:
        stdout, stderr = run.master.communicate(timeout=timeout)
    return subprocess.CompletedProcess(run.master.args, run.master.returncode, stdout, stderr)


def read_steps(run_dir: Path) -> list[dict[str, str]]:
    with open(resolve(run_dir) / "steps.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def rank_percentile(values: list[float], percentile: float) -> float:
    """The sample at HDR's rank for ``percentile`` (count rounded half up, at least 1) of the sorted values."""
    ordered = sorted(values)
    rank = max(1, int(percentile * len(ordered) / 100.0 + 0.5))
    return ordered[min(rank, len(ordered)) - 1]


def communicate_or_explain(process: subprocess.Popen, timeout: float, *logs: Path) -> tuple[str, str]:
    """``process.communicate(timeout)``; a process still running then fails the test with what it was doing (its
    stacks, by py-spy), the tail of its stderr and of each log in ``logs`` (its workers'), and is killed: a hang in
    CI otherwise leaves only the timeout."""
    try:
        return process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        py_spy = Path(sys.executable).with_name("py-spy")
        try:
            dump = subprocess.run(
                [str(py_spy), "dump", "--locals", "--pid", str(process.pid)], capture_output=True, text=True, timeout=30
            )
            stacks = dump.stdout + dump.stderr
        except (OSError, subprocess.TimeoutExpired) as error:
            stacks = f"(no py-spy dump: {error})"
        process.kill()
        _stdout, stderr = process.communicate(timeout=10)
        tails = "".join(f"\n--- {log.name} (tail) ---\n{log.read_text(errors='replace')[-3000:]}" for log in logs)
        raise AssertionError(
            f"pid {process.pid} still running {timeout:.0f} s on\n--- stacks ---\n{stacks}"
            f"\n--- stderr (tail) ---\n{(stderr or '')[-6000:]}{tails}"
        ) from None


def still_running(pids: list[int], seconds: float = 30.0) -> list[int]:
    """The processes of ``pids`` still alive (zombies count as gone) after waiting at most ``seconds`` for them."""
    deadline = time.monotonic() + seconds
    left = pids
    while left and time.monotonic() < deadline:
        left = [pid for pid in left if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"]
        time.sleep(0.2)
    return left
