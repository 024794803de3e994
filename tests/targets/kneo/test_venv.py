"""Which interpreters the kneo-serv venv is built from, in which order (no interpreter is run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarmgauge.targets.kneo import venv


def _pyenv(tmp_path: Path) -> Path:
    root = tmp_path / "pyenv"
    for version in ("3.12.1", "3.13.0"):
        (root / "versions" / version / "bin").mkdir(parents=True)
        (root / "versions" / version / "bin" / "python3").touch()
    (root / "shims").mkdir()
    return root


def test_pyenv_shims_come_after_the_versions_they_lead_to(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _pyenv(tmp_path)
    monkeypatch.delenv("SWARMGAUGE_KNEO_PYTHON", raising=False)
    monkeypatch.setattr(venv, "_pyenv_roots", lambda: [str(root)])
    monkeypatch.setattr(venv.shutil, "which", lambda name: str(root / "shims" / name))

    found = venv.candidates()

    assert found == [
        str(root / "versions/3.12.1/bin/python3"),
        str(root / "versions/3.13.0/bin/python3"),
        str(root / "shims/python3.12"),
        str(root / "shims/python3.13"),
        str(root / "shims/python3.14"),
    ]


def test_an_interpreter_on_path_that_is_no_shim_stays_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _pyenv(tmp_path)
    monkeypatch.setenv("SWARMGAUGE_KNEO_PYTHON", "/opt/py/bin/python3.12")
    monkeypatch.setattr(venv, "_pyenv_roots", lambda: [str(root)])
    monkeypatch.setattr(venv.shutil, "which", lambda name: "/usr/bin/python3.12" if name == "python3.12" else None)

    found = venv.candidates("/explicit/python3")

    assert found[:3] == ["/explicit/python3", "/opt/py/bin/python3.12", "/usr/bin/python3.12"]
    assert found[3:] == [str(root / "versions/3.12.1/bin/python3"), str(root / "versions/3.13.0/bin/python3")]
