"""The kneo ledger per run: in the web UI each START is a run of its own, reconciled at its STOP into its folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import REPO_ROOT
from tests.listeners.test_webui import closed_folders, locust_total, start_from_form
from tests.listeners.webui_harness import browser_page, wait_until, web_locust

pytestmark = pytest.mark.integration  # the real kneo-serv, a web UI and a browser

KNEO_DISPATCH = REPO_ROOT / "locustfiles" / "kneo_dispatch.py"
MIN_REQUESTS = 15


def _requests(web) -> int:
    """This run's requests as its live steps count them (reset as START opens the run; Locust's own table is reset
    only at the shape's first tick, so a poll right after START may read the last run's)."""
    rows = web.get_json("/swarmgauge/api/live")["steps"]
    return sum(int(r["requests"]) + int(r.get("warmup_requests") or 0) for r in rows if r["name"] == "Aggregated")


def _one_run(web, page, runs: Path, count: int, least: int = MIN_REQUESTS) -> Path:
    start_from_form(page, web.url, {})
    wait_until(lambda: _requests(web) >= least or None, 180, f"{least} requests")
    page.get_by_role("button", name="STOP").click()
    return closed_folders(runs, count)[count - 1]


@pytest.mark.timeout(600)
def test_each_web_start_reconciles_its_own_runs_into_its_own_folder(tmp_path, kneo_venv):
    runs = tmp_path / "runs"
    with (
        web_locust(KNEO_DISPATCH, "--run-dir", str(runs), "--stop-timeout", "3", log_dir=tmp_path) as web,
        browser_page() as page,
    ):
        folders = [_one_run(web, page, runs, 1), _one_run(web, page, runs, 2)]
    docs = [json.loads((folder / "kneo.json").read_text()) for folder in folders]
    assert docs[0]["tag"] != docs[1]["tag"]
    for folder, doc in zip(folders, docs, strict=True):
        assert doc["error"] is None and doc["mismatches"] == 0, doc
        assert doc["ledger"]["accepted"] == locust_total(folder) > 0, (
            folder.name,
            doc,
        )  # this run's dispatches, not the process's
        assert json.loads((folder / "run.json").read_text())["kneo"]["tag"] == doc["tag"]


@pytest.mark.timeout(600)
def test_each_web_start_in_batch_mode_sends_its_whole_batch(tmp_path, kneo_venv):
    runs, batch = tmp_path / "runs", 12
    with (
        web_locust(
            KNEO_DISPATCH,
            *("--kneo-mode", "batch", "--kneo-batch", str(batch), "--run-dir", str(runs), "--stop-timeout", "3"),
            log_dir=tmp_path,
        ) as web,
        browser_page() as page,
    ):
        folders = [_one_run(web, page, runs, 1, batch), _one_run(web, page, runs, 2, batch)]
    for folder in folders:
        doc = json.loads((folder / "kneo.json").read_text())
        assert doc["ledger"]["accepted"] == locust_total(folder) == batch, (folder.name, doc["ledger"])
