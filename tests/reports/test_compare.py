"""``swarmgauge compare BASE NEW``: the regression gate, on real runs against ``swarmgauge target sim-http`` and on
run folders and reference plans written by hand."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from swarmgauge.compare_cli import main
from swarmgauge.reports.compare import CompareError, Side, compare, parse_tolerance
from tests.listeners.sim_run import ROOT, run_local, sim_target

STEPS_HEADER = "step,label,request_type,name,users,target_rate,requests,failures,rps,p50_ms,p99_ms\n"


def _run_folder(path: Path, rows: list[tuple[int, float, float, float]], slo: dict[str, str] | None = None) -> Path:
    path.mkdir(parents=True)
    lines = [f"{i},{u} users,GET,/item,{u},,100,0,{rps},{p50},{p99}" for i, (u, rps, p50, p99) in enumerate(rows)]
    lines += [f"{i},{u} users,,Aggregated,{u},,100,0,{rps},{p50},{p99}" for i, (u, rps, p50, p99) in enumerate(rows)]
    (path / "steps.csv").write_text(STEPS_HEADER + "\n".join(lines) + "\n")
    if slo:
        (path / "slo.json").write_text(json.dumps({"verdicts": [{"expr": e, "status": s} for e, s in slo.items()]}))
    return path


def test_within_the_tolerance_is_no_regression_and_beyond_it_names_step_and_metric(tmp_path, capsys):
    base = _run_folder(tmp_path / "base", [(1, 50, 20, 25), (4, 160, 21, 45)], {"fail_ratio<0.01": "pass"})
    same = _run_folder(tmp_path / "same", [(1, 48, 21, 26), (4, 165, 20.5, 47)], {"fail_ratio<0.01": "pass"})
    slow = _run_folder(tmp_path / "slow", [(1, 50, 20, 25), (4, 80, 42, 90)], {"fail_ratio<0.01": "fail"})
    assert main([str(base), str(same)]) == 0
    assert "No regression beyond the 10 % tolerance." in capsys.readouterr().out
    assert (same / "compare.md").is_file() and (same / "compare.html").read_text().startswith("<!doctype html>")
    assert main([str(base), str(slow), "--tolerance", "25%"]) == 3
    out = capsys.readouterr().out
    assert "GET /item at step '4 users': req/s -50.0 % (160 -> 80.0), beyond the 25 % tolerance" in out
    assert "GET /item at step '4 users': p50 +100.0 % (21.0 ms -> 42.0 ms)" in out
    assert "'1 users'" not in out.split("## Steps")[0]  # the unchanged step is not a regression
    assert "SLO fail_ratio<0.01: passed in BASE, fails in NEW" in out


def test_a_reference_plan_is_a_base(tmp_path, capsys):
    run = _run_folder(tmp_path / "run", [(1, 52, 20.5, 27), (4, 120, 30, 60)])
    (run / "steps.csv").write_text((run / "steps.csv").read_text().replace("GET,/item", "FETCH,/corpus/{topic}/{doc}"))
    assert main(["demarkus-reads", str(run)]) == 3
    out = capsys.readouterr().out
    assert "BASE: demarkus-kind-bench.md#reads (reference page)" in out
    assert "FETCH /corpus/{topic}/{doc} at step '4 users': req/s -25.0 % (160 -> 120)" in out


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert main([str(tmp_path), str(tmp_path)]) == 2
    assert "no steps.csv (not a run folder)" in capsys.readouterr().err
    assert main(["mcp-churn", str(_run_folder(tmp_path / "r", [(1, 1, 1, 1)]))]) == 2
    assert "the plan has no reference: figures" in capsys.readouterr().err
    with pytest.raises(CompareError, match="expected a fraction"):
        parse_tolerance("lots")
    assert parse_tolerance("10%") == pytest.approx(0.1) and parse_tolerance("0.2") == pytest.approx(0.2)


def test_only_rows_in_both_runs_are_compared():
    base = Side("a", {("GET /x", "1"): {"rps": 10, "p50_ms": 5, "p99_ms": 9}}, {})
    new = Side("b", {("GET /y", "1"): {"rps": 1, "p50_ms": 50, "p99_ms": 90}}, {})
    table, regressions = compare(base, new, 0.1)
    assert table.empty and regressions == []


def test_a_p99_on_fewer_than_100_requests_is_shown_but_not_gated(tmp_path, capsys):
    row = {"label": "1 users", "rps": 6, "p50_ms": 150, "p99_ms": 177}
    base = Side("a", {("GET /x", "1"): {**row, "requests": 18}}, {})
    new = Side("b", {("GET /x", "1"): {**row, "requests": 17, "p99_ms": 414}}, {})
    not_gated: list[str] = []
    table, regressions = compare(base, new, 0.4, not_gated)
    assert regressions == []
    assert table.loc[0, "Δ p99"] == "+133.9 % (not gated)"
    assert not_gated == [
        "GET /x at step '1 users': p99 +133.9 % (177 ms -> 414 ms): fewer than 100 requests (18 base, 17 new), "
        "so it is the slowest single request"
    ]
    enough = Side("b", {("GET /x", "1"): {**row, "requests": 100, "p99_ms": 414}}, {})
    _, regressions = compare(Side("a", {("GET /x", "1"): {**row, "requests": 100}}, {}), enough, 0.4)
    assert regressions == ["GET /x at step '1 users': p99 +133.9 % (177 ms -> 414 ms), beyond the 40 % tolerance"]
    slow_median = Side("b", {("GET /x", "1"): {**row, "requests": 17, "p50_ms": 400}}, {})
    _, regressions = compare(base, slow_median, 0.4)
    assert [line.split(":")[1] for line in regressions] == [
        " p50 +166.7 % (150 ms -> 400 ms), beyond the 40 % tolerance"
    ]


def _sim_run(tmp_path: Path, name: str, delay_ms: int) -> Path:
    run_dir = tmp_path / name
    with sim_target("--delay", f"const:{delay_ms}") as target:
        result = run_local(
            target.url,
            "--steps",
            "1,2",
            "--step-time",
            "3",
            "--warmup",
            "1",
            "--stop-timeout",
            "5",
            "--run-dir",
            str(run_dir),
            "--no-report",
        )
    assert result.returncode == 0, result.stderr[-3000:]
    return run_dir


SIM_DELAY_MS = 150  # well above a loaded machine's scheduling noise; a 3 s step has ~20 requests, so p99 is not gated
TOLERANCE = "40%"  # the same delay stays inside it; twice the delay (p50 +100 %, req/s -50 %) is beyond it


@pytest.mark.integration
def test_compare_two_real_runs_same_delay_then_twice_as_slow(tmp_path):
    first, second, slower = (
        _sim_run(tmp_path, "first", SIM_DELAY_MS),
        _sim_run(tmp_path, "second", SIM_DELAY_MS),
        _sim_run(tmp_path, "slower", 2 * SIM_DELAY_MS),
    )

    def swarmgauge_compare(base: Path, new: Path) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "swarmgauge.cli", "compare", str(base), str(new), "--tolerance", TOLERANCE],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )

    same = swarmgauge_compare(first, second)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "No regression beyond the 40 % tolerance." in same.stdout
    slow = swarmgauge_compare(first, slower)
    assert slow.returncode == 3, slow.stdout + slow.stderr
    assert "GET /item at step '1 users': p50 +" in slow.stdout
    assert "GET /item at step '2 users': req/s -" in slow.stdout
