"""The web UI's exploratory ramp (issue 29): EDIT moves the users of a run without a plan and each count held is a
step; with a plan the EDIT dialog says the plan drives the users and EDIT is refused with that line; a UI run records
the headless command that repeats it, and a plan stopped before its end is marked cut short by STOP.

Set ``SWARMGAUGE_TEST_SHOTS=/some/dir`` to keep screenshots of the form, the tab and ``/swarmgauge/`` mid-ramp.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from locust import argument_parser
from locust.env import Environment

import swarmgauge.locust  # noqa: F401 - every swarmgauge option on Locust's parser
from swarmgauge.listeners import form_steps, rundir, steps, webui_form
from swarmgauge.listeners.repeat_command import repeat_command
from swarmgauge.reports.context import context_rows, cut_short_sentence
from tests.listeners.sim_run import ROOT, sim_target
from tests.listeners.test_live import _local_environment
from tests.listeners.test_webui import (
    HTTP_RAMP,
    RUN_SECONDS,
    closed_folders,
    open_tab,
    read_csv,
    start_from_form,
    steps_by_name,
    tab_table,
)
from tests.listeners.webui_harness import browser_page, wait_until, web_locust

LABEL = re.compile(r"^(\d+) users \(set at \d\d:\d\d\)$")


def _shots() -> Path | None:
    where = os.environ.get("SWARMGAUGE_TEST_SHOTS")
    if not where:
        return None
    Path(where).mkdir(parents=True, exist_ok=True)
    return Path(where)


def keep_shot(page: Any, name: str) -> None:
    shots = _shots()
    if shots is not None:
        page.screenshot(path=str(shots / name), full_page=True)


@contextmanager
def ramp_in_browser(tmp_path: Path, run_dir: Path) -> Iterator[tuple[Any, Any, Any]]:
    """A sim-http target, ``http_ramp.py`` in the web UI writing into ``run_dir``, and a Chromium page."""
    with (
        sim_target("--delay", "const:2") as target,
        web_locust(
            HTTP_RAMP, "--host", target.url, "--run-dir", str(run_dir), "--stop-timeout", "3", log_dir=tmp_path
        ) as web,
        browser_page() as page,
    ):
        yield target, web, page


def post(url: str, path: str, fields: dict[str, Any]) -> dict[str, Any]:
    data = urllib.parse.urlencode(fields).encode()
    with urllib.request.urlopen(urllib.request.Request(url + path, data=data), timeout=30) as answer:
        return json.loads(answer.read())


def edit_users(page: Any, users: int, *, shot: str | None = None, empty: tuple[str, ...] = ()) -> dict[str, Any]:
    """EDIT -> type the users (ramp 10/s), empty the ``empty`` Custom parameters -> UPDATE, as a person does;
    returns the server's answer to the form."""
    page.get_by_role("button", name="EDIT").click()
    page.get_by_text("Edit running load test").wait_for()  # Locust's edit modal (no dialog role)
    page.locator('input[name="userCount"]').fill(str(users))
    page.locator('input[name="spawnRate"]').fill("10")
    if empty:
        page.get_by_text("Custom parameters", exact=True).click()
        for name in empty:
            page.locator(f'input[name="{name}"]').fill("")
    if shot:
        keep_shot(page, shot)
    with page.expect_response(lambda r: r.url.endswith("/swarm")) as answer:
        page.get_by_role("button", name="UPDATE").click()
    return answer.value.json()


def open_edit_dialog(page: Any) -> Any:
    """EDIT -> Locust's dialog, once swarmgauge's script has asked the server what to say in it."""
    page.get_by_role("button", name="EDIT").click()
    page.get_by_text("Edit running load test").wait_for()
    page.wait_for_selector("form[data-sg-edit-checked]")
    return page.locator("h2", has_text="Edit running load test").locator("..")


def tab_step_with_requests(page: Any, users: int) -> list[dict[str, str]] | None:
    """The tab's rows of the step holding ``users``, once its GET row shows requests and a rate."""
    rows = [r for r in tab_table(page) if LABEL.match(r["Label"]) and r["Users"] == str(users)]
    measured = [
        r for r in rows if r["Request"].startswith("GET ") and r["Requests"] not in ("", "0") and r["Throughput"]
    ]
    return rows if measured else None


