"""The live views of a distributed run in Chromium (a new step row at each step change, the target's memory chart)
and an abort threshold that stops a run against a slow target, with exit code 3 and the reason recorded."""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from types import SimpleNamespace

import gevent
import pytest
from locust.runners import STATE_CLEANUP, STATE_INIT, STATE_RUNNING, STATE_SPAWNING, STATE_STOPPED, STATE_STOPPING
from prometheus_client.parser import text_string_to_metric_families

from swarmgauge.listeners import live, webui
from tests.listeners.sim_run import ROOT, _env, free_port, locust_command, read_steps, run_local, sim_target
from tests.listeners.test_webui import closed_folders, start_from_form
from tests.listeners.webui_harness import browser_page, wait_until, web_locust

HTTP_RAMP = ROOT / "locustfiles" / "http_ramp.py"
SCREENSHOT = "/tmp/sg/webui-tab.png"
LOCUST_TAB_SCREENSHOT = "/tmp/sg/webui-locust-tab.png"
STEP_SECONDS = 6
WAIT_SECONDS = 90.0


HELD_LOCUSTFILE = """
import os
import time

import gevent
from locust import events
from locust.runners import WorkerRunner

import swarmgauge.listeners.all  # noqa: F401
from swarmgauge.shapes import PlanShape  # noqa: F401
from locustfiles import http_ramp

HOLD_AT, HELD, RELEASE = {hold_at!r}, {held!r}, {release!r}


def _hold():
    # a slow start or stop, held open until the test lets it go (bounded)
    open(HELD, "w").close()
    deadline = time.monotonic() + 60
    while not os.path.exists(RELEASE) and time.monotonic() < deadline:
        gevent.sleep(0.1)


@events.test_start.add_listener
def _held_start(environment, **_kwargs):
    if HOLD_AT == "start" and not isinstance(environment.runner, WorkerRunner):
        _hold()


class HeldStopUser(http_ramp.HttpGetUser):
    def on_stop(self):
        if HOLD_AT == "stop":
            _hold()
"""


def _held_locustfile(tmp_path, hold_at: str):
    """A locustfile whose master start (``start``) or users' stop (``stop``) waits for the test's release file."""
    held, release = tmp_path / "held", tmp_path / "release"
    locustfile = tmp_path / f"held_{hold_at}_locustfile.py"
    locustfile.write_text(HELD_LOCUSTFILE.format(hold_at=hold_at, held=str(held), release=str(release)))
    return locustfile, held, release


def _tab_rows(page) -> list[str]:
    """The tab's Aggregated rows, one per step (its rows per request type come before each)."""
    return [
        text for text in page.locator("table tbody tr").all_inner_texts() if "users" in text and "Aggregated" in text
    ]


class FakeRunner:
    """A stand-in for a Locust runner: only the state and the shape greenlet that :func:`live.run_state` reads."""

    def __init__(self, state: str, shape_greenlet: gevent.Greenlet | None) -> None:
        self.state, self.shape_greenlet = state, shape_greenlet


@pytest.mark.parametrize(
    ("state", "shape_running", "shown"),
    [
        (STATE_INIT, True, STATE_SPAWNING),  # a START whose first spawn has not happened yet
        (STATE_INIT, False, STATE_INIT),  # nothing started: the start form
        (STATE_STOPPED, True, STATE_STOPPED),  # a shape stopping itself at its plan's end
        (STATE_RUNNING, True, STATE_RUNNING),
    ],
)
def test_a_start_under_way_reads_spawning_and_every_other_state_reads_as_locust_says(state, shape_running, shown):
    shape = gevent.spawn(gevent.sleep, 30) if shape_running else None
    try:
        environment = SimpleNamespace(runner=FakeRunner(state, shape), web_ui=None)
        assert live.run_state(environment) == shown
    finally:
        if shape is not None:
            shape.kill()


@pytest.mark.parametrize(
    ("state", "shown"),
    [
        (STATE_CLEANUP, STATE_RUNNING),  # a local run's users winding down after STOP
        (STATE_STOPPING, STATE_RUNNING),  # a master waiting for its workers' users
        (STATE_STOPPED, STATE_STOPPED),
        (STATE_INIT, STATE_INIT),
    ],
)
def test_the_page_keeps_polling_through_a_stop_and_is_told_stopped_only_at_its_end(state, shown):
    environment = SimpleNamespace(runner=FakeRunner(state, None), web_ui=None)
    assert webui.page_state(environment) == shown


