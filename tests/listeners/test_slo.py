"""SLO grammar, and the exit codes of real headless runs: 3 on a failed threshold, 0 when all hold, 1 on errors or
exceptions raised by user code, 4 when -t cut the plan before a gate was measured; and the JUnit file of the verdicts."""

import json
import os
import stat
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from swarmgauge.errors import UsageError
from swarmgauge.listeners.slo import parse, split_exprs
from swarmgauge.run_folders import resolve
from tests.listeners.sim_run import RUN_SECONDS, locust_command, read_steps, run_local, sim_target

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs


def test_grammar_with_type_name_units_and_scope():
    t = parse("FETCH:/docs:p99<500ms@step")
    assert (t.request_type, t.name, t.metric, t.op, t.value, t.scope) == ("FETCH", "/docs", "p99", "<", 500.0, "step")
    assert parse("GET:p50<1.5s").value == 1500.0
    assert parse("fail_ratio<1%").value == pytest.approx(0.01)
    assert parse("dropped==0").scope == "run"


@pytest.mark.parametrize("expr", ["p99<<5", "p99<fast", "nosuch<5", "p99<5parsecs", ":p99<5"])
def test_malformed_expressions_are_usage_errors(expr):
    with pytest.raises(UsageError):
        parse(expr)


def test_env_style_lists_split_on_comma_and_semicolon():
    assert split_exprs(["a<1;b<2", "c<3"]) == ["a<1", "b<2", "c<3"]


# --- exit codes of real headless runs -----------------------------------------------------------------------------

SHORT_RUN = ("--steps", "2", "--step-time", "1.5", "--stop-timeout", "5")


def _run(tmp_path, *slos: str, status: str | None = None):
    run_dir = tmp_path / "run"
    with sim_target("--delay", "const:5") as target:
        args = [arg for expr in slos for arg in ("--slo", expr)]
        result = run_local(
            target.url, *SHORT_RUN, *args, "--run-dir", str(run_dir), env={"SIM_STATUS": status} if status else None
        )
    return result, run_dir


def _slo_doc(run_dir):
    return json.loads((resolve(run_dir) / "slo.json").read_text())


def test_a_failed_threshold_exits_3_and_says_so(tmp_path):
    result, run_dir = _run(tmp_path, "GET:p99<1ms", "fail_ratio<0.01")
    assert result.returncode == 3, result.stderr[-2000:]
    assert "SLO FAIL    GET:p99<1ms" in result.stdout
    assert "SLO PASS    fail_ratio<0.01" in result.stdout
    doc = _slo_doc(run_dir)
    assert doc["passed"] is False and doc["exit_code"] == 3
    assert {v["expr"]: v["status"] for v in doc["verdicts"]} == {"GET:p99<1ms": "fail", "fail_ratio<0.01": "pass"}
    assert json.loads((resolve(run_dir) / "run.json").read_text())["exit_code"] == 3


def test_all_thresholds_holding_exits_0(tmp_path):
    result, run_dir = _run(tmp_path, "GET:p99<5s", "fail_ratio<0.01", "rps>1@step", "requests>10")
    assert result.returncode == 0, result.stderr[-2000:]
    doc = _slo_doc(run_dir)
    assert doc["passed"] is True and doc["exit_code"] == 0  # as run.json and the report say
    assert all(v["status"] == "pass" for v in doc["verdicts"])
    step_verdict = next(v for v in doc["verdicts"] if v["scope"] == "step")
    assert [s["status"] for s in step_verdict["steps"]] == ["pass"]


def test_request_errors_exit_1_as_locust_does(tmp_path):
    result, run_dir = _run(tmp_path, "GET:p99<5s", status="500")
    assert result.returncode == 1, result.stderr[-2000:]
    assert _slo_doc(run_dir)["passed"] is True and _slo_doc(run_dir)["exit_code"] == 1
    assert json.loads((resolve(run_dir) / "run.json").read_text())["exit_code"] == 1


def test_a_failed_threshold_wins_over_request_errors(tmp_path):
    result, _run_dir = _run(tmp_path, "fail_ratio<0.5", status="500")
    assert result.returncode == 3, result.stderr[-2000:]


