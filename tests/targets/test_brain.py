"""The 2dph brain stand-in over real HTTP: routes, the semaphore's blocking, and both fault modes."""

from __future__ import annotations

import time

import psutil
import pytest
import requests

from swarmgauge.targets.launch import TargetStartError, launch_target

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs


@pytest.fixture
def brain():
    started = []

    def start(*args: str):
        target = launch_target("brain", ["--port", "0", *args])
        started.append(target)
        return target

    yield start
    for target in started:
        target.stop()


def test_routes_and_errors(brain):
    url = brain().url
    assert requests.get(url + "/health", timeout=5).json() == {"status": "ok"}
    found = requests.get(url + "/search", params={"q": "quic memory", "n": "5"}, timeout=5).json()
    assert 0 < found["count"] <= 5 and found["results"][0]["id"].startswith("leaf-")
    leaf = requests.get(url + "/get", params={"id": found["results"][0]["id"], "body": "1"}, timeout=5).json()
    assert "body" in leaf
    assert requests.get(url + "/search", timeout=5).status_code == 400
    assert requests.get(url + "/search", params={"q": "x", "n": "500"}, timeout=5).status_code == 400
    assert requests.get(url + "/get", params={"id": "nope"}, timeout=5).status_code == 404
    assert requests.get(url + "/nowhere", timeout=5).status_code == 404
    assert requests.get(url + "/openapi.json", timeout=5).json()


def test_the_same_corpus_every_start(brain):
    first, second = brain(), brain()
    a = requests.get(first.url + "/search", params={"q": "kneo queue"}, timeout=5).json()
    b = requests.get(second.url + "/search", params={"q": "kneo queue"}, timeout=5).json()
    assert a == b


def test_leak_mode_grows_rss(brain):
    target = brain("--leak-per-search", "1024", "--search-ms", "0")
    before = psutil.Process(target.pid).memory_info().rss
    for _ in range(60):
        requests.get(target.url + "/search", params={"q": "heap"}, timeout=5)
    grown = psutil.Process(target.pid).memory_info().rss - before
    assert grown > 50 * (1 << 20)


def test_pool_exhaustion_turns_every_backend_route_into_502_but_health(brain):
    url = brain("--pool-exhaustion", "3", "--search-ms", "0").url
    statuses = [requests.get(url + "/search", params={"q": "quic"}, timeout=5).status_code for _ in range(5)]
    assert statuses == [200, 200, 200, 502, 502]
    for route in ("/stats", "/audit", "/get?id=leaf-0001"):
        answer = requests.get(url + route, timeout=5)
        assert answer.status_code == 502 and "buffer pool is full" in answer.json()["error"]
    assert requests.get(url + "/health", timeout=5).status_code == 200


def test_stateless_mcp(brain):
    url = brain().url
    init = requests.post(
        url + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}, timeout=5
    )
    assert init.json()["result"]["protocolVersion"] == "2024-11-05" and "Mcp-Session-Id" not in init.headers
    note = requests.post(url + "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, timeout=5)
    assert (note.status_code, note.json()) == (200, {})
    assert requests.get(url + "/mcp", timeout=5).status_code == 405


def test_refuses_non_loopback_and_names_itself_a_stand_in():
    with pytest.raises(TargetStartError, match="loopback only"):
        launch_target("brain", ["--host", "0.0.0.0", "--port", "0"])
    import subprocess
    import sys

    from swarmgauge.targets.launch import child_env
    from tests import REPO_ROOT

    shown = subprocess.run(
        [sys.executable, "-m", "swarmgauge.cli", "target", "brain", "--help"],
        capture_output=True,
        text=True,
        timeout=30,
        env=child_env(),
        cwd=REPO_ROOT,
    ).stdout
    assert "STAND-IN" in shown


def test_the_leak_reloads_the_model_on_every_search_and_the_fix_loads_it_once(brain):
    leaking = brain("--leak-per-search", "256", "--model-load-ms", "5", "--search-ms", "0").url
    fixed = brain("--model-load-ms", "5", "--search-ms", "0").url
    for url in (leaking, fixed):
        for _ in range(4):
            assert requests.get(url + "/search", params={"q": "heap"}, timeout=10).status_code == 200
    assert requests.get(leaking + "/stats", timeout=5).json()["model_loads"] == 4
    assert requests.get(fixed + "/stats", timeout=5).json()["model_loads"] == 1
    assert "brain_model_loads 1.0" in requests.get(fixed + "/metrics", timeout=5).text


def test_a_negative_model_load_time_is_no_load_time():
    from swarmgauge.targets.brain_service import Brain

    standin = Brain(model_load_ms=-1, search_ms=0)
    standin.search({"q": "heap"})
    assert standin.model_loads == 0 and standin.model_load_s == 0.0


def test_the_zombie_fault_leaves_children_unreaped_up_to_its_limit_and_the_fix_leaves_none(brain):
    zombie = brain("--zombies-per-search", "3", "--search-ms", "0").url
    fixed = brain("--search-ms", "0").url
    for url in (zombie, fixed):
        for _ in range(5):
            assert requests.get(url + "/search", params={"q": "heap"}, timeout=10).status_code == 200
    deadline = time.monotonic() + 10  # the last child may still be exiting
    while requests.get(zombie + "/stats", timeout=5).json()["zombie_children"] < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert requests.get(zombie + "/stats", timeout=5).json()["zombie_children"] == 3  # the kernel's count, capped
    assert "brain_zombie_children 3.0" in requests.get(zombie + "/metrics", timeout=5).text
    assert requests.get(fixed + "/stats", timeout=5).json()["zombie_children"] == 0
