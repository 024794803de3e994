"""Installed anywhere, it runs: the wheel, installed into a fresh venv outside the clone, run from a folder of its own.

The venv takes swarmgauge only from the wheel; its third-party dependencies come from the venv the suite runs in
(one ``.pth`` line), so the test needs no network beyond what ``.ci/run`` installed. Every command runs with a
temporary working directory and no ``PYTHONPATH``: a path built from the repository root, or a file read from
beside the clone, fails here.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from swarmgauge.run_folders import resolve
from tests import REPO_ROOT

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


@dataclass(frozen=True)
class FreshInstall:
    """A venv with the wheel installed, and an empty folder to run its commands from."""

    venv: Path
    cwd: Path

    @property
    def swarmgauge(self) -> str:
        return str(self.venv / "bin" / "swarmgauge")

    def env(self) -> dict[str, str]:
        """This environment without a path to the clone; unbuffered, so a target's ready line comes when printed."""
        kept = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        return kept | {"PYTHONUNBUFFERED": "1"}

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.swarmgauge, *args], cwd=self.cwd, env=self.env(), capture_output=True, text=True, timeout=timeout
        )


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> FreshInstall:
    base = tmp_path_factory.mktemp("fresh-install")
    wheels = base / "whl"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(REPO_ROOT), "--no-deps", "--no-build-isolation", "-q", "-w", wheels],
        cwd=base,
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = wheels.glob("swarmgauge-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True, capture_output=True, timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    ours = sysconfig.get_paths()
    (Path(site) / "swarmgauge_test_dependencies.pth").write_text(
        "\n".join(dict.fromkeys([ours["purelib"], ours["platlib"]])) + "\n"
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "-q", wheel],
        cwd=base,
        check=True,
        capture_output=True,
        timeout=300,
    )
    cwd = base / "elsewhere"
    cwd.mkdir()
    install = FreshInstall(venv, cwd)
    where = subprocess.run(
        [python, "-c", "import swarmgauge.locustfiles, swarmgauge.plans; print(swarmgauge.plans.__file__)"],
        cwd=cwd,
        env=install.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert where.returncode == 0, where.stderr[-2000:]
    assert Path(where.stdout.strip()).is_relative_to(venv), "swarmgauge must come from the wheel, not the clone"
    return install


def start_target(fresh: FreshInstall, args: list[str], wait_for: tuple[str, ...], timeout: float) -> dict[str, str]:
    """Start ``swarmgauge target ARGS`` from the fresh venv, read its lines until each of ``wait_for`` came, then
    stop it with SIGTERM; the lines seen, by their first word."""
    process = subprocess.Popen(
        [fresh.swarmgauge, "target", *args],
        cwd=fresh.cwd,
        env=fresh.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert process.stdout is not None
    seen: dict[str, str] = {}
    pending = b""
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and not all(key in seen for key in wait_for):
            if not selector.select(timeout=min(1.0, max(0.0, deadline - time.monotonic()))):
                if process.poll() is not None:
                    break
                continue
            chunk = os.read(process.stdout.fileno(), 65536)  # raw: a buffered readline would hide the next lines
            if not chunk:
                break
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                key, _, value = line.decode().strip().partition(" ")
                seen.setdefault(key, value)
    finally:
        selector.close()
        process.send_signal(signal.SIGTERM)
        try:
            _, err = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            _, err = process.communicate(timeout=30)
    stderr = err.decode(errors="replace")
    assert all(key in seen for key in wait_for), f"{args}: saw {seen}; stderr: {stderr[-2000:]}"
    return seen


def test_demo_list_names_the_pages_from_the_installed_plans(fresh: FreshInstall):
    result = fresh.run("demo", "--list")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "demarkus" in result.stdout and "mdk" in result.stdout


def test_the_quick_demo_runs_the_installed_locustfile_into_its_run_folder(fresh: FreshInstall):
    result = fresh.run("demo", "--run-dir", "demo", "--steps", "1,2", "--step-time", "2", "--warmup", "0", timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    run = resolve(fresh.cwd / "demo")
    assert run.is_relative_to(fresh.cwd)
    for name in ("steps.csv", "run.json", "report.md"):
        assert (run / name).is_file(), name


def test_target_mark_starts_and_stops(fresh: FreshInstall):
    seen = start_target(fresh, ["mark", "--port", "0"], ("ready",), timeout=60)
    assert seen["ready"].startswith("mark://127.0.0.1:")


def test_target_mdk_starts_its_processes_and_stops(fresh: FreshInstall):
    seen = start_target(fresh, ["mdk", "--devices", "2", "--workers", "1"], ("ready", "root"), timeout=120)
    assert seen["ready"].startswith("http://127.0.0.1:")


def test_target_kneo_starts_the_real_service_and_stops(fresh: FreshInstall):
    from swarmgauge.targets.kneo import NoSuitablePython, find_python

    try:
        find_python()
    except NoSuitablePython as exc:
        pytest.skip(f"kneo-serv needs a Python >= 3.12: {exc}")
    seen = start_target(fresh, ["kneo", "--store", "sqlite", "--max-seconds", "120"], ("ready", "pids"), timeout=600)
    assert seen["ready"].startswith("http://127.0.0.1:")