@pytest.mark.integration
def test_start_2_then_edit_to_6_and_10_makes_three_steps_live_and_in_steps_csv(tmp_path):
    run_dir = tmp_path / "runs"
    with ramp_in_browser(tmp_path, run_dir) as (target, web, page):
        page.goto(web.url + "/")
        page.wait_for_selector("form")
        keep_shot(page, "1-start-form.png")
        start_from_form(page, web.url, {"userCount": "2", "spawnRate": "10"})
        open_tab(page, web.url)
        seen = {}
        for users in (2, 6, 10):
            if users != 2:
                answer = edit_users(page, users, shot="2-edit-dialog.png" if users == 6 else None)
                assert answer["success"] is True, answer
            seen[users] = wait_until(
                lambda users=users: page.wait_for_timeout(200) or tab_step_with_requests(page, users),
                RUN_SECONDS,
                f"the tab's row of the {users}-user step",
            )
            if users == 6:
                keep_shot(page, "3-tab-after-edit-to-6.png")
        assert [LABEL.match(seen[u][0]["Label"]).group(1) for u in (2, 6, 10)] == ["2", "6", "10"]  # type: ignore[union-attr]
        assert len({r["Step"] for r in tab_table(page)}) == 3  # the three steps held, side by side while running
        keep_shot(page, "4-tab-after-edit-to-10.png")
        page.goto(web.url + "/swarmgauge/")
        page.wait_for_timeout(1500)
        keep_shot(page, "5-swarmgauge-page.png")
        assert post(web.url, "/stop", {})["success"] is True
        folder = closed_folders(run_dir, 1)[0]
        rows = steps_by_name(folder)
        assert [int(r["users"]) for r in rows] == [2, 6, 10]
        assert all(LABEL.match(r["label"]) and int(r["requests"]) > 0 and r["p99_ms"] for r in rows)
        assert all(float(r["duration_s"]) > 0 for r in rows)
        run = json.loads((folder / "run.json").read_text())
        assert run["plan"]["source"] == "web form" and [s["users"] for s in run["plan"]["stages"]] == [2, 6, 10]
        assert "--steps 2,6,10 --step-time " in run["repeat_command"] and "--headless" in run["repeat_command"]
        assert "Editing is disabled" not in web.output()


@pytest.mark.integration
def test_edit_with_a_plan_in_effect_is_refused_saying_the_plan_drives_and_stop_marks_the_plan_cut_short(tmp_path):
    run_dir = tmp_path / "runs"
    with ramp_in_browser(tmp_path, run_dir) as (target, web, page):
        start_from_form(page, web.url, {"steps": "1,3", "stepTime": "60s"})
        wait_until(lambda: web.get_json("/swarmgauge/api/live")["steps"], RUN_SECONDS, "requests")
        open_edit_dialog(page)
        assert page.get_by_role("button", name="UPDATE").is_disabled()  # it would be refused: the dialog says why
        page.keyboard.press("Escape")
        answer = post(web.url, "/swarm", {"user_count": 5, "spawn_rate": 10, "host": target.url})
        assert answer["success"] is False
        assert (
            "plan 'step_ramp' drives the users" in answer["message"]
            and "empty Steps, Plan and Rate under Custom parameters" in answer["message"]
        )
        assert "drives the users" in json.dumps(web.get_json("/logs"))
        page.goto(web.url + "/")
        page.get_by_role("tab", name="Logs").click()
        page.get_by_text("drives the users").first.wait_for()  # Locust's LOGS tab shows the warning too
        keep_shot(page, "6-logs-tab-edit-refused.png")
        page.wait_for_timeout(1500)
        assert web.get_json("/stats/requests")["user_count"] == 1  # the plan's first step still holds
        assert post(web.url, "/stop", {})["success"] is True
        folder = closed_folders(run_dir, 1)[0]
        run = json.loads((folder / "run.json").read_text())
        assert run["cut_short"]["by"] == "STOP" and run["cut_short"]["planned_s"] == 120.0
        assert run["cut_short"]["steps_not_run"] == ["3 users"]
        assert "cut short by STOP at " in (folder / "report.md").read_text()
        assert "--steps 1,3" in run["repeat_command"] and "--step-time 60s" in run["repeat_command"]


