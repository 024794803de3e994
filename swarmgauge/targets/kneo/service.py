"""Run the real kneo-serv: N ``kneo service serve`` processes on loopback ports, one store, a provider-free spec.

The working directory holds the echo spec (spec paths are confined to the cwd) and, for SQLite, the store at
``.kneo/kneo_runs.sqlite``. Several processes share one store (horizontal scale): one PostgreSQL database, or one
SQLite file, each process with its own connection, where SQLite's file lock lets one writer at a time through (what a
user scaling kneo-serv on SQLite gets: the page's single writer). The first process is started and ready before the
others so they do not race the schema migrations. Processes can be killed and
started again on the same port, for drills. Stdlib only.

The processes are forked from a fork parent (``fork_parent.py``) that imported kneo-serv once, about 0.8 s of each
process's 1 s boot; each is still the real kneo-serv, its console script's code on the same uvicorn with the same
options (gunicorn's ``--preload`` does the same). A caller with other start-up to do launches it first
(:func:`launch_fork_parent`) so the imports overlap it. Where it cannot start, each process is started as
``kneo service serve`` (``start_method="exec"``), with one log line that says why.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from swarmgauge.errors import SwarmgaugeError, UsageError
from swarmgauge.protocols.kneo import METRIC_NAMES
from swarmgauge.targets.kneo.fork_parent import ForkedProcess, ForkParent, ForkParentUnavailable
from swarmgauge.targets.kneo.fork_template import TEMPLATE_VARIABLE, ForkTemplate
from swarmgauge.targets.kneo.venv import ensure_venv
from swarmgauge.targets.launch import die_with_parent
from swarmgauge.targets.postgres import free_port, redact_dsn

log = logging.getLogger(__name__)

ECHO_SPEC_NAME = "echo.yaml"
ECHO_SPEC = """\
version: v1
agent:
  name: echo
  model: {provider: dummy, name: dummy}
  strategy: simple
"""
SQLITE_RELATIVE = Path(".kneo") / "kneo_runs.sqlite"


IDLE_POLL_VARIABLE = "KNEO_SERV_WORKER_IDLE_POLL_SECONDS"
#: the idle poll this harness runs at unless told: kneo-serv's default (1 s) would add up to a second to every queued
#: run of a quiet service
DEFAULT_IDLE_POLL_S = 0.2
#: how long the stopping processes have, together, for their own exit before SIGKILL
STOP_GRACE_S = 15.0


def idle_poll_env(seconds: float) -> dict[str, str]:
    """The environment of a kneo-serv whose idle workers look at the queue every ``seconds`` (nothing wakes them on
    dispatch: a run submitted to an idle service waits for the next poll)."""
    if not seconds > 0:
        raise UsageError(f"--kneo-embedded-idle-poll must be above 0 seconds, not {seconds:g}")
    return {IDLE_POLL_VARIABLE: f"{seconds:g}"}


#: how often a starting process's ``/readyz`` is asked: a short poll, so a ready process waits for no fixed sleep
READY_POLL_S = 0.05


START_METHODS = ("fork", "exec")


class KneoStartError(SwarmgaugeError):
    """A kneo-serv process exited or never became ready; the message carries its log's tail."""


def _inherited_env() -> dict[str, str]:
    """Our environment without kneo-serv's own settings: the fork parent's, and the base of every process's."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("KNEO_SERV_")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def launch_fork_parent(python: str | None = None) -> ForkParent:
    """Start importing kneo-serv now, for a :class:`KneoService` started later (its ``fork_parent``): a caller that
    starts PostgreSQL first launches this before it, so the two start-ups overlap. Failures show at the first fork,
    where the service falls back to ``kneo service serve``. With :data:`TEMPLATE_VARIABLE` set (a template shared by
    many runs, ``fork_template.py``) the fork parent is that template's clone, kneo-serv imported already."""
    venv_python = ensure_venv(python)
    shared = os.environ.get(TEMPLATE_VARIABLE)
    if shared:
        try:
            return ForkParent.connect(venv_python, Path(shared))
        except OSError as exc:
            log.warning(
                "kneo-serv: no shared fork parent at %s (%s): this run imports kneo-serv for itself", shared, exc
            )
    return ForkParent.launch(venv_python, _inherited_env())


