"""benchmarks/mark_connection_memory.py: both children run against the reference server and report per connection;
a bad count is exit 2 before any server starts. Structure only, never a figure."""

from __future__ import annotations

import json

import pytest

from benchmarks import mark_connection_memory

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


def test_a_run_reports_resident_traced_and_native_memory_per_connection(tmp_path):
    out = tmp_path / "memory.json"
    assert mark_connection_memory.main(["--connections", "3", "--top", "4", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["connections"] == 3 and len(doc["load_average"]) == 3
    assert doc["rss"]["rss_kib_per_connection"] is not None
    assert doc["traced"]["traced_kib_per_connection"] > 0 and len(doc["traced"]["top_lines"]) == 4
    assert "qh3 native core object" in doc["traced"]["traced_bytes_by_part"]


def test_a_count_out_of_range_is_exit_2(capsys):
    assert mark_connection_memory.main(["--connections", "0"]) == 2
    assert "--connections" in capsys.readouterr().err