@pytest.mark.integration
def test_a_plan_started_from_the_form_is_taken_over_by_an_edit_that_empties_its_steps(tmp_path):
    run_dir = tmp_path / "runs"
    with ramp_in_browser(tmp_path, run_dir) as (target, web, page):
        start_from_form(page, web.url, {"steps": "1,3", "stepTime": "60s"})
        wait_until(lambda: web.get_json("/swarmgauge/api/live")["steps"], RUN_SECONDS, "requests")
        answer = edit_users(page, 4, empty=("steps", "stepTime"), shot="7-edit-dialog-taking-over-a-plan.png")
        assert answer["success"] is True, answer
        wait_until(lambda: web.get_json("/stats/requests")["user_count"] == 4, RUN_SECONDS, "4 users")
        open_tab(page, web.url)
        wait_until(
            lambda: page.wait_for_timeout(200) or tab_step_with_requests(page, 4), RUN_SECONDS, "the 4-user step"
        )
        assert post(web.url, "/stop", {})["success"] is True
        folder = closed_folders(run_dir, 1)[0]
        rows = steps_by_name(folder)
        assert [r["users"] for r in rows] == ["1", "4"] and rows[0]["label"] == "1 users"
        assert LABEL.match(rows[1]["label"]) and int(rows[1]["requests"]) > 0
        run = json.loads((folder / "run.json").read_text())
        assert run["cut_short"]["by"] == "EDIT" and run["cut_short"]["steps_not_run"] == ["3 users"]
        assert run["plan"]["name"].startswith("plan 'step_ramp' until ")
        assert "--steps 1,4 " in run["repeat_command"]
        assert "Editing is disabled" not in web.output()


@pytest.mark.integration
def test_edit_on_a_master_with_workers_makes_a_step_per_count_merged_from_the_workers(tmp_path):
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
            workers=2,
            log_dir=tmp_path,
        ) as web,
    ):
        for users in (2, 4):
            assert post(web.url, "/swarm", {"user_count": users, "spawn_rate": 10, "host": target.url})["success"]
            wait_until(lambda users=users: web.get_json("/stats/requests")["user_count"] == users, 60, f"{users}")
            time.sleep(4.0)  # more than a worker's report interval (3 s), so each step's figures reach the master
        post(web.url, "/stop", {})
        folder = closed_folders(tmp_path / "runs", 1)[0]
    rows = steps_by_name(folder)
    assert [int(r["users"]) for r in rows] == [2, 4] and all(LABEL.match(r["label"]) for r in rows)
    assert all(int(r["requests"]) > 0 and r["workers"] == "2" for r in rows)


@pytest.mark.integration
def test_edit_of_an_autostarted_run_is_refused_saying_why(tmp_path):
    """Locust's --autostart ends the run when the shape's greenlet ends, so the shape cannot step aside there."""
    with (
        sim_target("--delay", "const:2") as target,
        web_locust(
            HTTP_RAMP,
            "--host",
            target.url,
            "--autostart",
            "-u",
            "2",
            "-r",
            "10",
            "--run-dir",
            str(tmp_path / "runs"),
            "--stop-timeout",
            "3",
            log_dir=tmp_path,
        ) as web,
    ):
        wait_until(lambda: web.get_json("/stats/requests")["user_count"] == 2, 60, "2 autostarted users")
        answer = post(web.url, "/swarm", {"user_count": 4, "spawn_rate": 10})
        assert answer["success"] is False and "--autostart" in answer["message"]
        time.sleep(1.5)
        assert web.get_json("/stats/requests")["user_count"] == 2
        assert web.get_json("/swarmgauge/api/live")["state"] == "running"


def _headless(command: str, run_dir: Path, step_time: str) -> list[str]:
    """The repeat command as a subprocess: this interpreter's Locust, shorter holds, a fresh run folder."""
    words = shlex.split(command)
    assert words[0] == "locust" and "--headless" in words
    words[words.index("--step-time") + 1] = step_time
    words[words.index("--run-dir") + 1] = str(run_dir)
    return [sys.executable, "-m", "locust", "--only-summary", *words[1:]]


