"""MDKClient and MDKUser: every bad Gateway answer is a named failure and the run goes on (against FakeGateway, a
named fake below the client seam), and the per-IP rate limit of the real stand-in seen by one client and not with
``--mdk-forwarded-for`` (real Locust processes)."""

from __future__ import annotations

import csv
import json
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from locust.event import Events

from swarmgauge.targets.launch import child_env, launch_target
from swarmgauge.users import mdk_client, mdk_user
from tests import REPO_ROOT

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
DEVICES = ["ok-1", "junk-1", "gone-1", "hang-1", "null-1", "err-1"]
GOOD_METRICS = {"snap": {"success": True}, "hashrate_avg": 110.0, "power": 3300}
HANG_S = 3.0


class FakeGateway:
    """A misbehaving Gateway: each device id stands for one kind of bad answer; odd summaries lack ``devices``."""

    def __init__(self) -> None:
        self.summaries = 0
        self.gone_reads = 0
        self.peers: set[tuple[str, int]] = set()  # the client ends of the connections answered on
        self.echo_status: int | None = None  # set: /echo answers this status (else the 500 of an unknown device)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def send(self, status: int, body: bytes) -> None:
                fake.peers.add(self.client_address)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:
                    pass  # the client gave up on a hung answer and closed the connection

            def do_GET(self) -> None:
                self.send(*fake.answer(self.path))

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send(*fake.answer(self.path, post=True))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, path: str, post: bool = False) -> tuple[int, bytes]:
        if path.startswith("/echo") and self.echo_status is not None:
            return self.echo_status, b'{"statusCode":%d,"error":"-","message":"no echo"}' % self.echo_status
        if path == "/api/fleet/summary":
            self.summaries += 1
            if self.summaries % 2 == 0:
                return 200, json.dumps({"deviceCount": len(DEVICES)}).encode()
            return 200, json.dumps(
                {
                    "deviceCount": len(DEVICES),
                    "devices": [{"deviceId": d, "hashrateThs": 1, "powerW": 1} for d in DEVICES],
                }
            ).encode()
        device = path.split("/")[4] if path.startswith("/api/fleet/device/") else ""
        if post:
            status = "REJECTED" if device == "ok-1" else "QUEUED"
            return 200, json.dumps(
                {"result": {"status": status, "error": "ERR_WORKER_NOT_ROUTABLE: w0", "commandId": "c1"}}
            ).encode()
        if device == "junk-1":
            return 200, b"<html>proxy error</html>"
        if device == "gone-1":
            self.gone_reads += 1
            if self.gone_reads > 1:
                return 404, b'{"statusCode":404,"error":"Not Found","message":"ERR_DEVICE_NOT_FOUND"}'
        if device == "hang-1":
            time.sleep(HANG_S)
        if device == "null-1":
            return 200, b'{"deviceId":"null-1","metrics":null}'
        if device == "err-1":
            return 200, b'{"deviceId":"err-1","metrics":{"snap":{"success":true},"power":{"error":"ECONNREFUSED"}}}'
        if device == "":
            return 500, b'{"statusCode":500,"error":"Internal Server Error","message":"ERR_MDK_CLIENT_UNAVAILABLE"}'
        return 200, json.dumps({"deviceId": device, "metrics": GOOD_METRICS}).encode()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake():
    gateway = FakeGateway()
    yield gateway
    gateway.stop()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Recorder:
    def __init__(self) -> None:
        self.events = Events()
        self.seen: list[dict] = []
        self.events.request.add_listener(lambda **kw: self.seen.append(kw))

    def last(self) -> str:
        exc = self.seen[-1]["exception"]
        return "ok" if exc is None else repr(exc)


