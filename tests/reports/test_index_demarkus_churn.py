"""The demarkus page's MCP session churn in the index: the p50 over the session's calls says why it strays from the
page's 10 ms, with the run's own p50 of each call, and says nothing when it holds."""

from __future__ import annotations

from swarmgauge.reports.index_demarkus_reads import WHY
from swarmgauge.reports.index_demarkus_writes import add_writes_and_mcp
from swarmgauge.reports.index_figures import PageSection
from tests.reports.test_index_demarkus_writes import measured, row, run_folder, table

CALLS = "p50 of the session's calls"


def churn_run(tmp_path, p50_ms: float):
    rows = [
        row("churn", "MCP", "initialize", 32, p50_ms=3.7),
        row("churn", "MCP", "initialized", 32, p50_ms=1.6),
        row("churn", "MCP", "tools/call mark_fetch", 32, p50_ms=3.5),
        row("churn", "", "Aggregated", 32, p50_ms=p50_ms),
    ]
    summary = {"MCP sessions": {"sessions": {"sessions_started": 150}}}
    return run_folder(tmp_path, "churn", rows, summary_json=summary)


def test_a_calls_p50_far_below_the_pages_says_the_page_timed_its_brokers_session_set_up(tmp_path):
    section = PageSection()
    add_writes_and_mcp({"churn": churn_run(tmp_path, 3.2)}, section)
    calls = measured(table(section, "MCP session churn"), CALLS)
    why = str(calls[WHY])
    assert "initialize 3.7 ms, initialized 1.6 ms, tools/call mark_fetch 3.5 ms" in why
    assert "the three together 8.8 ms" in why and "does not break its 10 ms down" in why
    assert "second slowest" in why and "kube-proxy adds nothing visible" in why and "\n" not in why


def test_a_calls_p50_within_its_tolerance_says_nothing(tmp_path):
    section = PageSection()
    add_writes_and_mcp({"churn": churn_run(tmp_path, 8.0)}, section)
    assert WHY not in table(section, "MCP session churn").columns  # no other churn row has a reason either
