"""benchmarks/mcp_client.py on a short run against the real gateway: every case makes real calls with no failure,
the table and the JSON hold each client side by side with the goals. Structure and counts only, never a figure."""

from __future__ import annotations

import json

import pytest

from benchmarks import mcp_client

pytestmark = pytest.mark.integration  # runs every MCP client against a started gateway


@pytest.mark.timeout(120)
def test_short_run_prints_every_client_side_by_side_and_writes_json(tmp_path, capsys):
    out = tmp_path / "mcp_client.json"
    assert mcp_client.main(["--duration", "1.5", "--warmup", "0.5", "--mode", "json", "--out", str(out)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "| " + " | ".join(mcp_client.HEADER) + " |"
    assert [line.split(" | ")[0].lstrip("| ") for line in lines[2:6]] == list(mcp_client.CASES)
    assert lines[6].startswith("mcpuser_over_sdk: ") and lines[7].startswith("mcpuser_over_bare_fasthttp: ")
    doc = json.loads(out.read_text())
    assert [row["client"] for row in doc["rows"]] == list(mcp_client.CASES)
    assert all(row["calls"] > 0 and row["failed"] == 0 and row["cpu_us_per_call"] > 0 for row in doc["rows"])
    assert set(doc["goals"]) == set(mcp_client.GOALS)
    assert all(goal["measured"] is not None and isinstance(goal["met"], bool) for goal in doc["goals"].values())
    assert doc["settings"]["mode"] == "json" and doc["machine"]["cpus"] >= 1


@pytest.mark.parametrize(
    "args, says",
    [
        (["--cases", "mcpuser,curl"], "--cases takes"),
        (["--mode", "xml"], "--mode takes sse or json"),
        (["--duration", "0"], "--duration must be positive"),
    ],
)
def test_bad_options_are_refused_in_one_line(args, says, capsys):
    assert mcp_client.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mcp_client: ") and says in err and len(err.splitlines()) == 1


def test_goals_compare_mcpuser_with_the_sdk_and_the_bare_post():
    rows = [
        {"client": "mcpuser", "cpu_us_per_call": 100.0},
        {"client": "sdk", "cpu_us_per_call": 400.0},
        {"client": "bare-fasthttp", "cpu_us_per_call": 80.0},
    ]
    reached = mcp_client.goals(rows)
    assert reached["mcpuser_over_sdk"] == {"goal_at_most": 0.5, "measured": 0.25, "met": True}
    assert reached["mcpuser_over_bare_fasthttp"]["measured"] == pytest.approx(1.25)
    assert mcp_client.goals(rows[:1])["mcpuser_over_sdk"]["met"] is False