def test_a_malformed_slo_stops_the_run_before_it_starts(tmp_path):
    run_dir = tmp_path / "run"
    result = run_local("http://127.0.0.1:9", *SHORT_RUN, "--slo", "GET:p99<<5ms", "--run-dir", str(run_dir))
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.startswith("swarmgauge:")]
    assert lines == [
        "swarmgauge: malformed --slo 'GET:p99<<5ms': expected [TYPE[:NAME]:]METRIC OP VALUE[UNIT][@step|@run]"
    ]
    assert "Traceback" not in result.stderr
    assert not (resolve(run_dir) / "steps.csv").exists()


@pytest.mark.parametrize("expr", ["p99<-5ms", "rps>1e999", "fail_ratio<-0.1", "GET:max<1e400s"])
def test_thresholds_that_cannot_be_meant_are_usage_errors(expr):
    with pytest.raises(UsageError):
        parse(expr)


@pytest.mark.integration
def test_a_gate_over_a_target_that_never_answered_fails_and_says_so(tmp_path):
    """Every request is still in flight at the end: each is recorded unfinished, and the gate fails on the steps
    that had users and no answer (``listeners/unanswered.py``), not on "no data"."""
    run_dir = tmp_path / "run"
    with sim_target("--delay", "const:20000") as target:
        result = run_local(target.url, *SHORT_RUN, "--slo", "p99<500ms", "--run-dir", str(run_dir))
    assert result.returncode == 3, result.stderr[-2000:]
    assert "SLO FAIL    p99<500ms" in result.stdout and "no answers in step 0 (" in result.stdout
    doc = _slo_doc(run_dir)
    assert doc["passed"] is False and doc["exit_code"] == 3
    assert [v["status"] for v in doc["verdicts"]] == ["fail"]
    assert doc["verdicts"][0]["reason"].startswith("no answers in step 0 (")


@pytest.mark.integration
def test_an_slo_naming_a_request_that_never_appeared_fails_and_says_so(tmp_path):
    result, run_dir = _run(tmp_path, "GET:/itme:p99<5s", "GET:p99<5s")
    assert result.returncode == 3, result.stderr[-2000:]
    verdicts = {v["expr"]: v for v in _slo_doc(run_dir)["verdicts"]}
    assert verdicts["GET:p99<5s"]["status"] == "pass"
    missing = verdicts["GET:/itme:p99<5s"]
    assert missing["status"] == "fail"
    assert "'GET:/itme' never appeared" in missing["reason"] and "GET:/item" in missing["reason"]
    assert "never appeared" in result.stdout


# --- gates that cannot be fooled: user-code exceptions, a plan cut short, JUnit ------------------------------------

GATES_LOCUSTFILE = Path(__file__).resolve().parent / "gates_locustfile.py"


def _gates_run(tmp_path, *args: str, raise_every: int = 0) -> subprocess.CompletedProcess:
    """``locust -f gates_locustfile.py --headless`` run from ``tmp_path`` (so relative paths land there)."""
    with sim_target("--delay", "const:2") as target:
        return subprocess.run(
            locust_command(GATES_LOCUSTFILE, "--headless", "--host", target.url, "--stop-timeout", "3", *args),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=RUN_SECONDS,
            env={**os.environ, "GATES_RAISE_EVERY": str(raise_every)},
        )


def _exit_lines(stdout: str) -> list[str]:
    tail = stdout[stdout.rindex("swarmgauge: per-step results") :]
    return [line for line in tail.splitlines() if line.startswith(("exit code", "also:"))]