def launch_fork_template(python: str | None = None) -> ForkTemplate:
    """Start a fork parent shared by the runs started with its :meth:`ForkTemplate.environment` (the demo's kneo
    page): kneo-serv imported once for all of them rather than once a run."""
    return ForkTemplate.launch(ensure_venv(python), _inherited_env())


@dataclass
class KneoService:
    """Settings of one kneo-serv deployment; ``start()`` launches it, ``stop()`` ends and cleans it up."""

    store: str = "sqlite"
    dsn: str | None = None
    processes: int = 1
    worker_concurrency: int = 1
    max_queue_depth: int = 0
    api_keys: list[str] = field(default_factory=list)
    admin_key: str | None = None
    python: str | None = None
    workdir: Path | None = None
    host: str = "127.0.0.1"
    ports: list[int] = field(default_factory=list)
    extra_env: dict[str, str] = field(default_factory=dict)
    ready_timeout: float = 60.0
    start_method: str = "fork"
    fork_parent: ForkParent | None = None

    def __post_init__(self) -> None:
        if self.store not in ("sqlite", "postgres"):
            raise UsageError(f"--store must be sqlite or postgres, not {self.store!r}")
        if self.store == "postgres" and not self.dsn:
            raise UsageError("--store postgres needs --dsn postgresql://...")
        if self.host not in ("127.0.0.1", "::1", "localhost"):
            raise UsageError(f"kneo-serv binds loopback only, not {self.host!r}")
        if self.start_method not in START_METHODS:
            raise UsageError(f"start_method must be fork or exec, not {self.start_method!r}")
        self._procs: list[subprocess.Popen | ForkedProcess | None] = []
        self._forking = True
        self._own_workdir = self.workdir is None
        self._venv_python: Path | None = None

    @property
    def urls(self) -> list[str]:
        return [f"http://{self.host}:{port}" for port in self.ports]

    @property
    def url(self) -> str:
        return self.urls[0]

    @property
    def pids(self) -> list[int]:
        return [proc.pid for proc in self._procs if proc is not None and proc.poll() is None]

    def adopt(self, proc: subprocess.Popen) -> None:
        """Take a process started elsewhere as one of the service's: :meth:`stop` ends it with the others."""
        self._procs.append(proc)

    @property
    def sqlite_path(self) -> Path | None:
        return self.workdir / SQLITE_RELATIVE if self.store == "sqlite" and self.workdir else None

    @property
    def store_locator(self) -> str:
        """What reconciliation takes as ``--kneo-store``: the DSN or the SQLite file's path."""
        return cast(str, self.dsn) if self.store == "postgres" else str(self.sqlite_path)  # __post_init__ checks dsn

    def _env(self) -> dict[str, str]:
        env = _inherited_env()
        env.update(
            {
                "KNEO_SERV_WORKER_CONCURRENCY": str(self.worker_concurrency),
                "KNEO_SERV_MAX_QUEUE_DEPTH": str(self.max_queue_depth),
                IDLE_POLL_VARIABLE: f"{DEFAULT_IDLE_POLL_S:g}",
            }
        )
        if self.store == "postgres":
            env["KNEO_SERV_DATABASE_URL"] = self.dsn or ""
        if self.api_keys or self.admin_key:
            env["KNEO_SERV_AUTH_ENABLED"] = "true"
            env["KNEO_SERV_API_KEYS"] = ";".join(self.api_keys)
            if self.admin_key:
                env["KNEO_SERV_ADMIN_API_KEY"] = self.admin_key
        env.update(self.extra_env)
        return env

    def log_path(self, index: int) -> Path:
        assert self.workdir is not None
        return self.workdir / f"kneo-serv-{index}.log"

    def pid_path(self, index: int) -> Path:
        """A pid file per process, rewritten on restart, so a sampler follows the process across drills."""
        assert self.workdir is not None
        return self.workdir / f"kneo-serv-{index}.pid"

    def gauge_sources(self) -> list[str]:
        """``--sample`` specs for the service's own gauges (``/metrics``) and each process's RSS."""
        specs = [f"prom:{url}/metrics#{','.join(METRIC_NAMES)}" for url in self.urls]
        return specs + [f"psutil:pidfile={self.pid_path(index)}" for index in range(self.processes)]

    def start(self) -> KneoService:
        if self.start_method == "fork" and self.fork_parent is None:
            self.fork_parent = launch_fork_parent(self.python)
        self._venv_python = self.fork_parent.venv_python if self.fork_parent else ensure_venv(self.python)
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="swarmgauge-kneo-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        spec = self.workdir / ECHO_SPEC_NAME
        if not spec.exists():
            spec.write_text(ECHO_SPEC)
        while len(self.ports) < self.processes:
            self.ports.append(free_port(self.host))
        self._procs = [None] * self.processes
        try:
            self.start_process(0)  # alone first: it runs the schema migrations the others would race
            for index in range(1, self.processes):
                self.spawn_process(index)
            for index in range(1, self.processes):
                self._wait_ready(index)
        except BaseException:
            self.stop()
            raise
        log.info("kneo-serv ready at %s (store %s)", ", ".join(self.urls), redact_dsn(self.store_locator))
        return self

    def start_process(self, index: int) -> None:
        """Start (or restart) process ``index`` on its port and wait until ``/readyz`` answers ok."""
        self.spawn_process(index)
        self._wait_ready(index)

    def spawn_process(self, index: int) -> None:
        """Start (or restart) process ``index`` on its port without waiting: the processes after the first boot
        side by side (8 booting one after another took about 10 s of a demo workload's start-up, 1.2 s each)."""
        assert self._venv_python is not None and self.workdir is not None
        cmd = [
            str(self._venv_python.parent / "kneo"),
            "service",
            "serve",
            "--host",
            self.host,
            "--port",
            str(self.ports[index]),
        ]
        proc: subprocess.Popen | ForkedProcess | None = None
        if self.fork_parent is not None and self._forking:
            try:
                proc = self.fork_parent.spawn(cmd, cwd=self.workdir, env=self._env(), log=self.log_path(index))
            except ForkParentUnavailable as exc:
                # kept until stop(): the processes it forked already die with it
                self._forking = False
                log.warning("kneo-serv: no fork parent (%s): each process starts as `kneo service serve`", exc)
        if proc is None:
            proc = self._exec(cmd, index)
        self._procs[index] = proc
        self.pid_path(index).write_text(f"{proc.pid}\n")  # the forked child's own pid: the sampler follows it

    def _close_fork_parent(self) -> None:
        if self.fork_parent is not None:
            self.fork_parent.close()
            self.fork_parent = None

    def _exec(self, cmd: list[str], index: int) -> subprocess.Popen:
        """``kneo service serve`` in an interpreter of its own: the path without a fork parent."""
        assert self.workdir is not None
        with open(self.log_path(index), "ab") as log_file:
            return subprocess.Popen(
                cmd,
                cwd=self.workdir,
                env=self._env(),
                stdout=log_file,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent(os.getpid()),  # a SIGKILLed locust left kneo-serv serving (its own session)
                start_new_session=True,
            )

    def _log_tail(self, index: int) -> str:
        try:
            lines = self.log_path(index).read_text(errors="replace").strip().splitlines()[-8:]
        except OSError:
            return ""
        return redact_dsn(" | ".join(lines))

    def _wait_ready(self, index: int) -> None:
        proc = self._procs[index]
        assert proc is not None
        url = f"{self.urls[index]}/readyz"
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise KneoStartError(f"kneo-serv exited with {proc.returncode}: {self._log_tail(index)}")
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError, ValueError):
                pass
            time.sleep(READY_POLL_S)
        raise KneoStartError(f"kneo-serv not ready within {self.ready_timeout:.0f}s: {self._log_tail(index)}")

    def kill_process(self, index: int = 0) -> None:
        """SIGKILL process ``index`` (a drill: the service dies mid-run)."""
        proc = self._procs[index]
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def _stop_processes(self, indexes: list[int]) -> None:
        """SIGTERM to every one first, then wait for each (SIGKILL after 15 s): the processes stop side by side, so
        a service of 8 processes takes one process's stop at a run's end, not 8 one after the other."""
        stopping = []
        for index in indexes:
            proc = self._procs[index]
            if proc is None or proc.poll() is not None:
                continue
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            stopping.append(proc)
        deadline = time.monotonic() + STOP_GRACE_S
        for proc in stopping:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)

    def stop(self, *, remove_workdir: bool | None = None) -> None:
        self._stop_processes(list(range(len(self._procs))))
        self._close_fork_parent()
        remove = self._own_workdir if remove_workdir is None else remove_workdir
        if remove and self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> KneoService:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()
