"""``swarmgauge mark``: usage and transport errors give one line on stderr and exit 2."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "swarmgauge.cli", "mark", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_url_that_is_not_mark_is_a_usage_error():
    result = run_cli("fetch", "http://127.0.0.1/doc.md")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "not a mark:// URL" in result.stderr


def test_malformed_metadata_is_a_usage_error():
    result = run_cli("fetch", "mark://127.0.0.1:6309/doc.md", "-m", "novalue")
    assert result.returncode == 2 and "KEY=VALUE" in result.stderr


def test_unreachable_server_is_a_transport_error_in_one_line():
    result = run_cli("fetch", f"mark://127.0.0.1:{free_udp_port()}/doc.md", "--insecure", "--timeout", "1")
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("swarmgauge mark: "), result.stderr


def test_the_token_never_appears_in_the_error_line():
    result = run_cli(
        "publish",
        f"mark://127.0.0.1:{free_udp_port()}/doc.md",
        "--insecure",
        "--timeout",
        "1",
        "--token",
        "very-secret-token",
    )
    assert result.returncode == 2
    assert "very-secret-token" not in result.stderr + result.stdout


# --- against the reference server ---------------------------------------------------------------------------------

import pytest  # noqa: E402

from swarmgauge.targets.launch import launch_target  # noqa: E402

GOLDENS = ROOT / "tests" / "targets" / "mark" / "goldens"


@pytest.fixture(scope="module")
def server():
    with launch_target(
        "mark", ["--port", "0", "--clock", "2026-01-01T00:00:00Z", "--publish-token", "cli-secret-token"]
    ) as running:
        yield running


def run_with_stdin(data: bytes, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "swarmgauge.cli", "mark", *args], cwd=ROOT, capture_output=True, input=data, timeout=60
    )


def test_publish_from_stdin_then_fetch_prints_status_metadata_and_body(server):
    created = run_with_stdin(
        b"# Hello\n\nBody.\n",
        "PUBLISH",
        server.url + "/cli/hello.md",
        "--insecure",
        "--token",
        "cli-secret-token",
        "-m",
        "expected-version=0",
        "-m",
        "tags=a, b",
    )
    assert created.returncode == 0, created.stderr
    assert created.stdout.decode().startswith("status: created\n")
    assert b"cli-secret-token" not in created.stdout + created.stderr
    fetched = run_cli("FETCH", server.url + "/cli/hello.md", "--insecure")
    assert fetched.returncode == 0
    assert fetched.stdout.startswith("status: ok\n")
    assert "tags: a,b\n" in fetched.stdout and fetched.stdout.endswith("# Hello\n\nBody.\n")


def test_other_statuses_exit_1(server):
    missing = run_cli("fetch", server.url + "/cli/none.md", "--insecure")
    assert missing.returncode == 1 and missing.stdout.startswith("status: not-found\n")
    unauthorized = run_with_stdin(b"# X\n", "publish", server.url + "/cli/x.md", "--insecure")
    assert unauthorized.returncode == 1


def test_list_lookup_and_versions(server):
    assert run_cli("list", server.url + "/", "--insecure").returncode == 0
    assert run_cli("versions", server.url + "/cli/hello.md", "--insecure").returncode in (0, 1)
    lookup = run_cli("lookup", server.url + "/", "--insecure", "-m", "query=hello")
    assert lookup.returncode == 0 and lookup.stdout.startswith("status: ok\n")


def test_raw_sends_exact_bytes_and_writes_exact_bytes(server):
    result = run_with_stdin(b"FETCH /docs/missing.md\n", "raw", server.url, "--insecure")
    assert result.returncode == 1
    assert result.stdout == (GOLDENS / "fetch-not-found.golden").read_bytes()


def test_verification_on_against_the_dev_certificate_fails_in_one_line(server):
    result = run_cli("fetch", server.url + "/health")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "certificate" in result.stderr.lower()


def test_ca_file_verifies_the_dev_certificate(tmp_path):
    pem = tmp_path / "dev.pem"
    with launch_target("mark", ["--port", "0", "--cert-out", str(pem)]) as running:
        port = running.url.rsplit(":", 1)[1]
        result = run_cli("fetch", f"mark://localhost:{port}/health", "--ca", str(pem))
    assert result.returncode == 0, result.stderr