def test_each_bad_answer_is_its_own_named_failure(fake):
    recorder = Recorder()
    client = mdk_client.MDKClient(fake.url, recorder.events, timeout=0.5)
    assert [d["deviceId"] for d in client.summary(expect_devices=6)["devices"]] == DEVICES
    assert client.summary() is None and recorder.last() == "BadResponse(summary without devices/deviceCount)"
    assert client.telemetry("junk-1") is None and recorder.last() == "BadResponse(HTTP 200 body is not JSON)"
    assert client.telemetry("gone-1") == GOOD_METRICS
    assert client.telemetry("gone-1") is None and isinstance(client.last_error, mdk_client.DeviceNotFound)
    assert recorder.last() == "DeviceNotFound(ERR_DEVICE_NOT_FOUND)" and client.last_error.status == 404
    started = time.monotonic()
    assert client.telemetry("hang-1") is None and recorder.last().startswith("GatewayTimeout(")
    assert time.monotonic() - started < HANG_S  # bounded by the client's timeout, not the hang
    assert client.telemetry("null-1") is None and recorder.last() == "NullMetrics(metrics is null)"
    assert client.telemetry("err-1") is None and recorder.last() == "MetricError(power: ECONNREFUSED)"
    assert client.action("ok-1") is None and recorder.last() == "Rejected(ERR_WORKER_NOT_ROUTABLE)"
    assert client.action("junk-1") == "c1"
    assert client.summary(expect_devices=7) is None and recorder.last() == "FleetShort(deviceCount below 7)"
    assert client.echo() is False and recorder.last() == "GatewayError(ERR_MDK_CLIENT_UNAVAILABLE)"
    refused = mdk_client.MDKClient(f"http://127.0.0.1:{closed_port()}", recorder.events, timeout=0.5)
    assert refused.summary() is None and recorder.last().startswith("GatewayUnreachable(")
    assert all(e["request_type"] == "MDK" and e["response_time"] >= 0 for e in recorder.seen)


@pytest.mark.parametrize(
    ("status", "connected", "failure"),
    [
        (200, True, "ok"),
        (404, True, "ok"),  # a Gateway without /echo keeps the connection just the same
        (429, False, "MDKRateLimited(HTTP 429)"),
        (None, False, "GatewayError(ERR_MDK_CLIENT_UNAVAILABLE)"),  # the fake's 500
    ],
)
def test_connect_is_one_counted_request_of_its_own_name_on_the_connection_the_next_request_uses(
    fake, status, connected, failure
):
    """The burst's users connect before the burst (the page's harness has its client connected); the Gateway sees
    that request, so the run counts it, as ``MDK connect``, its failure named as any request's."""
    fake.echo_status = status
    recorder = Recorder()
    client = mdk_client.MDKClient(fake.url, recorder.events, timeout=0.5)
    assert client.connect() is connected
    assert [(e["request_type"], e["name"]) for e in recorder.seen] == [("MDK", "connect")]
    assert recorder.last() == failure
    assert client.action("ok-2") == "c1" and len(recorder.seen) == 2
    assert len(fake.peers) == 1  # the submit went on the connection connect() opened


def test_a_connect_refused_is_a_counted_gateway_unreachable():
    recorder = Recorder()
    refused = mdk_client.MDKClient(f"http://127.0.0.1:{closed_port()}", recorder.events, timeout=0.5)
    assert refused.connect() is False
    assert [e["name"] for e in recorder.seen] == ["connect"] and recorder.last().startswith("GatewayUnreachable(")


@pytest.mark.parametrize("url", ["mark://127.0.0.1:1", "http://"])
def test_a_bad_base_url_is_a_usage_error(url):
    with pytest.raises(mdk_client.UsageError):
        mdk_client.MDKClient(url)


@pytest.mark.parametrize("text", ["telemetry=x", "reads=1", "telemetry=0", "telemetry=-1"])
def test_bad_weights_are_usage_errors(text):
    with pytest.raises(mdk_client.UsageError):
        mdk_user.parse_weights(text)


