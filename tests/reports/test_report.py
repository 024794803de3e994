"""``swarmgauge report DIR``: the reference pages' read table and knee sentence from a real run against a target with
a capacity cap, interactive charts in report.html (one offline file), and Debian's Chromium, driven by Playwright,
hovering the throughput chart."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from swarmgauge.core.numbers import format_rate
from swarmgauge.reports.report import format_latency, knee_sentence, step_tables
from swarmgauge.run_folders import resolve
from tests.listeners.sim_run import ROOT, read_steps, run_local, sim_target

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs

CAPACITY, DELAY_MS = 2, 40  # the target serves at most 2 at once, 40 ms each: it tops out at 50 req/s
CEILING = CAPACITY * 1000.0 / DELAY_MS
TABLE_HEADER = ["Request", "Step (users)", "req/s", "p50", "p99", "errors"]


def _steps_frame(rows: list[tuple[int, int, float, float, float]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "step": i,
                "label": f"{u} users",
                "request_type": "QUIC",
                "name": "FETCH",
                "users": u,
                "target_rate": None,
                "rps": rps,
                "p50_ms": p50,
                "p99_ms": p99,
                "failures": 0,
                "generator_bound": False,
            }
            for i, (u, rps, p50, p99, _x) in enumerate(rows)
        ]
    ).assign(step=lambda f: range(len(f)))


def test_the_knee_sentence_of_the_demarkus_page():
    table = _steps_frame([(1, 53, 20, 26, 0), (4, 160, 21, 45, 0), (16, 159, 100, 166, 0), (64, 158, 423, 486, 0)])
    assert knee_sentence(table) == (
        "Throughput flattens at about 160 req/s from 4 users on; more users only queue "
        "(at 16 users Little's law gives 101 ms, measured p50 100 ms)."
    )
    assert knee_sentence(table.iloc[:2]).startswith("Throughput rises, from 53.0 req/s at 1 user to 160 req/s")
    assert format_latency(1770) == "1.77 s" and format_latency(20.4) == "20.4 ms"


def test_open_model_steps_show_their_rate_and_never_make_a_knee():
    table = _steps_frame([(10, 5.0, 20, 26, 0), (10, 5.0, 21, 45, 0)]).assign(target_rate=[5.0, 50.0])
    [(title, shown, knee)] = step_tables(table)
    assert list(shown["Step (rate)"]) == ["5/s", "50/s"] and "Step (users)" not in shown
    assert knee is None


def test_the_step_table_shows_unfinished_requests_only_when_there_are_some():
    table = _steps_frame([(2, 5.0, 20, 26, 0), (4, 9.0, 21, 45, 0)])
    [(_title, clean, _knee)] = step_tables(table.assign(unfinished=[0, 0]))
    assert "unfinished" not in clean
    [(_title, shown, _knee)] = step_tables(table.assign(failures=[0, 3], unfinished=[0, 3]))
    assert list(shown["unfinished"]) == [0, 3] and list(shown["errors"]) == [0, 3]
    [(_title, older, _knee)] = step_tables(table)  # a steps.csv written before the column: no column, no error
    assert "unfinished" not in older


@pytest.fixture(scope="module")
def capped_run(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("capped") / "run"
    with sim_target("--delay", f"const:{DELAY_MS}", "--capacity", str(CAPACITY)) as target:
        result = run_local(
            target.url,
            "--steps",
            "1,2,4,8",
            "--step-time",
            "2",
            "--stop-timeout",
            "5",
            "--run-dir",
            str(run_dir),
            "--no-report",
        )
    assert result.returncode == 0, result.stderr[-3000:]
    assert not (resolve(run_dir) / "report.md").exists()
    report = subprocess.run(
        [sys.executable, "-m", "swarmgauge.cli", "report", str(run_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert report.returncode == 0, report.stderr[-3000:]
    return resolve(run_dir)


def _markdown_table(text: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in text.splitlines()
        if line.startswith("|") and not set(line) <= set("|:- ")
    ]


def test_report_reproduces_the_read_table_and_the_knee(capped_run):
    md = (capped_run / "report.md").read_text()
    table = _markdown_table(md.split("## GET /item", 1)[1].split("\n\n", 2)[1])
    assert table[0][:6] == TABLE_HEADER
    assert [row[0] for row in table[1:]] == ["GET /item", "", "", ""]
    assert [row[1] for row in table[1:]] == ["1", "2", "4", "8"]
    assert all(re.fullmatch(r"[\d.]+ ms", row[3]) and re.fullmatch(r"[\d.]+ ms", row[4]) for row in table[1:])
    assert [row[5] for row in table[1:]] == ["0"] * 4
    knee = re.search(
        r"Throughput flattens at about ([\d.]+) req/s from (\d+) users on; more users only queue "
        r"\(at (\d+) users Little's law gives ([\d.]+) ms, measured p50 ([\d.]+) ms\)\.",
        md,
    )
    assert knee, md
    rps, little_ms = float(knee.group(1)), float(knee.group(4))
    users_from, users_at, p50_ms = int(knee.group(2)), int(knee.group(3)), knee.group(5)
    # the sentence's rate is the table's own flat rows, and never above what the capped server can serve (on a
    # loaded machine the generator may fall short of the cap: the knee is read from what was measured, not the cap)
    flat = [float(row[2]) for row in table[1:] if int(row[1]) >= users_from]
    assert min(flat) * 0.95 <= rps <= max(flat) * 1.05 and rps <= CEILING * 1.05
    assert users_from in (2, 4) and users_at == 2 * users_from
    row_at = next(row for row in table[1:] if row[1] == str(users_at))
    assert f"{p50_ms} ms" == row_at[3]  # the sentence quotes the table's own p50, not a figure of its own
    assert abs(little_ms - users_at * 1000.0 / float(row_at[2])) <= 0.02 * little_ms + 1  # the table rounds req/s
    rows = {r["users"]: float(r["rps"]) for r in read_steps(capped_run) if r["name"] == "Aggregated"}
    assert rows["8"] <= CEILING * 1.05


def test_summary_and_plots_are_written(capped_run):
    summary = json.loads((capped_run / "summary.json").read_text())
    assert "GET /item" in summary["knees"]
    assert summary["plots"] == ["throughput.png", "latency_over_time.png"]  # report.md's PNGs, beside it
    for name in summary["plots"]:
        assert (capped_run / name).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    page = (capped_run / "report.html").read_text()
    assert "<img" not in page.split("<h2>Plots</h2>", 1)[1].split("<h2>", 1)[0]  # charts, not pictures
    charts = re.findall(r'<div id="(chart-[a-z0-9-]+)" class="plotly-graph-div"', page)
    assert charts[:2] == ["chart-throughput", "chart-timeline"] and "chart-distribution-all" in charts
    assert (capped_run / "percentiles.csv").is_file()


def test_the_html_is_one_offline_file_with_plotly_inlined_once(capped_run):
    page = (capped_run / "report.html").read_text()
    assert not re.search(r"<script[^>]*\bsrc\s*=", page, re.I)  # no CDN, no file beside it: it works offline
    assert not re.search(r"""<link[^>]*href\s*=\s*["']https?:""", page, re.I)
    assert page.count("plotly.js v") == 1 or page.count("Copyright (c) 2012-") >= 1
    assert page.count("<script type='text/javascript'>") == 1  # the library itself, once for every chart


