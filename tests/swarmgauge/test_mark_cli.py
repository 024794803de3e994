"""``swarmgauge mark``: usage and transport errors give one line on stderr and exit 2."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "swarmgauge.cli", "mark", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)


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
    result = run_cli("publish", f"mark://127.0.0.1:{free_udp_port()}/doc.md", "--insecure", "--timeout", "1",
                     "--token", "very-secret-token")
    assert result.returncode == 2
    assert "very-secret-token" not in result.stderr + result.stdout
