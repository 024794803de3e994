"""The page's simulated provider delay on the real kneo-serv: each run waits that long, and none without it."""

from __future__ import annotations

import json
import time
import urllib.request

import pytest

from swarmgauge.errors import UsageError
from swarmgauge.targets.kneo import KneoService
from swarmgauge.targets.kneo.provider_delay import DELAY_VARIABLE, SITE_DIR, provider_delay_env

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]  # may build the cached kneo-serv venv


def _run_seconds(url: str) -> float:
    body = json.dumps({"input": "hello", "spec_path": "echo.yaml", "target": "agent"}).encode()
    request = urllib.request.Request(f"{url}/v1/runs", data=body, headers={"Content-Type": "application/json"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=30) as response:
        assert json.loads(response.read())["status"] == "completed"
    return time.perf_counter() - started


def test_no_delay_is_no_environment_and_a_negative_one_is_a_usage_error():
    assert provider_delay_env(0) == {}
    with pytest.raises(UsageError, match="provider-delay"):
        provider_delay_env(-1)
    env = provider_delay_env(0.25)
    assert env[DELAY_VARIABLE] == "0.25" and env["PYTHONPATH"].startswith(str(SITE_DIR))


def test_each_run_waits_for_its_simulated_provider(kneo_venv):
    with KneoService(store="sqlite", extra_env=provider_delay_env(0.6)) as delayed:
        _run_seconds(delayed.url)  # the first run compiles the spec
        waited = min(_run_seconds(delayed.url) for _ in range(3))
    with KneoService(store="sqlite") as plain:
        _run_seconds(plain.url)
        quick = min(_run_seconds(plain.url) for _ in range(3))
    assert waited >= 0.6 and quick < 0.6
