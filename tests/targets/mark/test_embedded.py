"""The embedded default's plumbing: tokens travel in the environment and are never shown."""

from __future__ import annotations

import pytest

from swarmgauge.protocols.mark import encode_request, parse_response
from swarmgauge.targets.embedded import redact_args
from swarmgauge.targets.launch import launch_target
from swarmgauge.targets.mark.cli import PUBLISH_TOKEN_ENV

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs


def test_redact_args_hides_publish_tokens():
    shown = redact_args(["--read-delay-ms", "10", "--publish-token", "raw1", "--publish-token=raw2", "--dsn", "pg"])
    assert shown == ["--read-delay-ms", "10", "--publish-token", "***", "--publish-token=***", "--dsn", "***"]


def test_publish_token_from_the_environment(mark_client):
    with launch_target("mark", ["--port", "0"], env={PUBLISH_TOKEN_ENV: "env-token"}) as server:
        client = mark_client(server.url)
        answer = client.raw(encode_request("PUBLISH", "/e.md", {"auth": "env-token"}, b"# E\n"))
        assert parse_response(answer).status == "created"
        assert "env-token" not in " ".join(server.process.args)
