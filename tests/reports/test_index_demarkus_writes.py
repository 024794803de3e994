"""The demarkus page's write, MCP-tool and churn rows in the index, from hand-made run folders: each figure beside
the page's with its ratio, the burst's lost share, MCP against QUIC at 1 worker, the gateway's CPU, the sessions'
life at a sweep as a multiple of the TTL, the dedup WARN lines, and the page's rows that cannot run here listed with
their reason."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd

from swarmgauge.reports.index_demarkus_writes import NOT_REPRODUCIBLE, add_writes_and_mcp
from swarmgauge.reports.index_figures import PageSection
from swarmgauge.reports.index_grades import NO_RATIO, grade_table

COLUMNS = ["step", "label", "request_type", "name", "users", "requests", "failures", "rps", "p50_ms", "p99_ms"]
COLUMNS += ["avg_ms", "started_at", "duration_s"]


def run_folder(root: Path, name: str, rows: list[dict], **files: object) -> Path:
    run = root / name
    run.mkdir(parents=True)
    with open(run / "steps.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, restval="")
        writer.writeheader()
        writer.writerows(rows)
    for file_name, content in files.items():
        path = run / file_name.replace("_", ".")
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    return run


def row(label: str, request_type: str, name: str, users: int, **figures: float) -> dict:
    base = {"step": 0, "label": label, "request_type": request_type, "name": name, "users": users}
    return base | {"requests": 10, "failures": 0, "started_at": 0.0, "duration_s": 30.0} | figures


def resources(samples: list[tuple[float, str, str, float]]) -> str:
    lines = ["time,elapsed_s,step,node,source,metric,value,round"]
    lines += [f"{t},{t},0,local,{source},{metric},{value},0" for t, source, metric, value in samples]
    return "\n".join(lines) + "\n"


def table(section: PageSection, caption: str) -> pd.DataFrame:
    return next(frame for title, frame in section.tables if title == caption)


def measured(frame: pd.DataFrame, starts: str) -> pd.Series:
    return frame[frame["figure"].str.startswith(starts)].iloc[0]


def test_write_rows_beside_the_page_with_the_burst_lost_share_and_the_soak(tmp_path):
    publish = "/load/{doc}"
    runs = {
        "writes": run_folder(
            tmp_path, "writes", [row("soak", "PUBLISH", publish, 1, rps=0.66, p50_ms=1500, p99_ms=1520)]
        ),
        "writes-concurrent": run_folder(
            tmp_path,
            "concurrent",
            [row("soak", "PUBLISH", publish, 4, rps=0.66, p50_ms=4000, avg_ms=5400, p99_ms=9000)],
        ),
        "writes-burst": run_folder(
            tmp_path, "burst", [row("4 users", "PUBLISH", publish, 4, requests=200, failures=50, rps=4, p50_ms=900)]
        ),
        "writes-soak": run_folder(
            tmp_path,
            "soak",
            [row("soak", "PUBLISH", publish, 1, requests=22, rps=0.5, p50_ms=58, p99_ms=84)],
            resources_csv=resources([(t, "psutil:pid=7", "rss_bytes", 50e6) for t in range(8)]),
        ),
    }
    section = PageSection()
    add_writes_and_mcp(runs, section)
    writes = table(section, "Writes")
    assert measured(writes, "share of a 4-writer burst lost")["measured"] == "25.0%"
    assert measured(writes, "share of a 4-writer burst lost")["x"] == "1.02x"  # 25 % against the page's 49 of 200
    assert measured(writes, "p50 per publish, one writer")["page"] == "1.51 s"
    assert measured(writes, "mean wait per publish, 4 concurrent")["x"] == "0.90x"
    assert measured(writes, "p50 of a write spaced below the pacing")["page"] == "60 ms"
    assert measured(writes, "soak: writer memory")["measured"] == "+0.0 MiB"
    assert all(check.holds for check in section.checks), [c.text for c in section.checks if not c.holds]
    assert set(NOT_REPRODUCIBLE) <= set(section.not_reproducible)


def test_concurrent_writers_short_of_the_pages_six_seconds_say_why_with_the_run_s_own_losses(tmp_path):
    publish = "/load/{doc}"
    short = row("soak", "PUBLISH", publish, 4, requests=21, failures=4, avg_ms=4120, p50_ms=3000, p99_ms=10002)
    held = row("soak", "PUBLISH", publish, 4, requests=19, failures=2, avg_ms=4780, p50_ms=4500, p99_ms=9000)
    for name, figures, says in (("short", short, True), ("held", held, False)):
        section = PageSection()
        add_writes_and_mcp({"writes-concurrent": run_folder(tmp_path, name, [figures])}, section)
        graded = grade_table(table(section, "Writes")).table
        found = graded[graded["figure"].str.startswith("mean wait per publish, 4 concurrent")].iloc[0]
        why = str(found.get("why it does not hold", ""))
        assert (found["row"], bool(why)) == (("amber", True) if says else ("set by the stand-in", False))
        if says:
            assert "lost at the timeout (4 of 21 here)" in why and "= 4.9 s on average, not 6" in why


def test_mcp_tool_tables_in_the_page_layout_and_mcp_against_quic_at_one_worker(tmp_path):
    rows = []
    for tool in ("mark_fetch", "mark_lookup_all"):
        for users, rps, p50 in ((1, 50, 21), (8, 150, 55), (32, 150, 230)):
            rows.append(
                row(f"{tool} {users}", "MCP", f"tools/call {tool}", users, rps=rps, p50_ms=p50, p99_ms=p50 * 1.3)
            )
    rows.append(row("QUIC FETCH 1", "FETCH", "/corpus/{topic}/{doc}", 1, rps=52, p50_ms=20, p99_ms=26))
    section = PageSection()
    cpu = resources([(1.0, "psutil:pid=9", "cpu_percent", 30.0), (2.0, "psutil:pid=9", "cpu_percent", 50.0)])
    add_writes_and_mcp({"mcp-tools": run_folder(tmp_path, "mcp-tools", rows, resources_csv=cpu)}, section)
    tools = table(section, "Reads: the MCP tools")
    assert list(tools["Step"]) == ["MCP `mark_fetch`", "", "", "MCP `mark_lookup_all` (one world)", "", ""]
    assert list(tools["Workers"]) == [1, 8, 32, 1, 8, 32] and tools["page p50"].iloc[1] == "60 ms"
    assert tools["gateway CPU"].iloc[0] == "40 %"  # beside each row: a machine-bound gateway shows
    over = table(section, "The MCP gateway adds nothing visible over direct QUIC").iloc[0]
    assert over["measured"] == "1.05" and over["page"] == "1.00"


def test_churn_sessions_live_one_to_one_and_a_half_ttl_and_the_dedup_warns_per_new_session(tmp_path):
    gateway = "prom:http://127.0.0.1:1/metrics"
    samples = [
        (1.0, gateway, "mcp_gateway_sessions_live", 40.0),
        (2.0, gateway, "mcp_gateway_sessions_live", 88.0),
        (3.0, gateway, "mcp_gateway_swept_idle_min_seconds", 12.1),
        (3.0, gateway, "mcp_gateway_swept_idle_max_seconds", 17.9),
        (3.0, gateway, "mcp_gateway_sweep_largest", 30.0),
        (3.0, gateway, "mcp_gateway_dedup_warn_lines", 90.0),
        (3.0, gateway, "mcp_gateway_dedup_sessions_after_full", 100.0),
    ]
    summary = {"MCP sessions": {"sessions": {"sessions_started": 150}, "ttl_drop": {"peak_live": 88, "low_live": 0}}}
    options = {"options": {"mcp_embedded_args": "--session-idle-timeout 12 --dedup-cap 27"}}
    run = run_folder(
        tmp_path,
        "churn",
        [row("churn", "", "Aggregated", 32, p50_ms=9, duration_s=30.0)],
        resources_csv=resources(samples),
        summary_json=summary,
        run_json=options,
    )
    section = PageSection()
    add_writes_and_mcp({"churn": run}, section)
    churn = table(section, "MCP session churn")
    assert measured(churn, "new sessions a second")["measured"] == "5"
    assert measured(churn, "peak live sessions over rate x TTL")["measured"] == "1.47"
    assert measured(churn, "shortest idle life at a sweep")["measured"] == "1.01"
    assert measured(churn, "longest idle life at a sweep")["page"] == "1.50"
    assert measured(churn, "dedup WARN lines per new session")["measured"] == "0.90"
    assert any("lived 1.01 to 1.49 x the idle TTL" in check.text and check.holds for check in section.checks)


def test_memory_per_session_stands_beside_the_pages_with_its_ratio_but_is_not_graded(tmp_path):
    """Python RSS per session against Go's live heap compares two languages: both figures and their ratio are shown,
    and the row is "no ratio", not red, since it says nothing about the instrument."""
    summary = {"MCP sessions": {"memory_per_session": {"bytes": 44_500, "metric": "rss_bytes"}}}
    run = run_folder(tmp_path, "churn", [row("churn", "", "Aggregated", 32, p50_ms=4)], summary_json=summary)
    section = PageSection()
    add_writes_and_mcp({"churn": run}, section)
    churn = table(section, "MCP session churn")
    memory = measured(churn, "memory per live session")
    assert (memory["measured"], memory["page"]) == ("44.5 KB", "9.6 KB")
    assert memory["x"].startswith("4.6 times") and "compares the languages" in memory["figure"]
    assert grade_table(churn).grades[list(churn["figure"]).index(memory["figure"])] == NO_RATIO
