"""The web UI as a person uses it, in Debian's Chromium driven by Playwright, against a real sim-http target:
values typed into the start form are followed, each start -> stop is its own run folder with that run's counts,
the swarmgauge tab shows the live rows per request type, the Prometheus text parses and matches steps.csv, and no
secret reaches the page or its API."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import psutil
import pytest
from locust.env import Environment
from prometheus_client.parser import text_string_to_metric_families

from swarmgauge.core.hooks import StepInfo
from swarmgauge.listeners import live, step_state, webui
from swarmgauge.listeners.step_stats import StepRecorder
from swarmgauge.targets.launch import stop_processes
from tests.listeners.sim_run import ROOT, free_port, locust_command, sim_target
from tests.listeners.test_live import _local_environment
from tests.listeners.webui_harness import READY_SECONDS, _answers, browser_page, run_folders, wait_until, web_locust

HTTP_RAMP = ROOT / "locustfiles" / "http_ramp.py"
SECRET = "tok-web-5ecret-never-shown"
RUN_SECONDS = 120.0
START_PRESSES = 3
START_POST_SECONDS = 10.0
# The tab's table as {column title: cell text} per row, read in one go (Locust redraws it at every poll); textContent,
# since the titles are upper-cased by CSS only.
TAB_TABLE_JS = """() => {
  const table = document.querySelector("table");
  if (!table) return [];
  const titles = [...table.querySelectorAll("thead th")].map((th) => th.textContent.trim());
  return [...table.querySelectorAll("tbody tr")].map((tr) =>
    Object.fromEntries([...tr.querySelectorAll("td")].map((td, i) => [titles[i], td.textContent.trim()])));
}"""

SECRET_LOCUSTFILE = """
from locust import events

import swarmgauge.listeners.all  # noqa: F401
from swarmgauge.shapes import PlanShape  # noqa: F401
from locustfiles.http_ramp import HttpGetUser  # noqa: F401


@events.init_command_line_parser.add_listener
def _options(parser):
    parser.add_argument("--sim-token", default="", is_secret=True, include_in_web_ui=True, env_var="SIM_TOKEN",
                        help="a secret")
"""


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def locust_total(folder: Path) -> int:
    rows = read_csv(folder / "locust_stats.csv")
    return int(next(r for r in rows if r["Name"] == "Aggregated")["Request Count"])


def steps_by_name(folder: Path) -> list[dict[str, str]]:
    return [r for r in read_csv(folder / "steps.csv") if r["name"] != "Aggregated"]


def start_from_form(page, url: str, values: dict[str, str]) -> None:
    """Open the start form, type ``values`` (by the form's field names), press START, wait until it runs."""
    page.goto(url + "/")
    page.wait_for_selector("form, button:has-text('NEW')")
    if page.locator("form").count() == 0:
        page.get_by_role("button", name="NEW").click()  # after a run Locust shows its stats; NEW opens the form
        page.wait_for_selector("form")
    for section in ("Custom parameters", "Advanced options"):
        if any(not page.locator(f'input[name="{name}"]').is_visible() for name in values):
            page.get_by_text(section).click()
    for name, value in values.items():
        page.fill(f'input[name="{name}"]', value)
    press_start(page)


def press_start(page) -> None:
    """Press START and wait until the run shows STOP. A click that posts no ``/swarm`` (one clean-clone CI run on a
    loaded machine saw the form stay for 30 s) is pressed again, at most ``START_PRESSES`` times; a posted one is
    never repeated, and a run that does not start fails with what ``/swarm`` answered."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout  # the harness skips when it is missing

    posted: list = []
    answers: list = []  # the responses, read on failure only: a handler must not call back into Playwright

    def is_swarm(request) -> bool:
        return request.method == "POST" and urllib.parse.urlparse(request.url).path == "/swarm"

    def on_request(request) -> None:
        if is_swarm(request):
            posted.append(request)

    def on_response(response) -> None:
        if is_swarm(response.request):
            answers.append(response)

    page.on("request", on_request)
    page.on("response", on_response)
    try:
        for _ in range(START_PRESSES):
            page.get_by_role("button", name="START").click()
            wait_for_post(page, posted)
            if posted:
                break
        assert posted, f"START was pressed {START_PRESSES} times and the page posted no /swarm"
        try:
            page.get_by_role("button", name="STOP").wait_for(timeout=30_000)
        except PlaywrightTimeout:
            said = f"{answers[0].status} {' '.join(answers[0].text().split())[:300]}" if answers else "nothing yet"
            raise AssertionError(f"START posted /swarm and no run started; /swarm answered: {said}") from None
    finally:
        page.remove_listener("request", on_request)
        page.remove_listener("response", on_response)


def wait_for_post(page, posted: list) -> None:
    """Up to ``START_POST_SECONDS`` for the click's POST /swarm to leave the page (events run in Playwright's calls)."""
    deadline = time.monotonic() + START_POST_SECONDS
    while not posted and time.monotonic() < deadline:
        page.wait_for_timeout(100)


def tab_table(page) -> list[dict[str, str]]:
    """The rows of the swarmgauge tab's table as the browser shows them."""
    return [row for row in page.evaluate(TAB_TABLE_JS) if "Request" in row]


