"""Result files are written all at once and readable by their owner only."""

from __future__ import annotations

import json
import os
import stat

import pytest

from swarmgauge.files import make_private, make_private_folder, write_atomic, write_json


def test_write_atomic_replaces_the_whole_file(tmp_path):
    target = tmp_path / "deep" / "run.json"
    write_atomic(target, "first")
    write_atomic(target, b"second")
    assert target.read_text() == "second"
    assert sorted(p.name for p in target.parent.iterdir()) == ["run.json"]
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600  # a DSN with its password can go this way


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "steps.csv"
    write_atomic(target, "complete old content\n")

    def disk_full(_fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError):
        write_atomic(target, "half of the new cont")
    assert target.read_text() == "complete old content\n"
    assert [p.name for p in tmp_path.iterdir()] == ["steps.csv"]


def test_write_json_writes_the_figures_and_says_where(tmp_path):
    out = write_json(tmp_path / "results" / "bench.json", {"ratio": 0.72, "at": tmp_path})
    assert out == tmp_path / "results" / "bench.json"
    assert json.loads(out.read_text()) == {"ratio": 0.72, "at": str(tmp_path)}


@pytest.fixture
def umask_022():
    """The process's umask at 022 for one test (the common default), restored after."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def test_a_private_file_is_0600_and_a_shared_one_takes_the_umask(tmp_path, umask_022):
    write_atomic(tmp_path / "private.csv", "a\n")
    write_atomic(tmp_path / "shared.csv", "a\n", private=False)
    assert stat.S_IMODE(os.stat(tmp_path / "private.csv").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "shared.csv").st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["private.csv", "shared.csv"]


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o277])
def test_a_private_folder_is_0700_whatever_the_umask(tmp_path, umask):
    previous = os.umask(umask)
    try:
        folder = make_private_folder(tmp_path / "run")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    with pytest.raises(FileExistsError):
        make_private_folder(folder)


def test_make_private_sets_a_file_written_elsewhere_to_0600(tmp_path, umask_022):
    (tmp_path / "locust_stats.csv").write_text("Type,Name\n")
    make_private(tmp_path / "locust_stats.csv")
    assert stat.S_IMODE(os.stat(tmp_path / "locust_stats.csv").st_mode) == 0o600
