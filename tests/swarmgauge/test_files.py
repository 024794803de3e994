"""Result files are written all at once and readable by their owner only."""

from __future__ import annotations

import json
import os
import stat

import pytest

from swarmgauge.files import write_atomic, write_json


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
