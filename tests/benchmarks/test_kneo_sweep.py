"""benchmarks/kneo_sweep.py on a tiny sweep against the real kneo-serv: the page's table layout, the JSON, every
run reconciled. Structure and counts only, never a figure."""

from __future__ import annotations

import json

import pytest

from benchmarks import kneo_sweep

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]  # the first test may build the cached kneo-serv venv


def test_tiny_sweep_prints_the_page_layout_and_writes_json(kneo_venv, tmp_path, capsys):
    code = kneo_sweep.main(["--stores", "sqlite", "--users", "1,2", "--step-time", "2s", "--warmup", "0s",
                            "--queued-stores", "sqlite", "--queued-users", "2", "--queued-time", "2s",
                            "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0] == "| " + " | ".join(kneo_sweep.HEADER) + " |"
    body = [line.split(" | ") for line in lines[2:]]
    assert [(cells[0].lstrip("| "), cells[1]) for cells in body] == [
        ("sqlite / sync", "1"), ("sqlite / sync", "2"), ("sqlite / queue", "2")]
    assert all(cells[6].endswith("MiB") and cells[-1] == "yes |" for cells in body)
    assert body[0][7] == "51"  # the page's figure for sqlite / sync at 1 beside ours
    doc = json.loads((tmp_path / "kneo-sweep.json").read_text())
    assert [(r["store"], r["mode"], r["users"]) for r in doc["rows"]] == [
        ("sqlite", "sync", 1), ("sqlite", "sync", 2), ("sqlite", "queued", 2)]
    assert all(r["requests"] > 0 and r["reconciled"] and r["locust_exit_code"] == 0 for r in doc["rows"])
    assert doc["settings"]["users"] == [1, 2] and doc["machine"]["cpus"] >= 1


def test_bad_store_name_is_refused_in_one_line(capsys):
    assert kneo_sweep.main(["--stores", "mysql"]) == 2
    assert capsys.readouterr().err.strip().startswith("kneo_sweep: --stores takes sqlite and/or postgres")


def test_peak_rss_sums_processes_within_a_round():
    rows = [{"source": "psutil:pidfile=a", "metric": "rss_bytes", "step": "0", "round": "0", "value": str(2**20)},
            {"source": "psutil:pidfile=b", "metric": "rss_bytes", "step": "0", "round": "0", "value": str(2**20)},
            {"source": "psutil:pidfile=a", "metric": "rss_bytes", "step": "0", "round": "1", "value": str(3 * 2**20)},
            {"source": "generator", "metric": "rss_bytes", "step": "0", "round": "1", "value": str(99 * 2**20)}]
    assert kneo_sweep.peak_rss_by_step(rows) == {0: 3.0}