@pytest.mark.integration
def test_stop_pressed_while_the_users_wind_down_ends_on_new_and_closes_the_run(tmp_path):
    locustfile, held, release = _held_locustfile(tmp_path, "stop")
    run_dir = tmp_path / "runs"
    with (
        sim_target("--delay", "const:2") as target,
        web_locust(
            locustfile, "--host", target.url, "--run-dir", str(run_dir), "--stop-timeout", "60", log_dir=tmp_path
        ) as web,
        browser_page() as page,
    ):
        start_from_form(page, web.url, {"steps": "1", "stepTime": "10m"})
        wait_until(lambda: web.get_json("/swarmgauge/api/live")["steps"], WAIT_SECONDS, "requests")
        polls: list[str] = []
        page.on("response", lambda answer: polls.append(answer.url) if answer.url.endswith("/stats/requests") else None)
        page.get_by_role("button", name="STOP").click()
        wait_until(held.exists, WAIT_SECONDS, "the users' stop to be held")
        assert web.get_json("/swarmgauge/api/live")["state"] == STATE_CLEANUP
        polled = len(polls)
        wait_until(  # the page's events arrive while Playwright waits, so the check waits through Playwright
            lambda: page.wait_for_timeout(200) or len(polls) >= polled + 2, WAIT_SECONDS, "polls during the stop"
        )
        release.write_text("go")
        page.get_by_role("button", name="NEW").wait_for()
        folder = closed_folders(run_dir, 1)[0]
        assert [r["users"] for r in read_steps(folder) if r["name"] == "Aggregated"] == ["1"]


@pytest.mark.integration
def test_a_page_opened_while_the_master_is_still_starting_shows_the_running_view_and_the_tab(tmp_path):
    locustfile, held, release = _held_locustfile(tmp_path, "start")
    run_dir = tmp_path / "runs"
    with (
        sim_target("--delay", "const:2") as target,
        web_locust(
            locustfile,
            "--host",
            target.url,
            "--run-dir",
            str(run_dir),
            "--stop-timeout",
            "3",
            workers=1,
            log_dir=tmp_path,
        ) as web,
        browser_page() as page,
    ):
        start_from_form(page, web.url, {"steps": "2", "stepTime": "10m"})
        wait_until(held.exists, WAIT_SECONDS, "the master's start to be held")
        page.reload()  # Locust's own runner state reads "ready" until the held start goes on
        page.get_by_role("tab", name="swarmgauge").wait_for()
        assert page.get_by_role("button", name="STOP").is_visible()
        assert web.template_args()["state"] == STATE_SPAWNING and not release.exists()
        release.write_text("go")
        page.get_by_role("tab", name="swarmgauge").click()
        rows = wait_until(lambda: _tab_rows(page), WAIT_SECONDS, "the step row in the tab")
        assert "2 users" in rows[0]
        page.get_by_role("button", name="STOP").click()
        folder = closed_folders(run_dir, 1)[0]
        assert [r["users"] for r in read_steps(folder) if r["name"] == "Aggregated"] == ["2"]


@pytest.mark.integration
def test_the_tab_of_a_master_with_two_workers_adds_a_row_per_step_and_charts_the_targets_memory(tmp_path):
    run_dir = tmp_path / "runs"
    with (
        sim_target("--delay", "const:2") as target,
        web_locust(
            HTTP_RAMP,
            "--host",
            target.url,
            "--run-dir",
            str(run_dir),
            "--stop-timeout",
            "3",
            workers=2,
            log_dir=tmp_path,
        ) as web,
        browser_page() as page,
    ):
        start_from_form(
            page,
            web.url,
            {
                "steps": "1,2,3",
                "stepTime": f"{STEP_SECONDS}s",
                "sampleInterval": "1",
                "sample": f"psutil:pid={target.process.pid}",
                "slo": "GET:p99<2s@step,fail_ratio<0.01",
            },
        )
        page.goto(web.url + "/?tab=swarmgauge")
        page.get_by_role("tab", name="swarmgauge").click()
        seen = []
        for count in (1, 2, 3):
            rows = wait_until(
                lambda count=count: _tab_rows(page) if len(_tab_rows(page)) >= count else None,
                WAIT_SECONDS,
                f"{count} step rows in the tab",
            )
            seen.append(len(rows))
            assert f"{count} users" in rows[count - 1]
        page.screenshot(path=LOCUST_TAB_SCREENSHOT, full_page=True)
        assert seen == [1, 2, 3]

        page.goto(web.url + "/swarmgauge/")
        page.wait_for_selector("#steps tbody tr.step-row")
        wait_until(lambda: page.locator("#memory svg circle.point").count() >= 4, WAIT_SECONDS, "memory points")
        assert f"psutil:pid={target.process.pid}" in page.inner_text("#memory")
        assert "slope" in page.inner_text("#memory")
        assert page.locator("#slo td.green").count() == 2 and page.locator("#slo td.red").count() == 0
        assert web.get_json("/swarmgauge/api/live")["workers"] == 2
        assert page.inner_text("#workers") == "workers: 2"
        assert not page.is_visible("#slo-empty") and not page.is_visible("#memory-empty")
        assert page.inner_text("#lost-empty") == "None: every worker has reported."
        page.screenshot(path=SCREENSHOT, full_page=True)
        folder = closed_folders(run_dir, 1)[0]
        assert [r["users"] for r in read_steps(folder) if r["name"] == "Aggregated"] == ["1", "2", "3"]
        assert json.loads((folder / "run.json").read_text())["runner"] == "MasterRunner"


