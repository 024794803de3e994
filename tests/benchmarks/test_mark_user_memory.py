"""benchmarks/mark_user_memory.py: both kinds run under Locust against the reference server and report per user; a
bad option is exit 2 before any server starts. Structure only, never a figure."""

from __future__ import annotations

import json

import pytest

from benchmarks import mark_user_memory

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


def test_a_run_reports_resident_traced_and_stack_pages_per_user_of_each_kind(tmp_path):
    out = tmp_path / "users.json"
    assert mark_user_memory.main(["--users", "4", "--pace", "8", "--top", "40", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert set(doc["kinds"]) == {"mark", "noop"} and len(doc["load_average"]) == 3
    for figures in doc["kinds"].values():
        assert figures["rss_kib_per_user"] is not None and figures["traced_kib_per_user"] > 0
        assert 5 <= len(figures["top_lines"]) <= 40  # with init fired, a run's one-time set-up is among them
        assert figures["stack_pages_resident"] is None or sum(figures["stack_pages_resident"].values()) == 4
    assert any("qh3" in line["where"] for line in doc["kinds"]["mark"]["top_lines"])


@pytest.mark.parametrize("argv", [["--users", "0"], ["--pace", "0"], ["--kinds", "fast"], ["--top", "-1"]])
def test_a_bad_option_is_exit_2(argv, capsys):
    assert mark_user_memory.main(argv) == 2
    assert "--users" in capsys.readouterr().err
