"""One import namespace: a wheel installs ``swarmgauge`` as its only top-level package, every package folder is in
it, and a project locustfile runs from a folder that has its own ``users/``, ``reports/`` and ``users.py``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import swarmgauge
from swarmgauge.run_folders import resolve
from swarmgauge.targets.launch import launch_target

REPO_ROOT = Path(__file__).resolve().parents[2]
#: The sub-packages a wheel installs under swarmgauge/ (locustfiles from the repository's top-level folder).
SUBPACKAGES = {"core", "protocols", "users", "shapes", "listeners", "reports", "targets", "locustfiles"}

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]


def package_name(folder: Path) -> str:
    relative = folder.relative_to(REPO_ROOT).parts
    return ".".join(relative if relative[0] == "swarmgauge" else ("swarmgauge", *relative))


def test_the_only_mapped_folder_is_the_scenarios():
    """The code lives where it imports from; setuptools maps the top-level locustfiles/ and nothing else."""
    assert SETUPTOOLS["package-dir"] == {"swarmgauge.locustfiles": "locustfiles"}
    assert not hasattr(swarmgauge, "MAPPED_PACKAGES")


def test_every_package_folder_is_listed_for_the_wheel():
    """``packages`` is an explicit list: a new sub-package missing from it would silently be left out of a wheel."""
    folders = [
        init.parent
        for top in ("swarmgauge", "locustfiles")
        for init in (REPO_ROOT / top).rglob("__init__.py")
        if ".venv" not in init.parts
    ]
    assert sorted({package_name(folder) for folder in folders} - set(SETUPTOOLS["packages"])) == []


def test_a_checkout_imports_the_folders_under_swarmgauge():
    import swarmgauge.locustfiles
    import swarmgauge.users

    assert Path(swarmgauge.users.__file__).resolve() == (REPO_ROOT / "swarmgauge" / "users" / "__init__.py").resolve()
    assert Path(swarmgauge.locustfiles.__file__).resolve() == (REPO_ROOT / "locustfiles" / "__init__.py").resolve()
    assert "users" not in sys.modules or not hasattr(sys.modules["users"], "mark_user")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project built as a wheel (no dependencies, this venv's setuptools) and installed into a folder."""
    wheels = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(REPO_ROOT),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheels),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    target = tmp_path_factory.mktemp("site")
    (wheel,) = wheels.glob("swarmgauge-*.whl")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return target


@pytest.mark.integration
def test_the_wheel_installs_swarmgauge_as_its_only_top_level_package(installed: Path):
    (wheel_info,) = installed.glob("swarmgauge-*.dist-info")
    top_level = {p.name for p in installed.iterdir() if p.name != "bin"} - {wheel_info.name}
    assert top_level == {"swarmgauge"}
    assert {p.name for p in (installed / "swarmgauge").iterdir() if p.is_dir()} >= SUBPACKAGES
    record = [line for line in (wheel_info / "RECORD").read_text().splitlines() if not line.startswith("../")]
    assert {line.split("/", 1)[0] for line in record} == {"swarmgauge", wheel_info.name}  # "../" is bin/


@pytest.mark.integration
def test_a_project_locustfile_runs_beside_the_users_own_users_and_reports(installed: Path, tmp_path: Path):
    project = tmp_path / "project"
    for package in ("users", "reports"):
        (project / package).mkdir(parents=True)
        (project / package / "__init__.py").write_text(f'raise ImportError("the project\'s own {package} shadowed")\n')
    (project / "users.py").write_text('raise ImportError("the project\'s users.py shadowed")\n')
    shutil.copy(REPO_ROOT / "locustfiles" / "http_ramp.py", project / "locustfile.py")
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PYTHONPATH": str(installed)}
    where = subprocess.run(
        [sys.executable, "-c", "import swarmgauge.users, swarmgauge.core; print(swarmgauge.users.__file__)"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert where.stdout.strip().startswith(str(installed))
    with launch_target("sim-http", ["--port", "0", "--max-seconds", "120"]) as service:
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "locust",
                "-f",
                "locustfile.py",
                "--headless",
                "--only-summary",
                "--host",
                service.url,
                "--steps",
                "1",
                "--step-time",
                "2",
                "--run-dir",
                "run",
            ],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert run.returncode == 0, run.stderr[-3000:]
    assert (resolve(project / "run") / "steps.csv").is_file()
