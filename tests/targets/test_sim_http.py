"""sim-http, the ground-truth target: seeded delays, its own record of each request, capacity, stall and status."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from swarmgauge.errors import UsageError
from swarmgauge.targets.sim_http import SimHttpApp, delay_sampler, serve
from tests.listeners.sim_run import ROOT, sim_target

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs


def _get(url: str, timeout: float = 10.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_delays_are_seeded_and_in_range():
    first, second = delay_sampler("uniform:40:160", 3), delay_sampler("uniform:40:160", 3)
    drawn = [first() for _ in range(200)]
    assert drawn == [second() for _ in range(200)]
    assert all(40 <= d <= 160 for d in drawn)
    assert delay_sampler("const:7", 1)() == 7
    assert delay_sampler("lognormal:50:0.5", 1)() > 0


@pytest.mark.parametrize("spec", ["gauss:1:2", "uniform:9:1", "const:-1", "exp:0", "uniform:a:b", "const"])
def test_bad_delay_specs_are_usage_errors(spec):
    with pytest.raises(UsageError):
        delay_sampler(spec, 1)


def test_loopback_only_and_capacity_at_least_one():
    with pytest.raises(UsageError, match="loopback only"):
        serve(SimHttpApp(), host="0.0.0.0")
    with pytest.raises(UsageError, match="at least 1"):
        SimHttpApp(capacity=0)


def test_a_bad_delay_on_the_command_line_is_one_line_and_exit_2():
    result = subprocess.run(
        [sys.executable, "-m", "swarmgauge.targets.sim_http", "--delay", "zigzag:1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "sim-http: --delay 'zigzag:1': expected const:MS, uniform:LO:HI, exp:MEAN or lognormal:MEDIAN:SIGMA"
    ]


def test_every_request_is_recorded_with_step_id_delay_and_served_time():
    with sim_target("--delay", "const:30") as target:
        assert _get(f"{target.url}/item?step=2&id=a")[0] == 200
        assert _get(f"{target.url}/item?step=2&id=b&status=503") == (503, b"simulated failure\n")
        assert _get(f"{target.url}/__health")[0] == 200  # control paths are not recorded
        records = target.records()
    assert [(r["step"], r["id"], r["status"]) for r in records] == [("2", "a", 200), ("2", "b", 503)]
    for record in records:
        assert record["drawn_ms"] == 30
        assert 30 <= record["held_ms"] <= record["served_ms"]
        assert record["queued_ms"] < 5


def test_capacity_queues_requests_beyond_the_limit():
    import gevent
    from geventhttpclient import HTTPClient

    with sim_target("--delay", "const:200", "--capacity", "1") as target:

        def one(index: int) -> None:
            client = HTTPClient.from_url(target.url, concurrency=1, network_timeout=10)
            client.get(f"/item?id={index}").read()
            client.close()

        gevent.joinall([gevent.spawn(one, i) for i in range(3)], timeout=30)
        records = sorted(target.records(), key=lambda r: r["queued_ms"])
    assert len(records) == 3
    assert records[0]["queued_ms"] < 50
    assert 150 < records[1]["queued_ms"] < 300 and 350 < records[2]["queued_ms"] < 500


def test_a_stall_holds_only_the_requests_that_arrive_during_it():
    with sim_target("--delay", "const:1") as target:
        status, body = _get(f"{target.url}/__stall?seconds=0.5")
        assert status == 200 and "stall_until" in json.loads(body)
        assert _get(f"{target.url}/__stall?seconds=soon")[0] == 400
        _get(f"{target.url}/item?id=held")
        time.sleep(0.6)
        _get(f"{target.url}/item?id=after")
        records = {r["id"]: r for r in target.records()}
        assert _get(f"{target.url}/__reset")[0] == 200
        assert target.records() == []
    assert records["held"]["held_ms"] >= 300
    assert records["after"]["held_ms"] < 100
