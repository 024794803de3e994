"""Issue 33, point 5: each bad value of the probe stops a real run before any load: exit 2, one line, no traceback."""

from __future__ import annotations

import socket

import pytest

from tests.listeners.sim_run import ROOT, run_local

LOCUSTFILES = ROOT / "locustfiles"
MDK = LOCUSTFILES / "mdk_fleet.py"
KNEO = LOCUSTFILES / "kneo_dispatch.py"
WRITES = LOCUSTFILES / "demarkus_writes.py"
READS = LOCUSTFILES / "demarkus_reads.py"
BRAIN = LOCUSTFILES / "brain_stress.py"
MCP = LOCUSTFILES / "mcp_churn.py"
SIM = ROOT / "tests" / "listeners" / "sim_locustfile.py"
NOWHERE_HTTP = "http://127.0.0.1:9"  # never contacted: the run must stop before any user starts
NOWHERE_MARK = "mark://127.0.0.1:9"
EMBEDDED = ""  # no --host: the locustfile would start its embedded target
SHORT = ("-t", "8s")

CASES = [
    ("mdk-timeout-nan", MDK, NOWHERE_HTTP, ("--mdk-timeout", "nan", *SHORT), "--mdk-timeout nan:"),
    ("mdk-timeout-negative", MDK, NOWHERE_HTTP, ("--mdk-timeout=-1", *SHORT), "--mdk-timeout -1"),
    ("mdk-weights-unknown", MDK, NOWHERE_HTTP, ("--mdk-weights", "x:y", *SHORT), "--mdk-weights: want NAME=N"),
    ("mdk-params-not-json", MDK, NOWHERE_HTTP, ("--mdk-params", "{bad", *SHORT), "--mdk-params is not JSON"),
    (
        "mdk-embedded-args-nan",
        MDK,
        EMBEDDED,
        ("--mdk-embedded-args", "--cache-s nan", *SHORT),
        "--mdk-embedded-args: --cache-s nan",
    ),
    ("kneo-poll-timeout-nan", KNEO, NOWHERE_HTTP, ("--kneo-poll-timeout", "nan", *SHORT), "--kneo-poll-timeout nan:"),
    ("kneo-drain-timeout-inf", KNEO, NOWHERE_HTTP, ("--kneo-drain-timeout", "inf", *SHORT), "--kneo-drain-timeout"),
    ("rate-zero", SIM, NOWHERE_HTTP, ("--rate", "0", "--duration", "3s"), "rate: must be greater than zero"),
    ("rate-list-with-zero", SIM, NOWHERE_HTTP, ("--rate", "5,0", "--step-time", "3s"), "must be greater than zero"),
    (
        "mark-write-rate-nan",
        WRITES,
        NOWHERE_MARK,
        ("--mark-write-rate", "nan", *SHORT),
        "--mark-write-rate nan:",
    ),
    ("mark-write-rate-negative", WRITES, NOWHERE_MARK, ("--mark-write-rate=-1", *SHORT), "--mark-write-rate -1"),
    (
        "mark-embedded-args-nan",
        READS,
        EMBEDDED,
        ("FetchUser", "--mark-embedded-args", "--read-delay-ms nan", *SHORT),
        "--mark-embedded-args: --read-delay-ms nan",
    ),
    (
        "brain-embedded-args-unknown",
        BRAIN,
        EMBEDDED,
        ("--brain-embedded-args", "--bogus 1", *SHORT),
        "--brain-embedded-args: unrecognized arguments: --bogus",
    ),
    (
        "brain-embedded-args-negative",
        BRAIN,
        EMBEDDED,
        ("--brain-embedded-args", "--search-ms -5", *SHORT),
        "--brain-embedded-args: --search-ms -5",
    ),
    (
        "mcp-embedded-args-nan",
        MCP,
        EMBEDDED,
        ("--mcp-embedded-args", "--session-idle-timeout nan", *SHORT),
        "--mcp-embedded-args: --session-idle-timeout nan",
    ),
    ("prometheus-port-negative", READS, NOWHERE_MARK, ("FetchUser", "--prometheus-port=-1", *SHORT), "-1"),
    ("sample-interval-nan", READS, NOWHERE_MARK, ("FetchUser", "--sample-interval", "nan", *SHORT), "nan"),
]


def _assert_stopped_before_load(result, run_dir, words):
    assert result.returncode == 2, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if "swarmgauge: " in line]
    assert len(lines) == 1 and words in lines[0], result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert not (run_dir / "steps.csv").exists()


@pytest.mark.integration
@pytest.mark.parametrize("case, locustfile, host, args, words", CASES, ids=[case[0] for case in CASES])
def test_a_bad_value_stops_the_run_before_any_load(tmp_path, case, locustfile, host, args, words):
    run_dir = tmp_path / "run"
    result = run_local(host, *args, "--run-dir", str(run_dir), locustfile=locustfile, timeout=90)
    _assert_stopped_before_load(result, run_dir, words)


@pytest.mark.integration
def test_a_taken_prometheus_port_is_one_line_and_exit_2(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        run_dir = tmp_path / "run"
        result = run_local(
            NOWHERE_MARK,
            "FetchUser",
            "--prometheus-port",
            str(port),
            *SHORT,
            "--run-dir",
            str(run_dir),
            locustfile=READS,
            timeout=90,
        )
    _assert_stopped_before_load(result, run_dir, f"--prometheus-port {port}: cannot listen on 127.0.0.1:{port}")
