"""``swarmgauge report DIR``: the reference pages' read table and knee sentence from a real run against a target with
a capacity cap, plots embedded in report.html, and a headless Chromium that opens it and loads every image."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from swarmgauge.reports.report import format_latency, knee_sentence, step_tables
from swarmgauge.run_folders import resolve
from tests.listeners.sim_run import ROOT, read_steps, run_local, sim_target

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs

CAPACITY, DELAY_MS = 2, 40  # the target serves at most 2 at once, 40 ms each: it tops out at 50 req/s
CEILING = CAPACITY * 1000.0 / DELAY_MS
TABLE_HEADER = ["Step", "Users", "req/s", "p50", "p99", "errors"]
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


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
    assert list(shown["Users"]) == ["5/s", "50/s"]
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
    assert abs(rps - CEILING) <= 0.15 * CEILING
    assert users_from in (2, 4) and users_at == 2 * users_from
    assert abs(little_ms - users_at * 1000.0 / CEILING) <= 0.15 * users_at * 1000.0 / CEILING
    row_at = next(row for row in table[1:] if row[1] == str(users_at))
    assert f"{p50_ms} ms" == row_at[3]  # the sentence quotes the table's own p50, not a figure of its own
    assert abs(little_ms - users_at * 1000.0 / float(row_at[2])) <= 0.02 * little_ms + 1  # the table rounds req/s
    rows = {r["users"]: float(r["rps"]) for r in read_steps(capped_run) if r["name"] == "Aggregated"}
    assert rows["8"] <= CEILING * 1.05


def test_summary_and_plots_are_written(capped_run):
    summary = json.loads((capped_run / "summary.json").read_text())
    assert "GET /item" in summary["knees"]
    assert summary["plots"] == ["throughput.png", "latency_over_time.png"]
    for name in summary["plots"]:
        assert (capped_run / name).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    page = (capped_run / "report.html").read_text()
    images = re.findall(r"<img alt='([^']+)' src='data:image/png;base64,([^']+)'>", page)
    assert [alt for alt, _data in images] == ["Throughput and p50/p99 against users", "Latency over time"]
    assert all(base64.b64decode(data).startswith(b"\x89PNG") for _alt, data in images)


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    return found


def _run_chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / "profile"
    return subprocess.run(
        [_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True, timeout=90
    )


def test_chromium_opens_the_report_and_shows_the_plots(capped_run, tmp_path):
    from PIL import Image, ImageStat

    shot = tmp_path / "report.png"
    result = _run_chromium(
        tmp_path, f"--screenshot={shot}", "--window-size=1200,2000", (capped_run / "report.html").as_uri()
    )
    assert shot.is_file(), result.stderr[-2000:]
    with Image.open(shot) as image:
        assert image.size == (1200, 2000)
        grey = image.convert("L")
        assert max(ImageStat.Stat(grey).stddev) > 10  # not a blank page
        colours = image.convert("RGB").getcolors(maxcolors=1_000_000) or []
        assert sum(1 for _count, (r, g, b) in colours if abs(r - b) > 60) > 20  # the plots' coloured lines

    # A page that loads each of the report's images and writes down their decoded sizes, read back as the DOM.
    sources = re.findall(r"src='(data:image/png;base64,[^']+)'", (capped_run / "report.html").read_text())
    probe = tmp_path / "probe.html"
    probe.write_text(
        "<!doctype html><body><div id='out'></div><script>const out=document.getElementById('out');"
        + "".join(
            f"{{const i=new Image();i.onload=()=>out.append('loaded:'+i.naturalWidth+'x'"
            f"+i.naturalHeight+';');i.onerror=()=>out.append('failed;');i.src={json.dumps(s)};}}"
            for s in sources
        )
        + "</script></body>"
    )
    dom = _run_chromium(tmp_path, "--virtual-time-budget=5000", "--dump-dom", probe.as_uri())
    written = re.search(r'<div id="out">(.*?)</div>', dom.stdout)
    assert written, dom.stdout[-2000:]
    loaded = re.findall(r"loaded:(\d+)x(\d+);", written.group(1))
    assert len(loaded) == len(sources) == 2, written.group(1)
    assert all(int(w) > 300 and int(h) > 200 for w, h in loaded)
    assert "failed;" not in written.group(1)
