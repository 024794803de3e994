"""Packaging as the ecosystem expects: the licence text and its SPDX expression, one version, ``--version``,
``python -m swarmgauge``, ``py.typed`` in the wheel, a changelog with an Unreleased section."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

import swarmgauge
from swarmgauge.cli import main

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_version_prints_the_one_version_of_pyproject(capsys: pytest.CaptureFixture[str]):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"swarmgauge {PYPROJECT['project']['version']}\n"
    assert swarmgauge.__version__ == PYPROJECT["project"]["version"]


def test_the_version_is_written_once():
    written = [
        path
        for path in (*ROOT.glob("swarmgauge/**/*.py"), ROOT / "Dockerfile")
        if re.search(r"""(__version__|\bversion)\s*=\s*["']\d+\.\d+""", path.read_text())
    ]
    assert written == []


def test_python_dash_m_swarmgauge_is_the_command():
    result = subprocess.run(
        [sys.executable, "-m", "swarmgauge", "--help"], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: swarmgauge")
    version = subprocess.run(
        [sys.executable, "-m", "swarmgauge", "--version"], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert version.stdout.strip() == f"swarmgauge {PYPROJECT['project']['version']}"


def test_the_licence_is_an_spdx_expression_with_its_text():
    project = PYPROJECT["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    assert "Apache License" in (ROOT / "LICENSE").read_text()
    assert not any(c.startswith("License ::") for c in project["classifiers"])  # PEP 639 deprecates them
    floor = re.search(r"setuptools>=([\d.]+)", " ".join(PYPROJECT["build-system"]["requires"]))
    assert floor is not None and tuple(int(p) for p in floor.group(1).split(".")) >= (77, 0, 3)


def test_the_changelog_keeps_an_unreleased_section():
    text = (ROOT / "CHANGELOG.md").read_text()
    assert "## [Unreleased]" in text
    assert f"## [{PYPROJECT['project']['version']}]" in text


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The project built as a wheel into a temporary folder, with pip's verbose build log."""
    folder = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation", "-v", "-w", str(folder)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    (built,) = folder.glob("swarmgauge-*.whl")
    return built, build.stdout + build.stderr


@pytest.mark.integration
def test_the_wheel_ships_py_typed_and_the_licence(wheel: tuple[Path, str]):
    path, _log = wheel
    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        text = archive.read(metadata).decode()
    assert "swarmgauge/py.typed" in names
    assert "swarmgauge/__main__.py" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "License-Expression: Apache-2.0" in text
    assert "Classifier: Typing :: Typed" in text


@pytest.mark.integration
def test_the_build_does_not_warn_about_the_licence(wheel: tuple[Path, str]):
    _path, log = wheel
    warned = [line for line in log.splitlines() if "license" in line.lower() and "deprecat" in line.lower()]
    assert warned == []