LOCUSTFILE = """
import os

import gevent
from locust import constant, events
import swarmgauge.locust  # the listeners: Locust's --csv tables get the run's final figures
from swarmgauge.users.mdk_user import MDKUser

STOP_AFTER = int(os.environ.get("MDK_TEST_STOP_AFTER", "0"))  # requests after discovery; 0: run until -t
_seen = [0]
_environments = []


class FleetUser(MDKUser):
    abstract = False
    wait_time = constant(float(os.environ.get("MDK_TEST_WAIT", "0.02")))


@events.init.add_listener
def _keep(environment, **_kwargs):
    _environments.append(environment)


@events.request.add_listener
def _stop_after(name, **_kwargs):
    if STOP_AFTER and name != "discover":
        _seen[0] += 1
        if _seen[0] == STOP_AFTER:
            gevent.spawn(_environments[0].runner.quit)


"""


def run_locust(
    tmp_path: Path, host: str, users: int, env: dict, *args: str, seconds: str = "4s"
) -> tuple[subprocess.CompletedProcess, list[dict], list[dict]]:
    locustfile = tmp_path / "mdk_locustfile.py"
    locustfile.write_text(LOCUSTFILE)
    prefix = tmp_path / f"run{len(list(tmp_path.glob('run*_stats.csv')))}"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "locust",
            "-f",
            str(locustfile),
            "--headless",
            "--host",
            host,
            "-u",
            str(users),
            "-r",
            str(users),
            "-t",
            seconds,
            "--csv",
            str(prefix),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=child_env(env),
        cwd=REPO_ROOT,
    )
    with open(f"{prefix}_stats.csv", newline="") as handle:
        stats = list(csv.DictReader(handle))
    with open(f"{prefix}_failures.csv", newline="") as handle:
        failures = list(csv.DictReader(handle))
    return result, stats, failures


def _by_error(failures: list[dict]) -> dict[str, int]:
    found: dict[str, int] = {}
    for row in failures:
        found[row["Error"]] = found.get(row["Error"], 0) + int(row["Occurrences"])
    return found


USERS = 3


def test_a_real_run_records_every_bad_answer_by_class_and_goes_on(fake, tmp_path):
    result, stats, failures = run_locust(
        tmp_path,
        fake.url,
        USERS,
        {"MDK_TEST_STOP_AFTER": "300"},  # a count ends the run, so a slow machine still meets every bad answer
        "--mdk-timeout",
        "0.3",
        "--mdk-expect-devices",
        "6",
        "--mdk-weights",
        "telemetry=4,summary=1,alerts=1,action=4",
        seconds="90s",
    )
    assert result.returncode == 1, result.stderr[-2000:]  # request failures, no crash
    assert "Traceback" not in result.stderr
    by_error = _by_error(failures)
    assert {"BadResponse", "DeviceNotFound", "GatewayTimeout", "NullMetrics", "MetricError", "Rejected"} <= {
        error.split("(")[0] for error in by_error
    }, by_error
    assert by_error["BadResponse(summary without devices/deviceCount)"] >= 1
    assert by_error["BadResponse(HTTP 200 body is not JSON)"] >= 1
    assert by_error["Rejected(ERR_WORKER_NOT_ROUTABLE)"] >= 1
    assert 1 <= by_error["DeviceNotFound(ERR_DEVICE_NOT_FOUND)"] <= USERS  # each user forgets it once it is gone
    telemetry = next(r for r in stats if r["Name"] == "telemetry")
    assert int(telemetry["Request Count"]) - int(telemetry["Failure Count"]) > 5  # good reads went on throughout


def test_a_refused_connection_is_gateway_unreachable_and_the_run_goes_on(tmp_path):
    # 4 s: Locust's run-time timer may fire up to ~2 s early after a slow start, and the user backs off (0.05 s, 0.1 s..)
    result, stats, failures = run_locust(tmp_path, f"http://127.0.0.1:{closed_port()}", 1, {}, seconds="4s")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert {e.split("(")[0] for e in _by_error(failures)} == {"GatewayUnreachable"}
    discover = next(r for r in stats if r["Name"] == "discover")
    assert int(discover["Request Count"]) == int(discover["Failure Count"]) >= 3  # tried again, after its backoff


@pytest.fixture(scope="module")
def limited_stand_in():
    with launch_target("mdk", ["--devices", "4", "--rate-limit", "300"]) as target:  # 300 per 60 s, the MDK default
        yield target


