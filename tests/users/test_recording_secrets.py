"""No secret in any file or console line of a run: failures redacted where events are fired, run files private."""

from __future__ import annotations

import json
import stat
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from swarmgauge.redaction import REDACTED, register_secret
from swarmgauge.run_folders import resolve
from swarmgauge.users.recording import RedactedFailure, redacted_exception
from tests.listeners.sim_run import ROOT, run_local

TOKEN = "tok-4f9c2e7a1b"
EMBEDDED_TOKEN = "pub-8d3e6b0c55"


class _Plain(Exception):
    pass


class _Built(Exception):
    def __init__(self, code: int, text: str) -> None:
        super().__init__(f"{code}: {text}")


def test_a_failure_message_holding_a_secret_keeps_its_class_with_the_secret_hidden():
    register_secret(TOKEN)
    redacted = redacted_exception(_Plain(f"server said Bearer {TOKEN}"))
    assert type(redacted) is _Plain and str(redacted) == f"server said Bearer {REDACTED}"


def test_a_class_that_cannot_be_rebuilt_becomes_a_named_redacted_failure():
    register_secret(TOKEN)
    redacted = redacted_exception(_Built(401, f"bad token {TOKEN}"))
    assert isinstance(redacted, RedactedFailure)
    assert str(redacted) == f"_Built: 401: bad token {REDACTED}"


def test_a_failure_without_a_secret_is_passed_on_as_it_is():
    error = _Plain("no such document")
    assert redacted_exception(error) is error


class _EchoHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"unauthorized: {self.headers.get('Authorization')}".encode()
        self.send_response(401)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args) -> None:
        pass


@contextmanager
def _echo_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _files_under(folder: Path) -> list[Path]:
    return [path for path in folder.rglob("*") if path.is_file()]


def _assert_private(paths: list[Path]) -> None:
    for path in paths:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o077 == 0, f"{path} is {oct(mode)}"


@pytest.mark.integration
def test_a_server_echoing_the_token_leaves_no_trace_of_it_and_every_file_is_private(tmp_path):
    run_dir = tmp_path / "run"
    with _echo_server() as url:
        result = run_local(
            url,
            "--steps",
            "1",
            "--step-time",
            "3",
            "--run-dir",
            str(run_dir),
            "--csv",
            str(run_dir / "locust"),
            "--html",
            str(run_dir / "locust.html"),
            locustfile=ROOT / "tests/users/echo_locustfile.py",
            env={"ECHO_TOKEN": TOKEN},
            timeout=120,
        )
    assert result.returncode == 1, result.stderr[-2000:]  # request errors, as Locust exits
    assert "EchoedError" in result.stdout + result.stderr  # the console error report is there, redacted
    assert TOKEN not in result.stdout and TOKEN not in result.stderr
    files = _files_under(run_dir)
    names = {path.name for path in files}
    assert {"run.json", "steps.csv", "locust_failures.csv", "locust_stats.csv", "locust.html"} <= names
    assert "Bearer ***" in (run_dir / "locust_failures.csv").read_text()
    for path in files:
        assert TOKEN.encode() not in path.read_bytes(), path
    _assert_private(files)
    assert stat.S_IMODE(resolve(run_dir).stat().st_mode) == 0o700  # the run's folder; --run-dir is the user's


@pytest.mark.integration
def test_a_token_inside_the_embedded_targets_arguments_stays_out_of_the_run(tmp_path):
    run_dir = tmp_path / "run"
    result = run_local(
        "",
        "FetchUser",
        "--steps",
        "1",
        "--step-time",
        "3",
        "--run-dir",
        str(run_dir),
        "--mark-embedded-args",
        f"--publish-token {EMBEDDED_TOKEN} --read-delay-ms 1",
        locustfile=ROOT / "locustfiles/demarkus_reads.py",
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert EMBEDDED_TOKEN not in result.stdout and EMBEDDED_TOKEN not in result.stderr
    run_json = (resolve(run_dir) / "run.json").read_text()
    assert "--publish-token ***" in run_json
    recorded = json.loads(run_json)["embedded_targets"]["mark"]["args"]  # so the report can check the page's knobs
    assert "--read-delay-ms" in recorded and "***" in recorded
    for path in _files_under(run_dir):
        assert EMBEDDED_TOKEN.encode() not in path.read_bytes(), path
