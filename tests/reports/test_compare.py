"""``swarmgauge compare BASE NEW``: the regression gate, on real runs against ``swarmgauge target sim-http`` and on
run folders and reference plans written by hand."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from swarmgauge.cli.compare import main
from swarmgauge.reports.compare import CompareError, Side, compare, parse_tolerance
from swarmgauge.reports.compare_stats import MIN_SECONDS, compare_samples, mann_whitney_p
from tests.listeners.sim_run import ROOT, run_local, sim_target

STEPS_HEADER = "step,label,request_type,name,users,target_rate,requests,failures,rps,p50_ms,p99_ms\n"
SECONDS = 8  # per step in the synthetic timelines (a first bucket that straddles the step change, then 7)
JITTER = (1.0, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1.0)


def _timeline(path: Path, seconds_of_steps: list[list[tuple[float, float, float]]]) -> None:
    """``timeline.csv`` with one row per second and step: (requests, p50, p99), and a last partial bucket."""
    lines, second = ["time,step,requests,failures,p50_ms,p99_ms"], 1796000000
    for step, seconds in enumerate(seconds_of_steps):
        for requests, p50, p99 in seconds:
            lines.append(f"{second},{step},{requests:.0f},0,{p50:.3f},{p99:.3f}")
            second += 1
    lines.append(f"{second},{len(seconds_of_steps) - 1},3,0,1.0,1.0")
    (path / "timeline.csv").write_text("\n".join(lines) + "\n")


def _run_folder(
    path: Path,
    rows: list[tuple[int, float, float, float]],
    slo: dict[str, str] | None = None,
    seconds: int = SECONDS,
) -> Path:
    """A run folder whose steps.csv rows are the step figures and whose seconds scatter a few % around them."""
    path.mkdir(parents=True)
    lines = [f"{i},{u} users,GET,/item,{u},,100,0,{rps},{p50},{p99}" for i, (u, rps, p50, p99) in enumerate(rows)]
    lines += [f"{i},{u} users,,Aggregated,{u},,100,0,{rps},{p50},{p99}" for i, (u, rps, p50, p99) in enumerate(rows)]
    (path / "steps.csv").write_text(STEPS_HEADER + "\n".join(lines) + "\n")
    _timeline(path, [[(rps * j, p50 * j, p99 * j) for j in JITTER[:seconds]] for (_u, rps, p50, p99) in rows])
    if slo:
        (path / "slo.json").write_text(json.dumps({"verdicts": [{"expr": e, "status": s} for e, s in slo.items()]}))
    return path


def _seconds(rng: np.random.Generator, count: int, rps: float, p50: float, p99: float, spread: float) -> list:
    """``count`` seconds drawn around (rps, p50, p99): each figure times a lognormal factor of sigma ``spread``."""
    return [
        (rps * rng.lognormal(0, spread), p50 * rng.lognormal(0, spread), p99 * rng.lognormal(0, spread))
        for _ in range(count)
    ]


def _drawn_run(path: Path, steps: list[list[tuple[float, float, float]]]) -> Path:
    """A one-name run folder whose step figures come from its drawn seconds: rate and p50 their medians, the p99
    their slowest second's (one stalled second sets a whole step's p99, as in a real run)."""
    path.mkdir(parents=True)
    lines = []
    for i, seconds in enumerate(steps):
        rps, p50 = (float(np.median([s[k] for s in seconds[1:]])) for k in range(2))
        p99 = max(s[2] for s in seconds[1:])
        lines.append(f"{i},{2 * (i + 1)} users,GET,GET /,{2 * (i + 1)},,{rps * 6:.0f},0,{rps},{p50},{p99}")
    (path / "steps.csv").write_text(STEPS_HEADER + "\n".join(lines) + "\n")
    _timeline(path, steps)
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


def _frame(values: dict[str, float], count: int = 6, requests: float = 1000) -> pd.DataFrame:
    """``count`` seconds around the given figures (a step's seconds as ``Side.seconds`` holds them), each with
    ``requests`` requests."""
    frame = pd.DataFrame({k: [v * j for j in JITTER[:count]] for k, v in values.items()})
    return frame.assign(requests=requests)


def test_a_p99_on_fewer_than_100_requests_is_shown_but_not_gated(tmp_path, capsys):
    """The step-level minimum: a p99 of fewer than 100 requests is the slowest one (and its seconds hold fewer)."""
    row = {"label": "1 users", "rps": 6, "p50_ms": 150, "p99_ms": 177}
    seconds = {"1": _frame({"rps": 6, "p50_ms": 150, "p99_ms": 177})}
    slow_tail = {"1": _frame({"rps": 6, "p50_ms": 150, "p99_ms": 414})}
    base = Side("a", {("GET /x", "1"): {**row, "requests": 18}}, {}, seconds=seconds)
    new = Side("b", {("GET /x", "1"): {**row, "requests": 17, "p99_ms": 414}}, {}, seconds=slow_tail)
    not_gated: list[str] = []
    table, regressions = compare(base, new, 0.4, not_gated)
    assert regressions == []
    assert table.loc[0, "Δ p99"] == "+133.9 % (not gated)"
    assert not_gated == [
        "GET /x at step '1 users': p99 +133.9 % (177 ms -> 414 ms): not gated, fewer than 100 requests (18 base, "
        "17 new), so it is the slowest single request"
    ]
    enough = Side("b", {("GET /x", "1"): {**row, "requests": 100, "p99_ms": 414}}, {}, seconds=slow_tail)
    _, regressions = compare(Side("a", {("GET /x", "1"): {**row, "requests": 100}}, {}, seconds=seconds), enough, 0.4)
    assert len(regressions) == 1
    assert regressions[0].startswith(
        "GET /x at step '1 users': p99 +133.9 % (177 ms -> 414 ms), beyond the 40 % tolerance: per-second shift +"
    )
    slow_median = Side(
        "b",
        {("GET /x", "1"): {**row, "requests": 17, "p50_ms": 400}},
        {},
        seconds={"1": _frame({"rps": 6, "p50_ms": 400, "p99_ms": 177})},
    )
    _, regressions = compare(base, slow_median, 0.4)
    assert [line.split(":")[1] for line in regressions] == [
        " p50 +166.7 % (150 ms -> 400 ms), beyond the 40 % tolerance"
    ]


def test_a_p99_whose_seconds_hold_fewer_than_1000_requests_is_not_gated():
    """A second's p99 of 170 requests is its two slowest: identical runs on a loaded machine moved it +60 %."""
    row = {"label": "4 users", "rps": 170, "p50_ms": 22, "p99_ms": 27, "requests": 1000}
    seconds = {"4": _frame({"rps": 170, "p50_ms": 22, "p99_ms": 27}, requests=170)}
    tail = {"4": _frame({"rps": 170, "p50_ms": 22, "p99_ms": 40}, requests=170)}
    not_gated: list[str] = []
    base, new = (
        Side("a", {("GET /", "4"): row}, {}, seconds=seconds),
        Side("b", {("GET /", "4"): {**row, "p99_ms": 40}}, {}, seconds=tail),
    )
    table, regressions = compare(base, new, 0.1, not_gated)
    assert regressions == [] and table.loc[0, "p99 shift [95 % CI] p"] == "not gated"
    assert "its seconds hold fewer than 1,000 requests (fewest 170, 170 in base, new)" in not_gated[0]
    busy = {users: frame.assign(requests=1200) for users, frame in tail.items()}
    base.seconds = {users: frame.assign(requests=1200) for users, frame in seconds.items()}
    _, regressions = compare(base, Side("b", new.rows, {}, seconds=busy), 0.1)
    assert len(regressions) == 1 and regressions[0].startswith("GET / at step '4 users': p99 +48.1 %")


def test_mann_whitney_matches_the_normal_approximation_and_ties_say_nothing():
    separated = mann_whitney_p(np.array([1.0, 2.0, 3.0, 4.0]), np.array([5.0, 6.0, 7.0, 8.0]))
    assert separated == pytest.approx(0.0209, abs=5e-4)  # U = 16, z = 8 / sqrt(12)
    tied = mann_whitney_p(np.array([1.0, 1.0, 2.0, 2.0]), np.array([2.0, 2.0, 3.0, 3.0]))
    assert tied == pytest.approx(0.0614, abs=5e-4)  # U = 14, variance 16/12 * (9 - 72/56): ties 2, 4 and 2
    assert mann_whitney_p(np.array([5.0] * 4), np.array([5.0] * 4)) == 1.0
    assert compare_samples(np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])) is None  # fewer than MIN_SECONDS


