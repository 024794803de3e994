"""benchmarks/kneo_c1_gap.py: a tiny run against the real kneo-serv on SQLite writes every client's split and the
shape figure; bad options are refused in one line. Structure and counts only, never a figure."""

from __future__ import annotations

import json

import pytest

from benchmarks import kneo_c1_gap


@pytest.mark.parametrize(
    "argv", [["--clients", "curl"], ["--stores", "mysql"], ["--runs", "0"], ["--rounds", "99"], ["--concurrency", "0"]]
)
def test_a_bad_option_is_refused_in_one_line(argv, tmp_path, capsys):
    assert kneo_c1_gap.main([*argv, "--out", str(tmp_path / "x.json")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert not (tmp_path / "x.json").exists()


@pytest.mark.integration
@pytest.mark.timeout(900)  # the first test may build the cached kneo-serv venv
def test_a_tiny_run_splits_each_client_s_runs_and_gives_the_shape(kneo_venv, tmp_path, capsys):
    out = tmp_path / "gap.json"
    code = kneo_c1_gap.main(
        ["--stores", "sqlite", "--clients", "requests,kneo-client", "--runs", "4", "--rounds", "1", "--out", str(out)]
    )
    assert code == 0
    report = json.loads(out.read_text())
    table = report["stores"]["sqlite"]
    assert set(table) == {"run requests", "livez requests", "run kneo-client", "run fasthttp x8", "shape"}
    assert set(table["run kneo-client"]) >= {"wall_ms", "generator_cpu_ms", "kneo_serv_cpu_ms", "rest_ms", "per_s"}
    assert set(table["shape"]) == {"runs/s x8 ÷ runs/s at 1, requests", "runs/s x8 ÷ runs/s at 1, kneo-client"}
    assert "sqlite: ms per request at concurrency 1" in capsys.readouterr().out
