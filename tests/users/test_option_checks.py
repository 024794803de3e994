"""Every bad option of issue 21's probe list stops a real run before any load: one line, exit 2, no traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.listeners.sim_run import ROOT, run_local

READS = ROOT / "locustfiles" / "demarkus_reads.py"
MCP = ROOT / "locustfiles" / "mcp_churn.py"
SIM = ROOT / "tests" / "listeners" / "sim_locustfile.py"
NOWHERE_HTTP = "http://127.0.0.1:9"  # never contacted: the run must stop before any user starts
NOWHERE_MARK = "mark://127.0.0.1:9"
RUN = ("--steps", "1", "--step-time", "5")


def _binary_plan(tmp_path):
    path = tmp_path / "plan.yaml"
    path.write_bytes(bytes(range(256)) * 4)
    return str(path)


def _plan_with_unknown_class(tmp_path):
    path = tmp_path / "plan.yaml"
    path.write_text("kind: step_ramp\nsteps: [1]\nstep_time: 5s\nuser_classes: [NoSuchUser]\n")
    return str(path)


def _not_pem(tmp_path):
    path = tmp_path / "ca.pem"
    path.write_text("this is not a certificate\n")
    return str(path)


CASES = [
    ("mark-host-http", READS, "http://", ("FetchUser", *RUN), "not a mark://host[:port] URL: 'http://'"),
    ("mcp-host-mark", MCP, NOWHERE_MARK, ("MCPFetchUser", *RUN), "MCP users need an http(s)://HOST:PORT URL"),
    ("mark-timeout-nan", READS, NOWHERE_MARK, ("FetchUser", "--mark-timeout", "nan", *RUN), "--mark-timeout nan:"),
    ("mark-timeout-negative", READS, NOWHERE_MARK, ("FetchUser", "--mark-timeout=-1", *RUN), "--mark-timeout -1"),
    ("mcp-timeout-nan", MCP, NOWHERE_HTTP, ("MCPFetchUser", "--mcp-timeout", "nan", *RUN), "--mcp-timeout nan:"),
    ("steps-nan", SIM, NOWHERE_HTTP, ("--steps", "nan", "--step-time", "5"), "must be a finite number"),
    ("steps-inf", SIM, NOWHERE_HTTP, ("--steps", "inf", "--step-time", "5"), "must be a finite number"),
    ("steps-1e9", SIM, NOWHERE_HTTP, ("--steps", "1e9", "--step-time", "5"), "past the limit of 100000"),
    ("steps-empty-item", SIM, NOWHERE_HTTP, ("--steps", "1,,4", "--step-time", "5"), "empty item in '1,,4'"),
    ("plan-binary", SIM, NOWHERE_HTTP, ("--plan", _binary_plan), "not a text file"),
    (
        "plan-unknown-class",
        SIM,
        NOWHERE_HTTP,
        ("--plan", _plan_with_unknown_class),
        "unknown user class(es) NoSuchUser",
    ),
    ("slo-negative", SIM, NOWHERE_HTTP, (*RUN, "--slo", "p99<-5ms"), "negative threshold"),
    ("slo-infinite", SIM, NOWHERE_HTTP, (*RUN, "--slo", "rps>1e999"), "must be a finite number"),
    (
        "sample-interval-negative",
        READS,
        NOWHERE_MARK,
        ("FetchUser", *RUN, "--sample-interval=-1"),
        "--sample-interval -1",
    ),
    ("sample-interval-zero", READS, NOWHERE_MARK, ("FetchUser", *RUN, "--sample-interval", "0"), "--sample-interval 0"),
    (
        "sample-warmup-banana",
        READS,
        NOWHERE_MARK,
        ("FetchUser", *RUN, "--sample-warmup", "banana"),
        "--sample-warmup 'banana'",
    ),
    (
        "embedded-args-unknown",
        READS,
        "",
        ("FetchUser", *RUN, "--mark-embedded-args", "--bogus 3"),
        "--mark-embedded-args: unrecognized arguments: --bogus",
    ),
    (
        "embedded-args-unsplittable",
        READS,
        "",
        ("FetchUser", *RUN, "--mark-embedded-args", "'unclosed"),
        "cannot split it as a command line",
    ),
    ("mark-corpus-negative", READS, "", ("FetchUser", *RUN, "--mark-corpus=-5"), "--mark-corpus -5"),
    (
        "mark-ca-missing",
        READS,
        NOWHERE_MARK,
        ("FetchUser", *RUN, "--mark-ca", "/nonexistent.pem"),
        "--mark-ca /nonexistent.pem: no such file",
    ),
    ("mark-ca-not-pem", READS, NOWHERE_MARK, ("FetchUser", *RUN, "--mark-ca", _not_pem), "not a PEM certificate"),
]


@pytest.mark.integration
@pytest.mark.parametrize("case, locustfile, host, args, words", CASES, ids=[case[0] for case in CASES])
def test_a_bad_option_stops_the_run_before_any_load(tmp_path, case, locustfile, host, args, words):
    run_dir = tmp_path / "run"
    args = tuple(arg(tmp_path) if callable(arg) else arg for arg in args)
    result = run_local(host, *args, "--run-dir", str(run_dir), locustfile=locustfile, timeout=90)
    assert result.returncode == 2, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if "swarmgauge: " in line]
    assert len(lines) == 1 and words in lines[0], result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert not (run_dir / "steps.csv").exists()


README_MARK = """
from locust import constant, task

import swarmgauge.locust  # noqa: F401
from swarmgauge import api as sg


class Ramp(sg.StepRamp):
    steps = [1, 2]
    step_time = "2s"


class ReaderUser(sg.MarkUser):
    wait_time = constant(0.05)

    @task
    def read(self) -> None:
        self.client.list("/")
"""


@pytest.mark.integration
@pytest.mark.parametrize("extra", [(), ("--slo", "LIST:p99<500ms")], ids=["plain", "with-slo"])
def test_a_user_that_needs_a_host_and_has_none_stops_the_run_before_any_load(tmp_path, extra):
    """Issue 28, defect 6: four tracebacks, exit 2 and a run folder; with --slo, exit 3 "SLO failed"."""
    locustfile = tmp_path / "locustfile.py"
    locustfile.write_text(README_MARK)
    run_dir = tmp_path / "runs"
    result = subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(locustfile), "--headless", "--run-dir", str(run_dir), *extra],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if "swarmgauge: " in line]
    assert len(lines) == 1 and "ReaderUser needs --host mark://HOST:PORT" in lines[0], result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert not run_dir.exists(), "no run folder for a run that never started"
