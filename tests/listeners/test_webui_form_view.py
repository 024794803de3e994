"""The web UI as a person reads it, in Debian's Chromium driven by Playwright: the start form says what START will
run (the plan, its stages, duration and classes, the users and ramp greyed with the reason) and shows swarmgauge's
fields grouped with human labels and their flags; the class picker limits the classes that run (run.json); the
swarmgauge tab and ``/swarmgauge/`` show a run-scope SLO verdict with its unit and figures with 3 significant digits.

Screenshots go to ``SWARMGAUGE_SHOTS`` when set (a folder outside the repository), else to the test's tmp_path.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.listeners.sim_run import ROOT, sim_target
from tests.listeners.test_webui import TAB_TABLE_JS, closed_folders, open_tab
from tests.listeners.webui_harness import browser_page, wait_until, web_locust

LOCUSTFILE = ROOT / "tests" / "listeners" / "picker_locustfile.py"
WAIT_SECONDS = 90.0
FIGURE = re.compile(r"^(\d{3,}|\d{2}\.\d|\d\.\d\d|0\.\d*[1-9]\d\d) (ms|s|req/s)$")
RUN_VERDICT = re.compile(r"^fail \((\d{3,}|\d{2}\.\d|\d\.\d\d) ms > 1 ms\)$")
GROUPS_JS = "() => [...document.querySelectorAll('[data-sg-group]')].map((e) => e.dataset.sgGroup)"


def _shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("SWARMGAUGE_SHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _field_text(page, name: str) -> str:
    return page.locator(f'[data-sg-field="{name}"]').inner_text()


def _tab_rows(page) -> list[dict[str, str]]:
    return [row for row in page.evaluate(TAB_TABLE_JS) if "Request" in row]


@pytest.mark.integration
def test_the_form_says_what_will_run_and_the_live_views_read_like_the_report(tmp_path):
    shots = _shots(tmp_path)
    run_dir = tmp_path / "runs"
    with (
        sim_target("--delay", "const:2") as target,
        web_locust(
            LOCUSTFILE,
            "--host",
            target.url,
            "--run-dir",
            str(run_dir),
            "--steps",
            "2,3",
            "--step-time",
            "6s",
            "--sample-interval",
            "1",
            "--stop-timeout",
            "3",
            log_dir=tmp_path,
        ) as web,
        browser_page() as page,
    ):
        page.goto(web.url + "/")
        page.get_by_text("Custom parameters").click()
        plan_box = page.locator("#sg-plan")
        plan_box.wait_for()
        assert "Plan in effect: step_ramp, 12 s" in plan_box.inner_text()
        assert "2 users for 6 s" in plan_box.inner_text() and "3 users for 6 s" in plan_box.inner_text()
        assert "HttpGetUser, SecondUser" in plan_box.inner_text()
        assert page.locator('input[name="userCount"]').get_attribute("readonly") is not None
        assert "Not used: the plan 'step_ramp' sets each step's users" in page.locator(".sg-reason").first.inner_text()
        groups = page.evaluate(GROUPS_JS)
        assert groups[:4] == ["Plan", "Gates", "Sampling", "Run record"], groups
        slo = _field_text(page, "slo")
        assert slo.startswith("SLO") and "--slo" in slo and "[env" not in slo
        assert "10%" in _field_text(page, "sampleWarmup") and "%%" not in page.inner_text("form")

        page.fill('input[name="steps"]', "2,3,4")
        wait_until(lambda: "4 users for 6 s" in plan_box.inner_text(), 10, "the plan box following the typed steps")
        assert "18 s" in plan_box.inner_text()
        page.fill('input[name="slo"]', "p99<1ms")

        page.get_by_role("row", name="HttpGetUser").get_by_role("checkbox").click()  # run SecondUser only
        wait_until(lambda: "User classes: SecondUser" in plan_box.inner_text(), 10, "the plan box following the picker")
        page.screenshot(path=shots / "form.png", full_page=True)
        page.get_by_role("button", name="START").click()
        page.get_by_role("button", name="STOP").wait_for(timeout=30_000)

        open_tab(page, web.url)
        run_row = wait_until(
            lambda: next((r for r in _tab_rows(page) if RUN_VERDICT.match(r["SLO"])), None),
            WAIT_SECONDS,
            "the run-scope SLO's verdict with its unit in the tab",
        )
        assert run_row["Request"] == "SLO p99<1ms"
        measured = wait_until(
            lambda: [r for r in _tab_rows(page) if r["Request"] == "GET second /" and r["Throughput"]],
            WAIT_SECONDS,
            "a measured row",
        )
        assert all(FIGURE.match(measured[0][key]) for key in ("Throughput", "p50", "p90", "p99")), measured[0]
        assert page.locator("#sg-full-view").get_attribute("href") == "./swarmgauge/"
        page.screenshot(path=shots / "tab.png", full_page=True)

        page.goto(web.url + "/swarmgauge/")
        verdict = page.locator("#slo td.verdict")
        wait_until(lambda: RUN_VERDICT.match(verdict.first.inner_text()), WAIT_SECONDS, "the verdict on the page")
        page.screenshot(path=shots / "swarmgauge.png", full_page=True)

        folder = closed_folders(run_dir, 1)[0]
        run = json.loads((folder / "run.json").read_text())
        assert run["user_classes"] == ["SecondUser"]
        assert sorted(run["locustfile_user_classes"]) == ["HttpGetUser", "SecondUser"]

        open_tab(page, web.url)
        link = page.locator("#sg-report-link")
        link.wait_for(timeout=30_000)
        assert link.get_attribute("href") == f"./swarmgauge/runs/{folder.name}/report.html"
        page.screenshot(path=shots / "tab-closed.png", full_page=True)
        assert web.get(f"/swarmgauge/runs/{folder.name}/report.html").startswith(b"<")