def open_tab(page, url: str) -> None:
    page.goto(url + "/?tab=swarmgauge")
    page.get_by_role("tab", name="swarmgauge").click()


def measured_rows(page, prefix: str) -> list[dict[str, str]] | None:
    """The tab's rows of requests named ``prefix...`` once they show a rate and a median; None until then."""
    rows = [r for r in tab_table(page) if r["Request"].startswith(prefix) and r["Throughput"] and r["p50"]]
    return rows or None


def closed_folders(run_dir: Path, count: int) -> list[Path]:
    """Wait until ``count`` run folders hold their report (the last file a closing run writes)."""
    return wait_until(
        lambda: (
            [f for f in run_folders(run_dir) if (f / "report.html").exists()][:count]
            if len([f for f in run_folders(run_dir) if (f / "report.html").exists()]) >= count
            else None
        ),
        RUN_SECONDS,
        f"{count} closed run folders",
    )


@pytest.mark.integration
def test_typed_values_are_followed_and_each_start_stop_is_its_own_run_folder(tmp_path):
    run_dir = tmp_path / "runs"
    with (
        sim_target("--delay", "const:2") as target,
        web_locust(
            HTTP_RAMP, "--host", target.url, "--run-dir", str(run_dir), "--stop-timeout", "3", log_dir=tmp_path
        ) as web,
        browser_page() as page,
    ):
        assert "Starting web interface at http://127.0.0.1:" in web.output()
        start_from_form(page, web.url, {"steps": "1,3", "stepTime": "3s", "sampleInterval": "1"})
        first = closed_folders(run_dir, 1)[0]
        rows = steps_by_name(first)
        assert [(r["step"], r["label"], r["users"]) for r in rows] == [("0", "1 users", "1"), ("1", "3 users", "3")]
        assert all(float(r["duration_s"]) > 0 and int(r["requests"]) > 0 and r["failures"] == "0" for r in rows)
        assert sum(int(r["requests"]) for r in rows) == locust_total(first)

        start_from_form(page, web.url, {"steps": "2", "stepTime": "10m"})
        wait_until(lambda: web.get_json("/swarmgauge/api/live")["steps"], RUN_SECONDS, "requests in run 2")
        during = web.get("/swarmgauge/metrics").decode()
        assert "swarmgauge_requests_total" in during
        list(text_string_to_metric_families(during))
        page.get_by_role("button", name="STOP").click()
        folders = closed_folders(run_dir, 2)
        second = folders[1]
        assert (run_dir / "latest").resolve() == second.resolve()
        rows = steps_by_name(second)
        assert [(r["label"], r["users"]) for r in rows] == [("2 users", "2")]
        assert sum(int(r["requests"]) for r in rows) == locust_total(second) > 0
        assert json.loads((second / "run.json").read_text())["plan"]["stages"][0]["users"] == 2

        scraped = {}
        for family in text_string_to_metric_families(web.get("/swarmgauge/metrics").decode()):
            for sample in family.samples:
                if sample.name in ("swarmgauge_requests_total", "swarmgauge_failures_total"):
                    scraped[(sample.name, sample.labels["step"], sample.labels["name"])] = sample.value
        for row in rows:
            assert scraped[("swarmgauge_requests_total", row["step"], row["name"])] == float(row["requests"])
            assert scraped[("swarmgauge_failures_total", row["step"], row["name"])] == float(row["failures"])
        page.goto(web.url + "/swarmgauge/")
        page.locator("#report-link").wait_for()
        page.locator("#report-link").click()
        page.wait_for_load_state()
        assert second.name in page.url