def test_noise_alone_with_one_outlier_second_is_not_a_regression_and_a_doubled_delay_is(tmp_path):
    rng = np.random.default_rng(7)
    figures = [(90.0, 21.5, 24.0), (175.0, 22.0, 26.0)]
    base = _drawn_run(tmp_path / "base", [_seconds(rng, SECONDS, *f, spread=0.05) for f in figures])
    noisy_steps = [_seconds(rng, SECONDS, *f, spread=0.05) for f in figures]
    noisy_steps[0][3] = (60.0, 35.0, 160.0)  # one stalled second: its p99 6x, its p50 and rate off too
    noisy = _drawn_run(tmp_path / "noisy", noisy_steps)
    doubled = _drawn_run(
        tmp_path / "doubled",
        [_seconds(rng, SECONDS, rps / 2, p50 * 2, p99 * 2, spread=0.05) for rps, p50, p99 in figures],
    )
    assert main([str(base), str(noisy)]) == 0  # the step's p99 is 6x BASE's: a flat tolerance on it fired here
    assert main([str(base), str(doubled)]) == 3
    report = (doubled / "compare.md").read_text()
    assert "GET / at step '2 users': p50 +" in report and "GET / at step '4 users': req/s -" in report
    assert "Mann-Whitney p = " in report and "95 % CI" in report
    assert "| GET /     |" in report and "GET GET /" not in report  # named as every other view names it