def test_one_client_is_rate_limited_after_300_requests_in_a_minute(limited_stand_in, tmp_path):
    # a count, not a time, ends the run: 330 reads past the limit of 300 (within its minute) however slow the machine
    result, stats, failures = run_locust(
        tmp_path,
        limited_stand_in.url,
        1,
        {"MDK_TEST_WAIT": "0", "MDK_TEST_STOP_AFTER": "330"},
        "--mdk-weights",
        "alerts=1",
        seconds="50s",
    )
    total = next(r for r in stats if r["Name"] == "Aggregated")
    limited = sum(int(r["Occurrences"]) for r in failures if r["Error"] == "MDKRateLimited(HTTP 429)")
    assert limited > 0 and int(total["Failure Count"]) == limited, stats
    assert int(total["Request Count"]) - limited == 300


def test_with_forwarded_for_many_users_share_no_limit(limited_stand_in, tmp_path):
    result, stats, failures = run_locust(
        tmp_path,
        limited_stand_in.url,
        10,
        {"MDK_TEST_WAIT": "0.05", "MDK_TEST_STOP_AFTER": "400"},
        "--mdk-weights",
        "alerts=1",
        "--mdk-forwarded-for",
        seconds="50s",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    total = next(r for r in stats if r["Name"] == "Aggregated")
    assert int(total["Request Count"]) > 300 and int(total["Failure Count"]) == 0 and not failures


class PartialSummaries:
    """Stands in for MDKClient below the users' discovery: each summary has the devices that answered that time."""

    answers = [["d1", "d2"], None, ["d2", "d3"], ["d4"]]  # None: a summary that failed as a whole

    def __init__(self, *_args, **_kwargs) -> None:
        self.asked = 0

    def summary(self, *_args, **_kwargs):
        answer = self.answers[min(self.asked, len(self.answers) - 1)]
        self.asked += 1
        return None if answer is None else {"deviceCount": len(answer), "devices": [{"deviceId": d} for d in answer]}

    def close(self) -> None:
        pass


def test_the_discovery_before_the_load_asks_again_until_every_device_answered_and_keeps_each_that_did(monkeypatch):
    """A summary leaves out a device whose read failed: the discovery before the load keeps every device that answered
    any of its summaries, in the order they first did, and stops asking once the profile's count is reached."""
    from types import SimpleNamespace

    monkeypatch.setattr(mdk_user, "MDKClient", PartialSummaries)
    monkeypatch.setattr(mdk_user, "DISCOVERY_RETRY_S", 0.0)
    environment = SimpleNamespace(parsed_options=SimpleNamespace(mdk_timeout=1.0))
    found = mdk_user.discover_before_load(environment, "http://127.0.0.1:9", 4)
    assert found is not None and found[0] == 4 and found[2] == 4  # four summaries sent, none of them the run's
    assert mdk_user.fleet_cache(environment).device_ids == ["d1", "d2", "d3", "d4"]
    monkeypatch.setattr(mdk_user, "DISCOVERY_S", 0.0)  # out of time after the first summary: what it has
    assert mdk_user.discover_before_load(SimpleNamespace(parsed_options=None), "http://127.0.0.1:9", 4)[0] == 2


class AsideUser(mdk_user.MDKUser):
    host = "http://127.0.0.1:9"


def test_readers_leave_a_device_set_aside_for_a_drill_while_another_is_left(monkeypatch):
    from locust.env import Environment

    from swarmgauge.core import hooks

    monkeypatch.setattr(hooks, "next_row", lambda user: None)  # no --feeder
    environment = Environment(user_classes=[AsideUser])
    user = AsideUser(environment)
    user.device_ids = ["timed", "other-1", "other-2"]
    mdk_user.fleet_cache(environment).set_aside("timed")
    assert {user.pick_device() for _ in range(200)} == {"other-1", "other-2"}
    user.device_ids = ["timed"]
    assert user.pick_device() == "timed"  # the only device is still read