@pytest.mark.integration
def test_no_secret_in_the_page_the_form_or_any_api_while_a_token_is_set(tmp_path):
    locustfile = tmp_path / "secret_locustfile.py"
    locustfile.write_text(SECRET_LOCUSTFILE)
    with (
        sim_target("--delay", "const:2") as target,
        web_locust(
            locustfile,
            "--host",
            target.url,
            f"--sim-token={SECRET}",
            "--run-dir",
            str(tmp_path / "runs"),
            log_dir=tmp_path,
        ) as web,
        browser_page() as page,
    ):
        args = web.template_args()
        assert args["extra_options"]["sim_token"]["default_value"] == ""
        bad = urllib.parse.urlencode(
            {"user_count": "1", "spawn_rate": "1", "host": target.url, "steps": "1", "sample_interval": "banana"}
        ).encode()
        with urllib.request.urlopen(urllib.request.Request(web.url + "/swarm", data=bad), timeout=30) as answer:
            refused = json.loads(answer.read())
        assert refused["success"] is False and "--sample-interval 'banana'" in refused["message"]
        assert web.get_json("/swarmgauge/api/live")["state"] == "ready"
        start_from_form(page, web.url, {"steps": "1", "stepTime": "2s"})
        assert SECRET not in page.content()
        wait_until(lambda: web.get_json("/swarmgauge/api/live")["steps"], RUN_SECONDS, "requests")
        for path in (
            "/",
            "/stats/requests",
            "/swarmgauge/",
            "/swarmgauge/api/live",
            "/swarmgauge/metrics",
            "/tasks",
            "/exceptions",
            "/stats/report",
        ):
            assert SECRET.encode() not in web.get(path), path
        folder = closed_folders(tmp_path / "runs", 1)[0]
        run = json.loads((folder / "run.json").read_text())
        assert run["options"]["sim_token"] == "***"


@pytest.mark.integration
def test_a_plain_run_follows_the_typed_users_and_run_time_and_its_end_closes_the_run(tmp_path):
    run_dir = tmp_path / "runs"
    with (
        sim_target("--delay", "const:2") as target,
        web_locust(
            HTTP_RAMP, "--host", target.url, "--run-dir", str(run_dir), "--stop-timeout", "3", log_dir=tmp_path
        ) as web,
        browser_page() as page,
    ):
        start_from_form(page, web.url, {"userCount": "3", "spawnRate": "3", "runTime": "4s"})
        folder = closed_folders(run_dir, 1)[0]
        rows = steps_by_name(folder)
        assert [(r["label"], r["users"]) for r in rows] == [("3 users (set at 00:00)", "3")]  # a count the form set
        assert int(rows[0]["requests"]) == locust_total(folder) > 0


@pytest.mark.integration
def test_start_then_the_swarmgauge_tab_shows_each_request_types_live_rate_and_percentiles(tmp_path):
    with (
        sim_target("--delay", "const:2") as target,
        web_locust(
            HTTP_RAMP,
            "--host",
            target.url,
            "--run-dir",
            str(tmp_path / "runs"),
            "--stop-timeout",
            "3",
            log_dir=tmp_path,
        ) as web,
        browser_page() as page,
    ):
        start_from_form(page, web.url, {"steps": "2", "stepTime": "10m"})
        open_tab(page, web.url)
        rows = wait_until(
            lambda: page.wait_for_timeout(200) or measured_rows(page, "GET "), RUN_SECONDS, "a GET row with req/s"
        )
        assert (
            rows[0]["Label"] == "2 users"
            and rows[0]["Throughput"].endswith(" req/s")
            and rows[0]["p50"].endswith(" ms")
        )
        assert measured_rows(page, "Aggregated")  # one request type: the step's total is a rate too
        assert tab_table(page)[-1]["Request"] == "Aggregated"  # in the server's order, not sorted by name
        page.goto(web.url + "/swarmgauge/")
        page.locator("#workers", has_text="local run").wait_for()
        assert web.get_json("/swarmgauge/api/live")["runner"] == "local"
        # a run with no SLO, no sampled target and no workers says so instead of showing empty sections
        assert "--slo" in page.inner_text("#slo-empty") and "--sample" in page.inner_text("#memory-empty")
        assert page.inner_text("#lost-empty") == "None: a local run has no workers."


