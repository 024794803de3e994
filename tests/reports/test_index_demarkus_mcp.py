"""The demarkus page's MCP tool rows in the index: an 8-worker ``mark_lookup_all`` p50 past the page's says why the
stand-in's one LOOKUP cannot give it beside QUIC LOOKUP's tail; ``mark_fetch`` at 8 keeps the two tools' reason."""

from __future__ import annotations

import pandas as pd

from swarmgauge.reports.index_demarkus_mcp import mcp_tables, one_worker_why
from tests.reports.test_index_demarkus_writes import row, run_folder

WHY = "why it does not hold"


def test_an_eight_worker_lookup_all_p50_at_littles_mean_says_why_one_lookup_cannot_hold_it(tmp_path):
    rows = []
    for tool in ("mark_fetch", "mark_lookup_all"):
        for users, rps, p50, p99 in ((1, 53, 20, 26), (8, 158, 51, 130), (32, 160, 240, 280)):
            rows.append(row(f"{tool} {users}", "MCP", f"tools/call {tool}", users, rps=rps, p50_ms=p50, p99_ms=p99))
    tables = mcp_tables({"mcp-tools": run_folder(tmp_path, "mcp-tools", rows)}, [])
    why = {
        (str(step), int(workers)): str(text)
        for frame in tables
        for step, workers, text in zip(frame["Step"].replace("", pd.NA).ffill(), frame["Workers"], frame[WHY])
    }
    lookup_all = why[("MCP `mark_lookup_all` (one world)", 8)]
    assert "8 / 158 req/s = 50.6 ms" in lookup_all and "benchmarks/verb_cost_model.py" in lookup_all
    assert "one LOOKUP cannot be both" in lookup_all
    assert "Little's mean of 8 / 160 req/s = 50 ms" in why[("MCP `mark_fetch`", 8)]  # p99 130 against 85: strays


def test_the_one_worker_why_gives_the_gateways_cpu_a_call_this_run_measured():
    """A fixed figure in the why once said ~1.7 ms beside a row whose own columns gave 4.1: the why now reads the
    gateway's share of a core over the step's calls/s, and says when nothing was sampled."""
    assert "its QUIC hop; 4.2 ms here)" in one_worker_why(16.0, 38.0)
    assert "its QUIC hop; not sampled)" in one_worker_why(None, 38.0)
    assert "not sampled" in one_worker_why(16.0, 0.0)
