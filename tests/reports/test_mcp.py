"""reports/mcp.py over synthetic run directories with a known ground truth: memory per live session is the slope
put in, the TTL drop is found after the peak, gateway minus direct p50 is the difference of the steps.csv rows."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from swarmgauge.reports import mcp
from swarmgauge.reports.report import render_report

T0 = 1_800_000_000.0
PER_SESSION = 40 * 1024
BASE = 70 * 2**20
STEP_COLUMNS = [
    "step",
    "label",
    "request_type",
    "name",
    "users",
    "target_rate",
    "started_at",
    "duration_s",
    "requests",
    "failures",
    "rps",
    "p50_ms",
    "p99_ms",
    "dropped",
    "tickets",
    "sessions_started",
    "sessions_expired",
    "sessions_refused",
    "generator_bound",
]


def write(path: Path, columns: list[str], rows: list[dict]) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def step_row(step, label, rtype, name, **values):
    row = {c: "" for c in STEP_COLUMNS}
    row.update(
        step=step,
        label=label,
        request_type=rtype,
        name=name,
        generator_bound="False",
        failures=0,
        dropped=0,
        tickets=0,
        sessions_started=0,
        sessions_expired=0,
        sessions_refused=0,
    )
    row.update(values)
    return row


def churn_run(run_dir: Path, *, gauge: bool = True, ttl: float = 20.0) -> None:
    """10 sessions/s for 40 s, then 30 s idle; the gateway reaps each session ``ttl`` s after it started."""
    common = dict(users=16, target_rate=10.0, started_at=T0, duration_s=40.0)
    steps = [
        step_row(0, "churn", "MCP", name, requests=400, p50_ms=p50, **common)
        for name, p50 in (("initialize", 15.0), ("initialized", 6.0), ("tools/call mark_fetch", 24.0))
    ]
    steps.append(step_row(0, "churn", "", "Aggregated", requests=1200, tickets=400, sessions_started=400, **common))
    steps.append(step_row(1, "idle", "", "Aggregated", users=0, started_at=T0 + 40, duration_s=30.0, requests=0))
    write(run_dir / "steps.csv", STEP_COLUMNS, steps)
    rows = []
    for second in range(71):
        started = min(second, 40) * 10
        reaped = max(0, min(second - ttl, 40)) * 10 if second > ttl else 0
        live = started - reaped
        memory = BASE + PER_SESSION * min(started, ttl * 10)  # freed memory is kept and reused, never returned
        step = 0 if second < 40 else 1
        rows.append(
            dict(
                time=T0 + second + 0.01,
                elapsed_s=second,
                step=step,
                node="local",
                source="psutil:pid=42",
                metric="rss_bytes",
                value=memory,
                round=second,
            )
        )
        rows.append(
            dict(
                time=T0 + second + 0.01,
                elapsed_s=second,
                step=step,
                node="local",
                source="generator",
                metric="rss_bytes",
                value=5e9,
                round=second,
            )
        )
        if gauge:
            rows.append(
                dict(
                    time=T0 + second + 0.02,
                    elapsed_s=second,
                    step=step,
                    node="local",
                    source="prom:http://127.0.0.1:1/metrics#mcp_gateway_sessions_live",
                    metric="mcp_gateway_sessions_live",
                    value=live,
                    round=second,
                )
            )
    write(run_dir / "resources.csv", ["time", "elapsed_s", "step", "node", "source", "metric", "value", "round"], rows)


def test_memory_per_live_session_and_the_ttl_drop_from_the_gateway_gauge(tmp_path):
    churn_run(tmp_path)
    found = mcp.section(tmp_path)
    assert found is not None and found.title == "MCP sessions"
    memory = found.summary["memory_per_session"]
    assert memory["bytes"] == pytest.approx(PER_SESSION, rel=0.01)
    assert memory["live_source"] == "gateway gauge" and memory["source"] == "psutil:pid=42"
    drop = found.summary["ttl_drop"]
    assert drop["peak_live"] == 200 and drop["low_live"] == 0 and drop["low_at_s"] >= 60
    assert found.summary["sessions"] == {"sessions_started": 400, "sessions_expired": 0, "sessions_refused": 0}
    assert "40.0 KiB" in found.markdown
    assert "reached 200 (at 20 s), held at about 200 from 20 s to 42 s, then fell to 0 (at 60 s)" in found.markdown
    assert drop["held_until_s"] == 42  # within 10 % of the peak until 2 s after the load ended, read from the series
    assert "| churn  | 10/s" in found.markdown and "24.0 ms" in found.markdown


def test_without_the_gauge_the_client_estimate_is_used(tmp_path):
    churn_run(tmp_path, gauge=False, ttl=100.0)  # no reaping within the run: the estimate is the truth
    found = mcp.section(tmp_path)
    memory = found.summary["memory_per_session"]
    assert memory["live_source"] == "client estimate"
    assert memory["bytes"] == pytest.approx(PER_SESSION, rel=0.03)
    assert "ttl_drop" not in found.summary  # the client saw no 404, and nothing else tells it sessions went


def test_estimate_is_linear_within_a_step_and_cumulative_across_steps():
    import pandas as pd

    churn = pd.DataFrame(
        [
            {"started_at": 100.0, "duration_s": 10.0, "live_start": 0, "live_end": 50},
            {"started_at": 110.0, "duration_s": 10.0, "live_start": 50, "live_end": 40},
        ]
    )
    values = mcp.estimate_at(churn, pd.Series([99.0, 105.0, 110.0, 115.0, 130.0]))
    assert list(values) == [0.0, 25.0, 50.0, 45.0, 40.0]


def test_gateway_minus_direct_at_one_user(tmp_path):
    write(
        tmp_path / "steps.csv",
        STEP_COLUMNS,
        [
            step_row(0, "gateway", "MCP", "tools/call mark_fetch", users=1, requests=500, p50_ms=4.25),
            step_row(0, "gateway", "MCP", "initialize", users=1, requests=1, p50_ms=9.0),
            step_row(1, "direct", "FETCH", "/corpus/{topic}/{doc}", users=1, requests=900, p50_ms=1.5),
            step_row(2, "more", "FETCH", "/corpus/{topic}/{doc}", users=4, requests=2000, p50_ms=3.0),
        ],
    )
    found = mcp.section(tmp_path)
    compared = found.summary["gateway_vs_direct"]
    assert compared["difference_ms"] == pytest.approx(2.75)
    assert compared["direct_step"] == "direct"
    assert "= **+2.75 ms**" in found.markdown


def test_no_mcp_rows_no_section_and_the_report_includes_it(tmp_path):
    write(tmp_path / "steps.csv", STEP_COLUMNS, [step_row(0, "x", "FETCH", "/a", users=1, requests=3, p50_ms=1.0)])
    assert mcp.section(tmp_path) is None
    assert mcp.section(tmp_path / "missing") is None
    churn_run(tmp_path)
    summary = render_report(tmp_path)
    assert summary["MCP sessions"]["memory_per_session"]["bytes"] > 0
    text = (tmp_path / "report.md").read_text()
    assert "## MCP sessions" in text and "Memory per live session on the gateway" in text
    assert "Memory per live session" in (tmp_path / "report.html").read_text()
