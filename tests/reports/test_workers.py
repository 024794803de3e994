"""The "Lost workers" section from a run directory's run.json and steps.csv."""

from __future__ import annotations

import json
from pathlib import Path

from swarmgauge.listeners.steps_csv import write_rows
from swarmgauge.reports.report import render_report
from swarmgauge.reports.workers import lost_table, section


def _step(step: int, users: int, name: str, requests: int) -> dict:
    return {
        "step": step,
        "label": f"{users} users",
        "request_type": "GET" if name != "Aggregated" else "",
        "name": name,
        "users": users,
        "target_rate": "",
        "started_at": 1000.0 + 10 * step,
        "duration_s": 10,
        "requests": requests,
        "failures": 0,
        "fail_ratio": 0,
        "rps": requests / 10,
        "p50_ms": 5,
        "p90_ms": 6,
        "p99_ms": 9,
        "p999_ms": 12,
        "max_ms": 15,
        "avg_ms": 5.2,
        "warmup_requests": 0,
        "dropped": 0,
        "workers": 2 - step,
        "generator_cpu_max": 20,
        "generator_bound": False,
    }


STEPS = write_rows(
    [
        _step(0, 2, "/item", 100),
        _step(0, 2, "Aggregated", 100),
        _step(1, 4, "/item", 300),
        _step(1, 4, "Aggregated", 300),
    ]
)


def _run_dir(tmp_path: Path, lost: list | None) -> Path:
    (tmp_path / "steps.csv").write_text(STEPS)
    doc = {"started_at": 1000.0, "steps": [], "runner": "MasterRunner"}
    if lost is not None:
        doc["lost_workers"] = lost
    (tmp_path / "run.json").write_text(json.dumps(doc))
    return tmp_path


LOST = [
    {
        "worker": "host_abc123",
        "last_seen": 1004.2,
        "last_report_at": 1003.0,
        "noticed_at": 1008.9,
        "step": 0,
        "step_label": "2 users",
        "steps_touched": [0],
        "requests_reported": {"0": 41},
        "locust_requests_reported": 41,
    }
]


def test_table_names_the_worker_its_times_and_the_steps_it_touched(tmp_path: Path):
    table = lost_table(_run_dir(tmp_path, LOST))
    [row] = table.to_dict(orient="records")
    assert row["Worker"] == "host_abc123"
    assert row["Last heard from"].endswith("(+4.2 s)") and row["Noticed"].endswith("(+8.9 s)")
    assert row["In step"] == "0 (2 users)" and row["Steps touched"] == "0 (2 users)"
    assert row["Requests counted"] == 41


def test_no_section_without_lost_workers_or_without_run_json(tmp_path: Path):
    assert section(_run_dir(tmp_path, [])) is None
    assert section(_run_dir(tmp_path, None)) is None
    (tmp_path / "run.json").write_text("{not json")
    assert section(tmp_path) is None


def test_report_renders_the_section_in_markdown_and_html(tmp_path: Path):
    run_dir = _run_dir(tmp_path, LOST)
    render_report(run_dir)
    markdown = (run_dir / "report.md").read_text()
    assert "## Lost workers" in markdown and "| host_abc123 |" in markdown
    page = (run_dir / "report.html").read_text()
    assert "<td>host_abc123</td>" in page and "Lost workers" in page
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["Lost workers"]["lost_workers"][0]["Requests counted"] == 41


def test_a_worker_that_came_back_is_shown_as_rejoined_with_nothing_missing(tmp_path: Path):
    back = [{**LOST[0], "rejoined_at": 1013.5, "requests_reported": {"0": 41, "1": 97}}]
    [row] = lost_table(_run_dir(tmp_path, back)).to_dict(orient="records")
    assert row["Rejoined"].endswith("(+13.5 s)") and row["Requests counted"] == 138
    text = section(tmp_path).markdown
    assert "1 of them came back" in text and "nothing it measured is missing" in text


def test_a_worker_that_did_not_come_back_reads_no_and_no_return_is_claimed(tmp_path: Path):
    [row] = lost_table(_run_dir(tmp_path, LOST)).to_dict(orient="records")
    assert row["Rejoined"] == "no"
    assert "came back" not in section(tmp_path).markdown
