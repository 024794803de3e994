"""The web form's START is checked as the command line is (issue 33, point 5): an empty host for a User that needs
one, and a number out of its option's range, are refused with one message, and no run starts."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request

import pytest

from tests.listeners.webui_harness import web_locust

HTTP_USERS = """
from locust import FastHttpUser, constant, task

import swarmgauge.locust  # noqa: F401


class PageUser(FastHttpUser):
    wait_time = constant(1)

    @task
    def page(self) -> None:
        self.client.get("/")
"""


def _start(url: str, fields: dict[str, str]) -> dict:
    body = urllib.parse.urlencode(fields).encode()
    with urllib.request.urlopen(urllib.request.Request(url + "/swarm", data=body), timeout=30) as answer:
        return json.loads(answer.read())


@pytest.mark.integration
def test_start_refuses_an_empty_host_and_a_nan_option(tmp_path):
    locustfile = tmp_path / "locustfile.py"
    locustfile.write_text(HTTP_USERS)
    with web_locust(locustfile, "--run-dir", str(tmp_path / "runs"), log_dir=tmp_path) as web:
        refused = _start(web.url, {"user_count": "1", "spawn_rate": "1", "host": ""})
        assert refused["success"] is False, refused
        assert "PageUser needs --host http(s)://HOST:PORT" in refused["message"]
        assert web.get_json("/swarmgauge/api/live")["state"] == "ready"
        nan = _start(
            web.url,
            {"user_count": "1", "spawn_rate": "1", "host": "http://127.0.0.1:9", "sample_interval": "nan"},
        )
        assert nan["success"] is False and "--sample-interval nan" in nan["message"], nan
        assert web.get_json("/swarmgauge/api/live")["state"] == "ready"