@pytest.mark.integration
def test_the_repeat_command_of_an_edited_ui_run_run_headless_gives_the_same_steps(tmp_path):
    with (
        sim_target("--delay", "const:2") as target,
        web_locust(
            HTTP_RAMP,
            "--host",
            target.url,
            "--run-dir",
            str(tmp_path / "ui"),
            "--stop-timeout",
            "3",
            "--slo",
            "p99<5000ms",
            "--web-host",
            "127.0.0.1",
            log_dir=tmp_path,
            env={"SWARMGAUGE_PROMETHEUS_PUSH_INTERVAL": "7s"},
        ) as web,
    ):
        for users in (2, 4):
            assert post(web.url, "/swarm", {"user_count": users, "spawn_rate": 10, "host": target.url})["success"]
            time.sleep(2.0)
        post(web.url, "/stop", {})
        ui_folder = closed_folders(tmp_path / "ui", 1)[0]
        command = json.loads((ui_folder / "run.json").read_text())["repeat_command"]
        assert command in (ui_folder / "report.md").read_text()
        assert "--slo 'p99<5000ms'" in command
        # the launch's options outside the form, from its command line and a variable; not how the UI was served
        assert "--stop-timeout 3" in command and "--only-summary" in command
        assert "--prometheus-push-interval 7s" in command
        assert "--web-port" not in command and "--web-host" not in command
        repeat = subprocess.run(
            _headless(command, tmp_path / "again", "2s"),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=RUN_SECONDS,
        )
        assert repeat.returncode == 0, repeat.stderr[-3000:]
    ui_steps = [int(r["users"]) for r in steps_by_name(ui_folder)]
    again = closed_folders(tmp_path / "again", 1)[0]
    again_rows = [r for r in read_csv(again / "steps.csv") if r["name"] != "Aggregated"]
    assert ui_steps == [int(r["users"]) for r in again_rows] == [2, 4]
    assert all(int(r["requests"]) > 0 for r in again_rows)


def form_environment() -> Environment:
    environment = _local_environment()
    options = argument_parser.get_parser().parse_args(["-f", "locustfiles/http_ramp.py"])
    environment.parsed_options = options
    options.num_users, options.spawn_rate, options.run_time = 2, 4.0, None
    environment.host = "http://127.0.0.1:9"
    webui_form.StartUpOptions.of(environment).code_set = set()  # what the first START computes from the command line
    return environment


class FormValues(dict):
    def get(self, key: str, default: Any = None) -> Any:
        return super().get(key, default)


def test_each_count_the_form_sets_is_a_step_and_its_ramp_is_warm_up():
    environment = form_environment()
    steps.reset(environment)
    first = form_steps.announce_form_step(environment, FormValues(user_count="2", spawn_rate="4"))
    assert first is not None and first.index == 0 and first.label == "2 users (set at 00:00)"
    assert first.warmup == 0.0  # no count before it: the start-up counts, as a plan's first step
    assert form_steps.announce_form_step(environment, FormValues(user_count="2", spawn_rate="8")) is None  # rate only
    second = form_steps.announce_form_step(environment, FormValues(user_count="10", spawn_rate="4"))
    assert second is not None and (second.index, second.users, second.warmup) == (1, 10, 2.0)
    assert LABEL.match(second.label)
    assert form_steps.announce_form_step(environment, FormValues(user_count="x", spawn_rate="4")) is None
    assert form_steps.clock(41) == "00:41" and form_steps.clock(3725) == "1:02:05"


def test_the_repeat_command_holds_the_counts_as_held_and_no_secret():
    environment = form_environment()
    environment.parsed_options.slo = ["GET /:p99<50ms"]
    edited = repeat_command(environment, held=[(2, 3.2), (6, 4.9)], plan_in_effect=False)
    assert edited.startswith("locust -f ") and " --headless --host http://127.0.0.1:9 " in edited
    assert "--steps 2,6 --step-time 5s" in edited and "--slo 'GET /:p99<50ms'" in edited and " -u " not in edited
    single = repeat_command(environment, held=[(2, 33.4)], plan_in_effect=False)
    assert "-u 2 -r 4 -t 34s" in single
    environment.host = "http://user:hunter2@127.0.0.1:9"
    assert "hunter2" not in repeat_command(environment, held=[(2, 1.0)], plan_in_effect=False)


def test_the_repeat_command_leaves_an_embedded_targets_host_to_the_locustfile():
    environment = form_environment()
    environment.host = "mark://127.0.0.1:52673"
    rundir.add_run_info(environment, "embedded_targets", {"mark": {"pid": 1, "url": environment.host}})
    command = repeat_command(environment, held=[(2, 5.0)], plan_in_effect=False)
    assert "--host" not in command and "52673" not in command


def test_a_stop_before_the_plans_end_is_said_in_the_report():
    info = {"cut_short": {"by": "STOP", "run_time_s": 33.0, "planned_s": 2400.0, "during_step": "1 users"}}
    assert cut_short_sentence(info).startswith("The plan was cut short by STOP at 33")  # type: ignore[union-attr]
    rows = dict(context_rows({"argv": ["locust", "-f", "x.py"], "repeat_command": "locust -f x.py --headless"}))
    assert rows["command"] == "locust -f x.py --headless" and rows["web UI launched as"] == "locust -f x.py"
