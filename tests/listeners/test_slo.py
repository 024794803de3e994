"""SLO grammar, and the exit codes of real headless runs: 3 on a failed threshold, 0 when all hold, 1 on errors."""

import json

import pytest

from swarmgauge.errors import UsageError
from swarmgauge.listeners.slo import parse, split_exprs
from swarmgauge.run_folders import resolve
from tests.listeners.sim_run import run_local, sim_target

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
def test_a_gate_over_no_data_fails_with_a_no_data_verdict(tmp_path):
    run_dir = tmp_path / "run"
    with sim_target("--delay", "const:20000") as target:
        result = run_local(target.url, *SHORT_RUN, "--slo", "p99<500ms", "--run-dir", str(run_dir))
    assert result.returncode == 3, result.stderr[-2000:]
    assert "SLO NO DATA p99<500ms" in result.stdout
    doc = _slo_doc(run_dir)
    assert doc["passed"] is False and doc["exit_code"] == 3
    assert [v["status"] for v in doc["verdicts"]] == ["no data"]


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
