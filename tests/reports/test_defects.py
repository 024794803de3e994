"""Issue 20's report defects that had no test of their own: the churn table's live column says what it is (the
client's upper bound beside the gateway's own count), and memory columns are named by what a reader can place."""

from __future__ import annotations

from swarmgauge.reports import mcp, resources
from tests.reports.test_mcp import churn_run


def test_the_churn_tables_live_column_is_the_clients_upper_bound_beside_the_gateways_count(tmp_path):
    churn_run(tmp_path)
    found = mcp.section(tmp_path)
    assert "live estimate" not in found.markdown
    assert "live (client upper bound)" in found.markdown
    assert "live (gateway)" in found.markdown  # the gauge that sees the TTL reap, beside the bound
    assert found.summary["ttl_drop"]["low_live"] == 0  # read from the gateway's series, not the client's 400


def test_memory_columns_of_pid_file_sources_are_the_components_names(tmp_path):
    lines = ["time,elapsed_s,step,node,source,metric,value,round\n"]
    for n in range(4):
        for component in ("worker-1", "kernel"):
            source = f"psutil:pidfile=/tmp/mdk-abc/pids/{component}.pid"
            lines.append(f"{1000 + n},{n},0,local,{source},rss_bytes,{(50 + n) * resources.MIB},{n}\n")
    (tmp_path / "resources.csv").write_text("".join(lines))
    section = resources.section(tmp_path)
    header = section.markdown.splitlines()[2]
    assert "kernel rss" in header and "worker-1 rss" in header and "pidfile" not in header
