"""BrainUser's pieces: the mix, the gates, error classification, and a bad answer from a fake brain."""

from __future__ import annotations

import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from locust.env import Environment

from swarmgauge.errors import UsageError
from swarmgauge.targets.launch import child_env
from swarmgauge.users.brain_client import BackendError, MalformedAnswer, PoolExhausted, classify
from swarmgauge.users.brain_user import BrainUser, gates, parse_mix
from tests import REPO_ROOT

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs


def test_parse_mix():
    assert parse_mix("search:6,get:2,stats:1,audit:1") == {"search": 6, "get": 2, "stats": 1, "audit": 1}
    assert parse_mix("search") == {"search": 1}
    for bad in ("teleport:1", "search:x", "search:-1", "search:0", ""):
        with pytest.raises(UsageError):
            parse_mix(bad)


def test_gates_cover_only_the_endpoints_called():
    assert gates({"search": 1}) == ["GET:/search:p95<1000ms", "GET:/search:fail_ratio<0.01"]
    assert "GET:/get:p95<200ms" in gates(parse_mix("search:6,get:2"))


def test_classify():
    assert isinstance(
        classify(502, b'{"error": "The buffer pool is full and no memory could be freed!"}'), PoolExhausted
    )
    assert type(classify(502, b'{"error": "embedder down"}')) is BackendError
    assert classify(200, b"{}") is None
    assert "HTTP 404" in str(classify(404, b"{}"))


def test_failure_names_do_not_carry_the_body():
    """Locust groups failures by message: distinct bodies must not make distinct failure rows."""
    first, second = classify(500, b"request 1 failed"), classify(500, b"request 2 failed")
    assert str(first) == str(second) == "HTTP 500"
    assert first.detail == "request 1 failed"
    assert str(classify(502, b"embedder 7 down")) == str(classify(502, b"embedder 8 down")) == "HTTP 502"


class FakeBrain(BaseHTTPRequestHandler):
    """A fake brain (below the HTTP seam) whose /stats answers 200 with a body that is not JSON."""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"<html>not json</html>")

    def log_message(self, *args):
        pass


def test_a_200_that_is_not_json_is_a_named_failure_and_the_user_goes_on():
    server = HTTPServer(("127.0.0.1", 0), FakeBrain)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    recorded = []

    class Probe(BrainUser):
        host = f"http://127.0.0.1:{server.server_address[1]}"

    env = Environment(user_classes=[Probe])
    env.events.request.add_listener(lambda **kw: recorded.append(kw))
    user = Probe(env)
    user.on_start()
    user.stats()
    user.search()
    server.shutdown()
    assert [type(r["exception"]) for r in recorded] == [MalformedAnswer, MalformedAnswer]


def test_bad_mix_stops_the_run_with_one_line():
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "locust",
            "-f",
            str(REPO_ROOT / "locustfiles" / "brain_stress.py"),
            "--headless",
            "-t",
            "2s",
            "--host",
            "http://127.0.0.1:9",
            "--brain-mix",
            "teleport:2",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=child_env(),
        cwd=REPO_ROOT,
    )
    assert result.returncode == 2
    assert "unknown endpoint 'teleport'" in result.stderr
