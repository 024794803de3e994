"""``swarmgauge target mark`` as scripts use it: the one ready line, clean stop on signals, one-line usage errors."""

from __future__ import annotations

import re
import signal
import subprocess
import sys

import pytest

from swarmgauge.targets.launch import TargetStartError, child_env, launch_target
from tests import REPO_ROOT

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs


def run_cli(*args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "swarmgauge.cli", "target", "mark", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=child_env(),
        cwd=REPO_ROOT,
    )


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ready_line_then_clean_stop(sig):
    server = launch_target("mark", ["--port", "0"])
    assert re.fullmatch(r"mark://127\.0\.0\.1:\d+", server.url)
    server.process.send_signal(sig)
    assert server.process.wait(15) == 0
    rest = server.process.stdout.read().decode()
    server.stop()
    assert rest == ""


def test_stops_by_itself_after_max_seconds():
    result = run_cli("--port", "0", "--max-seconds", "0.5")
    assert result.returncode == 0
    assert re.fullmatch(r"ready mark://127\.0\.0\.1:\d+\n", result.stdout)


def test_ipv6_loopback_url():
    with launch_target("mark", ["--host", "::1", "--port", "0"]) as server:
        assert re.fullmatch(r"mark://\[::1\]:\d+", server.url)


@pytest.mark.parametrize(
    "args, says",
    [
        (["--tokens", "/nonexistent/tokens.toml"], "--tokens"),
        (["--seed", "/nonexistent/dir"], "not a directory"),
        (["--rate-limit", "-1"], "must not be negative"),
        (["--backend-concurrency", "-1"], "must not be negative"),
        (["--commit-interval", "soon"], "not a duration"),
        (["--commit-cost", "a while"], "not a duration"),
        (["--commit-order", "lifo"], "invalid choice"),
        (["--clock", "yesterday"], "not an RFC 3339 time"),
        (["--backend-stall-ms", "-5"], "must not be negative"),
        (["--backend-stall-ms", "50", "--backend-stall-reads", "1"], "--backend-stall-reads must be at least 2"),
    ],
)
def test_usage_errors_exit_2_with_one_line(args, says):
    result = run_cli("--port", "0", *args)
    assert result.returncode == 2
    assert says in result.stderr
    assert result.stdout == ""


def test_bad_tokens_file_is_one_line(tmp_path):
    bad = tmp_path / "tokens.toml"
    bad.write_text('[tokens.x]\nhash = "md5-abc"\npaths = ["/**"]\noperations = ["publish"]\n')
    result = run_cli("--port", "0", "--tokens", str(bad))
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "tokens.x.hash" in result.stderr


def test_port_in_use_is_a_usage_error():
    with launch_target("mark", ["--port", "0"]) as server:
        port = server.url.rsplit(":", 1)[1]
        result = run_cli("--port", port)
    assert result.returncode == 2
    assert "cannot listen" in result.stderr


def test_launcher_reports_a_target_that_exits():
    with pytest.raises(TargetStartError, match="exited with status 2"):
        launch_target("mark", ["--port", "0", "--rate-limit", "-5"])


def test_raw_tokens_are_never_printed():
    server = launch_target("mark", ["--port", "0", "--publish-token", "very-secret-raw-token", "-v"])
    server.process.send_signal(signal.SIGTERM)
    server.process.wait(15)
    stdout = server.process.stdout.read().decode()
    stderr = server.stderr_tail(limit=1 << 20)
    server.stop()
    assert "served 0 requests" in stderr
    assert "very-secret-raw-token" not in stdout + stderr
