"""Helpers for the web UI tests: a Locust process in web UI mode (local or master + workers) on loopback, the
index page's template arguments, and Playwright driving Debian's Chromium (never a downloaded browser).

Every wait is bounded; every process started is stopped on exit.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from swarmgauge.targets.launch import stop_processes
from tests.listeners.sim_run import ROOT, _env, free_port, locust_command

CHROMIUM = "/usr/bin/chromium"
READY_SECONDS = 60.0
POLL_SECONDS = 0.2
PORT_ATTEMPTS = 3
PORT_TAKEN = "Address already in use"  # the free port was taken between picking it and binding it


@dataclass
class WebLocust:
    url: str
    process: subprocess.Popen
    log: Path
    workers: list[subprocess.Popen] = field(default_factory=list)

    def get(self, path: str, timeout: float = 30.0) -> bytes:
        with urllib.request.urlopen(self.url + path, timeout=timeout) as answer:
            return answer.read()

    def get_json(self, path: str) -> Any:
        return json.loads(self.get(path))

    def template_args(self) -> dict[str, Any]:
        page = self.get("/").decode()
        start = page.index("templateArgs = ") + len("templateArgs = ")
        return json.JSONDecoder().raw_decode(page[start:])[0]

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def wait_until(condition: Any, seconds: float, what: str) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(POLL_SECONDS)
    raise AssertionError(f"timed out after {seconds} s waiting for {what}")


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/", timeout=2):
            return True
    except (urllib.error.URLError, OSError):
        return False


def _start_master(
    locustfile: Path | str, args: tuple[str, ...], workers: int, log: Path, env: dict[str, str] | None
) -> tuple[WebLocust, int]:
    """Start the web UI process on fresh free ports; a port another process took meanwhile is picked again."""
    for attempt in range(1, PORT_ATTEMPTS + 1):
        port, master_port = free_port(), free_port()
        master_args: list[str] = ["--web-port", str(port)]
        if workers:
            master_args += ["--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(master_port)]
        with open(log, "w") as handle:
            process = subprocess.Popen(
                locust_command(locustfile, *master_args, *args),
                cwd=ROOT,
                stdout=handle,
                stderr=subprocess.STDOUT,
                text=True,
                env=_env(env),
            )
        web = WebLocust(f"http://127.0.0.1:{port}", process, log)
        try:
            wait_until(lambda web=web: web.process.poll() is not None or _answers(web.url), READY_SECONDS, "the web UI")
        except AssertionError:
            stop_processes([process], grace=20)
            raise
        if process.poll() is None or PORT_TAKEN not in web.output() or attempt == PORT_ATTEMPTS:
            return web, master_port
    raise AssertionError("unreachable")


@contextmanager
def web_locust(
    locustfile: Path | str, *args: str, workers: int = 0, log_dir: Path, env: dict[str, str] | None = None
) -> Iterator[WebLocust]:
    """``locust -f LOCUSTFILE ARGS`` with its web UI on a free loopback port (a master when ``workers``)."""
    web, master_port = _start_master(locustfile, args, workers, log_dir / "locust.log", env)
    web.workers = [
        subprocess.Popen(
            locust_command(locustfile, "--worker", "--master-host", "127.0.0.1", "--master-port", str(master_port)),
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=_env(env),
        )
        for _ in range(workers)
    ]
    try:
        assert web.process.poll() is None, web.output()[-3000:]
        if workers:
            wait_until(
                lambda: web.template_args().get("worker_count", 0) >= workers, READY_SECONDS, f"{workers} workers"
            )
        yield web
    finally:
        stop_processes([web.process, *web.workers], grace=20)


def chromium_or_skip() -> str:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Debian's chromium is not installed at {CHROMIUM}")
    if shutil.which("node") is None and not _playwright_driver():
        pytest.skip("the playwright package's driver is missing")
    return CHROMIUM


def _playwright_driver() -> bool:
    try:
        import playwright  # noqa: F401
    except ImportError:
        return False
    return True


@contextmanager
def browser_page() -> Iterator[Any]:
    """A Playwright page in headless Debian Chromium."""
    executable = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable, headless=True, args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(30_000)
            yield page
        finally:
            browser.close()


def run_folders(parent: Path) -> list[Path]:
    """The run folders under a ``--run-dir`` parent, oldest first (``latest`` left out)."""
    if not parent.is_dir():
        return []
    return sorted(p for p in parent.iterdir() if p.is_dir() and not p.is_symlink())
