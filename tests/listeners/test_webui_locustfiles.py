"""Every locustfile starts from the web UI: the start form submitted with its defaults (in Chromium) makes requests
with no failures against the locustfile's embedded target, and STOP closes the run into its own folder; the tab of a
run of several request types shows each one's rate and percentiles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from swarmgauge.listeners import live, webui
from tests.listeners.sim_run import ROOT, sim_target
from tests.listeners.test_webui import (
    closed_folders,
    locust_total,
    measured_rows,
    open_tab,
    start_from_form,
    steps_by_name,
    tab_table,
)
from tests.listeners.webui_harness import browser_page, wait_until, web_locust

LOCUSTFILES = ROOT / "locustfiles"
EMBEDDED = [
    "brain_leak",
    "brain_stress",
    "demarkus_reads",
    "demarkus_writes",
    "mcp_churn",
    "mdk_fleet",
    "kneo_dispatch",
]
EMBEDDED_SET_INSECURE = ["demarkus_reads", "mcp_churn"]  # their embedded Mark server's dev certificate needs it
MIN_REQUESTS = 20
WAIT_SECONDS = 180.0


def _aggregated(web) -> dict:
    stats = web.get_json("/stats/requests")["stats"]
    return next(row for row in stats if row["name"] == "Aggregated")


def _runs_cleanly(web, page, tmp_path) -> None:
    start_from_form(page, web.url, {})
    _ran_cleanly(web, page, tmp_path)


def _ran_cleanly(web, page, tmp_path) -> Path:
    """Requests with no failures, then STOP: the run's folder holds them all; returns the folder."""
    total = wait_until(
        lambda: _aggregated(web) if _aggregated(web)["num_requests"] >= MIN_REQUESTS else None,
        WAIT_SECONDS,
        f"{MIN_REQUESTS} requests",
    )
    assert total["num_failures"] == 0, web.get_json("/stats/requests")["errors"]
    page.get_by_role("button", name="STOP").click()
    folder = closed_folders(tmp_path / "runs", 1)[0]
    rows = steps_by_name(folder)
    assert rows and all(r["failures"] == "0" for r in rows)
    assert sum(int(r["requests"]) for r in rows) == locust_total(folder)
    return folder


def test_every_locustfile_is_covered():
    assert sorted(p.stem for p in LOCUSTFILES.glob("*.py") if p.stem != "__init__") == sorted(EMBEDDED + ["http_ramp"])


@pytest.mark.integration
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", EMBEDDED)
def test_the_start_form_with_defaults_runs_against_the_embedded_target(name, tmp_path, request):
    if name == "kneo_dispatch":
        request.getfixturevalue("kneo_venv")
    with (
        web_locust(
            LOCUSTFILES / f"{name}.py", "--run-dir", str(tmp_path / "runs"), "--stop-timeout", "3", log_dir=tmp_path
        ) as web,
        browser_page() as page,
    ):
        _runs_cleanly(web, page, tmp_path)


@pytest.mark.integration
def test_the_start_form_with_defaults_runs_against_a_given_host(tmp_path):
    with (
        sim_target("--delay", "const:2") as target,
        web_locust(
            LOCUSTFILES / "http_ramp.py",
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
        _runs_cleanly(web, page, tmp_path)


@pytest.mark.integration
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", EMBEDDED_SET_INSECURE)
def test_unticking_the_box_an_embedded_target_ticked_keeps_its_setting(name, tmp_path):
    with (
        web_locust(
            LOCUSTFILES / f"{name}.py", "--run-dir", str(tmp_path / "runs"), "--stop-timeout", "3", log_dir=tmp_path
        ) as web,
        browser_page() as page,
    ):
        posted: list[str] = []
        page.on("request", lambda sent: posted.append(sent.post_data or "") if sent.url.endswith("/swarm") else None)
        page.goto(web.url + "/")
        page.get_by_text("Custom parameters").click()
        box = page.locator('input[name="markInsecure"]')
        assert box.is_checked()  # the form shows what the embedded target set
        untick(page, box)
        page.get_by_role("button", name="START").click()
        page.get_by_role("button", name="STOP").wait_for()
        assert "mark_insecure=false" in posted[0]
        folder = _ran_cleanly(web, page, tmp_path)
    assert json.loads((folder / "run.json").read_text())["options"]["mark_insecure"] is True


def untick(page: Any, box: Any) -> None:
    """Untick ``box`` as a person does: click it, and click again if the form moved under the pointer (the
    accordion still opening, swarmgauge's labels and help lines landing above it) so the first click missed."""
    from playwright.sync_api import Error as PlaywrightError  # as the harness: imported where a browser runs

    for _attempt in range(3):
        try:
            box.uncheck(timeout=5000)
            return
        except PlaywrightError:
            page.wait_for_timeout(300)
    assert not box.is_checked(), "the box stayed ticked after three clicks"


@pytest.mark.integration
@pytest.mark.timeout(600)
def test_the_tab_of_a_mark_read_run_shows_each_request_type_and_the_mixed_total_as_counts(tmp_path):
    with (
        web_locust(
            LOCUSTFILES / "demarkus_reads.py",
            "--run-dir",
            str(tmp_path / "runs"),
            "--stop-timeout",
            "3",
            log_dir=tmp_path,
        ) as web,
        browser_page() as page,
    ):
        start_from_form(page, web.url, {"userCount": "8", "spawnRate": "8"})
        open_tab(page, web.url)
        for request_type in ("FETCH ", "LIST ", "LOOKUP "):
            rows = wait_until(
                lambda request_type=request_type: page.wait_for_timeout(200) or measured_rows(page, request_type),
                WAIT_SECONDS,
                f"a {request_type}row with throughput and p50 in the tab",
            )
            assert rows[0]["Throughput"].endswith(" req/s") and rows[0]["p50"].endswith(" ms")
        total = next(r for r in tab_table(page) if r["Request"] == live.COUNTS_ONLY_TITLE)
        assert int(total["Requests"]) > 0 and total["Throughput"] == total["p50"] == webui.NOT_A_RATE