def _steps_of(environment: Environment, requests: dict[tuple[str, str], list[float]]) -> None:
    """Step 0 (10 s old) of a local run with these requests merged, as the master's per-step table holds them."""
    step_state.state_of(environment).announced[0] = StepInfo(0, "8 users", 8, None, time.time() - 10.0)
    recorder = StepRecorder()
    for (rtype, name), times in requests.items():
        for ms in times:
            recorder.record(0, rtype, name, ms, failed=False)
    step_state.merge_batch(environment, "local", recorder.drain())


def test_the_tab_has_a_row_per_request_type_and_a_mixed_steps_aggregated_row_is_counts_only():
    environment = _local_environment()
    _steps_of(
        environment,
        {("FETCH", "fetch"): [5.0] * 30, ("LOOKUP", "LOOKUP /"): [2.0] * 10, ("QUIC", "handshake"): [40.0]},
    )
    rows = {row["request"]: row for row in webui._tab_rows(environment)}
    # MarkUser names a LOOKUP "LOOKUP /": shown once, as the report's tables show it (it read "LOOKUP LOOKUP /")
    assert set(rows) == {"FETCH fetch", "LOOKUP /", "QUIC handshake", live.COUNTS_ONLY_TITLE}
    fetch = rows["FETCH fetch"]
    assert fetch["requests"] == 30 and fetch["rps"].endswith(" req/s") and fetch["p50_ms"] == "5.00 ms"
    mixed = rows[live.COUNTS_ONLY_TITLE]
    assert (mixed["requests"], mixed["failures"]) == (40, 0)  # the handshake rides along, never counted
    assert all(mixed[key] == webui.NOT_A_RATE for key in webui.RATE_COLUMNS)


def test_a_step_of_one_request_type_keeps_its_aggregated_rate_and_percentiles():
    environment = _local_environment()
    _steps_of(environment, {("GET", "/"): [3.0] * 20, ("QUIC", "handshake"): [40.0]})
    rows = webui._tab_rows(environment)
    assert [row["request"] for row in rows] == ["GET /", "QUIC handshake", "Aggregated"]  # the order shown
    aggregated = rows[-1]
    assert aggregated["requests"] == 20
    assert aggregated["rps"].endswith(" req/s") and aggregated["p50_ms"] == "3.00 ms"


def test_the_web_host_help_says_the_default_swarmgauge_binds():
    from locust.argument_parser import get_parser

    shown = " ".join(get_parser().format_help().split())
    assert f"Defaults to {webui.LOOPBACK}" in shown and "Defaults to '*'" not in shown


def _listening_on(pid: int, port: int) -> set[str]:
    process = psutil.Process(pid)
    connections = getattr(process, "net_connections", None) or process.connections  # psutil < 6 names it so
    return {c.laddr.ip for c in connections("tcp") if c.status == psutil.CONN_LISTEN and c.laddr.port == port}


@pytest.mark.integration
@pytest.mark.parametrize(
    ("args", "env", "address"),
    [
        ((), {}, "127.0.0.1"),  # loopback by default
        (("--web-host", "127.0.0.2"), {}, "127.0.0.2"),  # a given --web-host wins (another loopback address)
        ((), {"LOCUST_WEB_HOST": "127.0.0.3"}, "127.0.0.3"),  # as the image's LOCUST_WEB_HOST sets it
    ],
)
def test_the_web_ui_listens_only_where_its_start_up_line_says(args, env, address, tmp_path):
    port = free_port()
    log = tmp_path / "locust.log"
    command = locust_command(HTTP_RAMP, "--host", "http://127.0.0.1:9", "--web-port", str(port), *args)
    child_env = {k: v for k, v in os.environ.items() if k != "LOCUST_WEB_HOST"} | env
    with open(log, "w") as handle:
        process = subprocess.Popen(command, cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT, env=child_env)
    try:
        url = f"http://{address}:{port}"
        wait_until(lambda: process.poll() is not None or _answers(url), READY_SECONDS, f"the web UI at {url}")
        assert process.poll() is None, log.read_text()[-3000:]
        assert f"Starting web interface at {url}," in log.read_text()
        assert _listening_on(process.pid, port) == {address}
    finally:
        stop_processes([process], grace=10)