@pytest.mark.integration
def test_an_abort_threshold_stops_a_run_against_a_slow_target_with_exit_3_and_says_where_and_why(tmp_path):
    run_dir = tmp_path / "runs"
    with sim_target("--delay", "const:200") as target:
        result = run_local(
            target.url,
            "--steps",
            "1,2",
            "--step-time",
            "5m",
            "--stop-timeout",
            "3",
            "--sample-interval",
            "1",
            "--slo-abort",
            "p99<50ms",
            "--slo-abort-grace",
            "2s",
            "--slo-abort-min-requests",
            "5",
            "--run-dir",
            str(run_dir),
            locustfile=HTTP_RAMP,
            timeout=120,
        )
    assert result.returncode == 3, result.stderr[-3000:]
    assert "run aborted: p99<50ms breached in step 0 (1 users): p99 " in result.stderr
    run = json.loads((run_dir / "latest" / "run.json").read_text())
    aborted = run["aborted"]
    assert (aborted["expr"], aborted["step"], aborted["label"]) == ("p99<50ms", 0, "1 users")
    assert aborted["observed"] >= 200.0 and run["exit_code"] == 3
    assert aborted["breach"].endswith(" ms > 50 ms") and aborted["requests"] >= 5
    assert aborted["after_s"] >= 2.0 and aborted["interval_s"] == 1.0  # not before its grace
    slo = json.loads((run_dir / "latest" / "slo.json").read_text())
    assert slo["passed"] is False and "p99<50ms" in [v["expr"] for v in slo["verdicts"] if v["status"] == "fail"]
    assert {r["step"] for r in read_steps(run_dir)} == {"0"}
    report = (run_dir / "latest" / "report.md").read_text()
    assert "## Run aborted" in report and "aborted in step 0 (1 users)" in report and "p99<50ms was breached" in report


def _scrape(url: str) -> dict[tuple[str, str], float] | None:
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            text = answer.read().decode()
    except (urllib.error.URLError, OSError):
        return None
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "swarmgauge_requests_total":
                found[(sample.labels["step"], sample.labels["name"])] = sample.value
    return found or None


@pytest.mark.integration
def test_a_headless_run_serves_prometheus_text_on_its_own_loopback_port(tmp_path):
    port = free_port()
    with sim_target("--delay", "const:2") as target:
        process = subprocess.Popen(
            locust_command(
                HTTP_RAMP,
                "--headless",
                "--host",
                target.url,
                "--steps",
                "1",
                "--step-time",
                "8s",
                "--stop-timeout",
                "3",
                "--prometheus-port",
                str(port),
                "--run-dir",
                str(tmp_path / "runs"),
            ),
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(None),
        )
        try:
            scraped = wait_until(lambda: _scrape(f"http://127.0.0.1:{port}/metrics"), WAIT_SECONDS, "a scrape")
            _stdout, stderr = process.communicate(timeout=WAIT_SECONDS)
        finally:
            process.kill()
            process.wait(timeout=30)
    assert process.returncode == 0, stderr[-3000:]
    assert f"Prometheus metrics at http://127.0.0.1:{port}/metrics" in stderr
    final = {
        (r["step"], r["name"]): int(r["requests"]) for r in read_steps(tmp_path / "runs") if r["name"] != "Aggregated"
    }
    assert set(scraped) == set(final) and all(0 < scraped[key] <= final[key] for key in final)