def test_a_step_with_too_few_seconds_is_not_gated(tmp_path, capsys):
    base = _run_folder(tmp_path / "base", [(4, 160, 21, 45)], seconds=MIN_SECONDS)
    slow = _run_folder(tmp_path / "slow", [(4, 80, 42, 90)], seconds=MIN_SECONDS)
    assert main([str(base), str(slow)]) == 0  # the first bucket is left out: one second short of a test
    out = capsys.readouterr().out
    assert "No regression beyond the 10 % tolerance." in out
    assert (
        "GET /item at step '4 users': p50 +100.0 % (21.0 ms -> 42.0 ms): not gated, too few seconds (3 base, 3 new"
        in out
    )
    assert "+100.0 % (not gated)" in out


def test_a_step_of_several_names_is_gated_on_its_all_requests_row(tmp_path, capsys):
    def folder(path: Path, p50: float) -> Path:
        path.mkdir()
        rows = [f"0,4 users,GET,/a,4,,600,0,100,{p50},{p50 * 1.2}", "0,4 users,GET,/b,4,,600,0,100,20,24"]
        rows.append(f"0,4 users,,Aggregated,4,,1200,0,200,{(p50 + 20) / 2},{p50 * 1.2}")
        (path / "steps.csv").write_text(STEPS_HEADER + "\n".join(rows) + "\n")
        _timeline(path, [[(200 * j, (p50 + 20) / 2 * j, p50 * 1.2 * j) for j in JITTER]])
        return path

    assert main([str(folder(tmp_path / "base", 20)), str(folder(tmp_path / "slow", 60))]) == 3
    out = capsys.readouterr().out
    assert "all requests at step '4 users': p50 +100.0 %" in out
    assert "GET /a at step '4 users': p50 +200.0 % (20.0 ms -> 60.0 ms): not gated, its step's seconds mix 2" in out


def test_a_run_against_a_target_unlike_the_reference_pages_is_told_so(tmp_path, capsys):
    run = _run_folder(tmp_path / "run", [(1, 52, 20.5, 27)])
    (run / "steps.csv").write_text((run / "steps.csv").read_text().replace("GET,/item", "FETCH,/corpus/{topic}/{doc}"))
    (run / "run.json").write_text(
        json.dumps({"host": "mark://127.0.0.1:9", "embedded_targets": {"mark": {"args": []}}})
    )
    assert main(["demarkus-reads", str(run)]) == 0
    out = capsys.readouterr().out
    assert "The embedded mark was not simulating the page's bottleneck (missing: --read-delay-ms 9.2" in out