def test_the_step_table_names_its_columns_and_scrolls_inside_its_box(capped_run):
    page = (capped_run / "report.html").read_text()
    table = page.split("<h2>GET /item</h2>", 1)[1]
    assert table.startswith("<div class='table-box'><table>")
    assert "<th>Request</th><th>Step (users)</th><th>req/s</th>" in table.split("</thead>", 1)[0]


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    return found


def test_hovering_a_throughput_point_in_chromium_shows_the_steps_csv_figure(capped_run):
    """Playwright drives Debian's Chromium over the report as a file: each point of the measured req/s line, hovered
    with the mouse, shows the step's users and its req/s as steps.csv has it (3 significant digits)."""
    from tests.listeners.webui_harness import browser_page

    _chromium()
    expected = {
        r["users"]: format_rate(r["rps"]) for r in read_steps(capped_run) if r["name"] == "/item" and r["rps"] != ""
    }
    shown = {}
    with browser_page() as page:
        page.goto((capped_run / "report.html").as_uri())
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # no sideways page scroll
        points = page.locator("#chart-throughput g.xy .scatterlayer .trace").first.locator("path.point")
        assert points.count() == len(expected) == 4
        for index in range(points.count()):
            points.nth(index).scroll_into_view_if_needed()
            box = points.nth(index).bounding_box()
            page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            label = page.locator("#chart-throughput .hoverlayer .hovertext").first
            label.wait_for()
            found = re.search(r"(\d+) users: ([\d.,]+) req/s", label.text_content() or "")
            assert found, label.text_content()
            shown[found.group(1)] = found.group(2)
            page.mouse.move(0, 0)
    assert shown == expected
