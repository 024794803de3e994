"""The end of a headless run: the per-step table and SLO verdicts after Locust's table, one exit-code rule, SLO lines
in the threshold's own units, and libraries' per-connection INFO lines kept off."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest

import swarmgauge.listeners.resources  # noqa: F401 - registers the rss_delta SLO term
from swarmgauge.listeners.outcome import Outcome
from swarmgauge.listeners.quiet import quiet_libraries
from swarmgauge.listeners.slo import covers_failures, format_verdicts, in_unit, parse
from swarmgauge.run_folders import resolve
from swarmgauge.summary import exit_reason
from tests.listeners.sim_run import ROOT, run_local, sim_target


def test_slo_lines_are_in_the_thresholds_own_units():
    assert in_unit(4.74399e7, "MiB", "rss_delta") == "45.2 MiB"
    assert in_unit(0.0123, "%", "fail_ratio") == "1.23 %"
    assert in_unit(12.345, "", "p99") == "12.3 ms" and in_unit(1500.0, "s", "p99") == "1.5 s"
    assert in_unit(None, "MiB") == "no data"
    threshold = parse("rss_delta<50MiB")
    line = format_verdicts(
        [
            {
                "expr": threshold.expr,
                "status": "pass",
                "observed": 4.74399e7,
                "unit": threshold.unit,
                "metric": threshold.metric,
            }
        ]
    )
    assert line == "SLO PASS    rss_delta<50MiB  (observed 45.2 MiB)"
    assert "base units" not in line


def test_one_exit_code_rule():
    assert covers_failures([{"metric": "fail_ratio", "status": "pass"}])
    assert not covers_failures([{"metric": "p99", "status": "pass"}])
    assert exit_reason(3, [{"expr": "GET:p99<1ms", "status": "fail"}]) == "exit code 3: SLO failed (GET:p99<1ms)"
    assert exit_reason(1, []) == "exit code 1: requests failed or user code raised, and no SLO covers them"
    assert exit_reason(2, []).startswith("exit code 2: usage error")
    assert exit_reason(4, []).startswith("exit code 4: cut short")


def test_every_reason_is_a_line_of_its_own_the_deciding_one_first():
    raised = "user code raised 4 exceptions (KeyError: 'x' (4)); no SLO names user_errors"
    decided = Outcome(3, ["SLO failed (GET:p99<1ms)", raised])
    assert exit_reason(3, [], decided).splitlines() == ["exit code 3: SLO failed (GET:p99<1ms)", f"also: {raised}"]
    assert exit_reason(0, [], Outcome(0)) == "exit code 0"


def test_chatty_library_loggers_are_quiet_unless_debug():
    quiet_libraries("INFO")
    assert not logging.getLogger("quic").isEnabledFor(logging.INFO)
    assert logging.getLogger("quic").isEnabledFor(logging.WARNING)
    quiet_libraries("DEBUG")
    assert logging.getLogger("quic").level == logging.NOTSET
    quiet_libraries("INFO")


SHORT_RUN = ("--steps", "2", "--step-time", "1.5", "--stop-timeout", "5")


@pytest.mark.integration
@pytest.mark.parametrize(("slos", "code"), [((), 1), (("fail_ratio<=1",), 0), (("fail_ratio<0.5",), 3)])
def test_failed_requests_exit_1_only_when_no_slo_covers_failures(tmp_path, slos, code):
    run_dir = tmp_path / "run"
    with sim_target("--delay", "const:5") as target:
        args = [arg for expr in slos for arg in ("--slo", expr)]
        result = run_local(target.url, *SHORT_RUN, *args, "--run-dir", str(run_dir), env={"SIM_STATUS": "500"})
    assert result.returncode == code, result.stderr[-2000:]
    assert json.loads((resolve(run_dir) / "run.json").read_text())["exit_code"] == code
    reasons = json.loads((resolve(run_dir) / "slo.json").read_text())["exit_reasons"]
    if code == 1:  # the reason says which requests failed, and is never "user code raised"
        assert len(reasons) == 1 and reasons[0].startswith("requests failed (")
        assert reasons[0].endswith("and no SLO covers failures (fail_ratio, failures)")


@pytest.mark.integration
@pytest.mark.timeout(150)
def test_the_demo_locustfile_ends_with_the_step_table_and_verdicts_and_no_quic_info_lines(tmp_path):
    run_dir = tmp_path / "run"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "locust",
            "-f",
            str(ROOT / "locustfiles" / "demarkus_reads.py"),
            "FetchUser",
            "--headless",
            "--steps",
            "1,2",
            "--step-time",
            "2",
            "--run-dir",
            str(run_dir),
            "--slo",
            "fail_ratio<0.01",
            "--slo",
            "FETCH:p99<10s",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout[-3000:]
    output = result.stdout  # stderr (logs, Locust's table) and stdout in the order the user sees them
    locust_table = output.index("Aggregated")
    summary = output.index("swarmgauge: per-step results")
    assert locust_table < summary  # after Locust's own table
    tail = output[summary:]
    assert "FETCH /corpus/{topic}/{doc}" in tail and "Step (users)" in tail and "p99" in tail
    assert "SLO PASS    fail_ratio<0.01  (observed 0)" in tail
    assert tail.rstrip().endswith("exit code 0")
    assert "/INFO/quic" not in output
    info = json.loads((resolve(run_dir) / "run.json").read_text())
    embedded = info["embedded_targets"]["mark"]
    assert f"psutil:pid={embedded['pid']}" in info["resources"]["sources"]  # the embedded target is sampled
    report = (resolve(run_dir) / "report.md").read_text()
    assert "## Target memory" in report and f"(embedded mark, pid {embedded['pid']})" in report