def _sim_run(tmp_path: Path, name: str, delay_ms: int) -> Path:
    run_dir = tmp_path / name
    with sim_target("--delay", f"const:{delay_ms}") as target:
        result = run_local(
            target.url,
            "--steps",
            "1,2",
            "--step-time",
            "8",
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


SIM_DELAY_MS = 150  # well above a loaded machine's scheduling noise; an 8 s step has ~50 requests, so p99 is not gated
TOLERANCE = "40%"  # the same delay stays inside it; twice the delay (p50 +100 %, req/s -50 %) is beyond it
# 8 s steps: after the 1 s warm-up and the first bucket, at least MIN_SECONDS seconds each for the test


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


def _chart_data(page: str, chart_id: str) -> list[dict]:
    """The traces plotly draws in ``chart_id``: the JSON argument of its ``Plotly.newPlot`` call."""
    call = re.search(r'Plotly\.newPlot\(\s*"' + chart_id + r'",\s*', page)
    assert call, f"no chart {chart_id}"
    data, _end = json.JSONDecoder().raw_decode(page, call.end())
    return data


def _values(encoded: dict | list) -> list[float]:
    """A trace's array as plotly writes it: a list, or a typed array (``dtype`` and base64 ``bdata``)."""
    if isinstance(encoded, list):
        return encoded
    return np.frombuffer(base64.b64decode(encoded["bdata"]), dtype=encoded["dtype"]).tolist()


def test_compare_html_draws_both_runs_on_one_chart_and_colours_the_changes(tmp_path):
    rng = np.random.default_rng(3)
    figures = [(90.0, 21.5, 24.0), (175.0, 22.0, 26.0)]
    base = _drawn_run(tmp_path / "base", [_seconds(rng, SECONDS, *f, spread=0.05) for f in figures])
    doubled = _drawn_run(
        tmp_path / "doubled",
        [_seconds(rng, SECONDS, rps / 2, p50 * 2, p99 * 2, spread=0.05) for rps, p50, p99 in figures],
    )
    assert main([str(base), str(doubled)]) == 3
    page = (doubled / "compare.html").read_text()
    assert "<script src" not in page and page.count("<script type='text/javascript'>") == 1  # offline, inlined once
    traces = {t["name"]: t for t in _chart_data(page, "chart-compare")}
    assert (
        traces["BASE: GET / req/s"]["line"]["dash"] == "dash" and traces["NEW: GET / req/s"]["line"]["dash"] == "solid"
    )
    steps = pd.read_csv(doubled / "steps.csv")
    assert _values(traces["NEW: GET / req/s"]["y"]) == list(steps[steps["name"] == "GET /"]["rps"])
    red = "background:#f4bcc0"
    assert f"<td style='{red}'>-5" in page or f"<td style='{red}'>-4" in page  # the req/s that halved, in red
    assert "<div class='table-box'><table>" in page


def test_against_a_reference_plan_the_chart_puts_the_pages_figures_beside_new(tmp_path):
    run = tmp_path / "new"
    run.mkdir()
    rows = [
        f"{i},{u} users,FETCH,/corpus/x,{u},,600,0,{rps},{p50},{p99}"
        for i, (u, rps, p50, p99) in enumerate([(1, 50, 21, 27), (4, 150, 22, 44), (16, 155, 101, 160)])
    ]
    (run / "steps.csv").write_text(STEPS_HEADER + "\n".join(rows) + "\n")
    main(["demarkus-reads", str(run), "--tolerance", "50%"])
    traces = {t["name"]: t for t in _chart_data((run / "compare.html").read_text(), "chart-compare")}
    assert _values(traces["FETCH /corpus/x req/s"]["y"]) == [50, 150, 155]
    page = traces["page: FETCH /corpus/x req/s"]
    assert page["x"][:3] == [1.0, 4.0, 16.0] and page["y"][:3] == [53, 160, 159] and page["line"]["dash"] == "dot"