@pytest.mark.parametrize("slos", [(), ("fail_ratio<0.01",)])
def test_user_code_raising_after_a_successful_request_fails_the_run_and_says_so(tmp_path, slos):
    args = [arg for expr in slos for arg in ("--slo", expr)]
    result = _gates_run(
        tmp_path, "RaisingUser", "--steps", "2", "--step-time", "2", *args, "--run-dir", "run", raise_every=2
    )
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr[-2000:]
    doc = _slo_doc(tmp_path / "run")
    raised = doc["user_errors"]
    assert raised["total"] > 0 and raised["by_class"][0]["class"] == "KeyError"
    assert raised["by_class"][0]["message"] == "'missing'"
    assert doc["exit_code"] == 1 and doc["exit_reasons"][0].startswith(f"user code raised {raised['total']} exc")
    lines = _exit_lines(result.stdout)
    assert lines == [
        f"exit code 1: user code raised {raised['total']} exceptions (KeyError: 'missing' ({raised['total']})); no SLO names user_errors"
    ]
    steps_rows = [r for r in read_steps(tmp_path / "run") if r["name"] == "Aggregated"]
    assert sum(int(r["user_errors"]) for r in steps_rows) == raised["total"]  # counted per step, summed for the run
    assert all(int(r["failures"]) == 0 for r in steps_rows)  # the requests themselves succeeded
    assert "## User code exceptions" in (resolve(tmp_path / "run") / "report.md").read_text()
    assert json.loads((resolve(tmp_path / "run") / "run.json").read_text())["exit_code"] == 1


def test_an_slo_naming_user_errors_decides_and_the_junit_file_names_the_failed_gate(tmp_path):
    (tmp_path / "ci").mkdir()
    result = _gates_run(
        tmp_path,
        "RaisingUser",
        "--steps",
        "1",
        "--step-time",
        "2",
        "--slo",
        "user_errors==0",
        "--slo",
        "fail_ratio<0.01",
        "--slo-junit",
        "ci/slo.xml",
        raise_every=2,
    )
    assert result.returncode == 3, result.stdout[-2000:] + result.stderr[-2000:]
    assert _exit_lines(result.stdout) == ["exit code 3: SLO failed (user_errors==0)"]
    path = tmp_path / "ci" / "slo.xml"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    suite = ET.parse(path).getroot()
    assert suite.tag == "testsuite" and (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == (
        "2",
        "1",
        "0",
    )
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    failure = cases["user_errors==0"].find("failure")
    assert failure is not None and "user_errors observed" in failure.get("message", "")
    assert list(cases["fail_ratio<0.01"]) == []  # passed: no failure, no skipped
    exit_code = next(p for p in suite.iter("property") if p.get("name") == "exit_code")
    assert exit_code.get("value") == "3"


CUT_PLAN = """
name: cut
kind: stages
stages:
  - {label: items, users: 1, duration: 60s, user_classes: [RaisingUser]}
  - {label: later, users: 1, duration: 60s, user_classes: [LaterUser]}
"""


def test_an_slo_over_a_request_a_cut_plan_never_ran_is_not_reached_and_the_run_exits_4(tmp_path):
    (tmp_path / "plan.yaml").write_text(CUT_PLAN)
    result = _gates_run(
        tmp_path,
        "--plan",
        "plan.yaml",
        "-t",
        "4s",
        "--slo",
        "GET:/later:p99<5s",
        "--slo",
        "GET:/item:p99<5s",
        "--slo-junit",
        "slo.xml",
        "--run-dir",
        "run",
    )
    assert result.returncode == 4, result.stdout[-2000:] + result.stderr[-2000:]
    verdicts = {v["expr"]: v for v in _slo_doc(tmp_path / "run")["verdicts"]}
    assert verdicts["GET:/item:p99<5s"]["status"] == "pass"
    later = verdicts["GET:/later:p99<5s"]
    assert later["status"] == "not reached (cut short)" and "never ran: 'later'" in later["reason"]
    assert "SLO NOT REACHED (CUT SHORT) GET:/later:p99<5s" in result.stdout
    lines = _exit_lines(result.stdout)
    assert len(lines) == 1 and lines[0].startswith("exit code 4: cut short: -t stopped the plan at ")
    assert lines[0].endswith("before it measured GET:/later:p99<5s (gate not exercised)")
    suite = ET.parse(tmp_path / "slo.xml").getroot()  # relative to the working directory, written when cut short
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("2", "0", "1")
    skipped = {case.get("name"): case.find("skipped") for case in suite.iter("testcase")}
    assert skipped["GET:/item:p99<5s"] is None
    assert skipped["GET:/later:p99<5s"].get("message").startswith("not reached (cut short): ")
