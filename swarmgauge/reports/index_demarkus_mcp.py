"""The demarkus page's MCP tool tables in the index: ``mark_fetch`` and ``mark_lookup_all`` at 1, 8 and 32 workers
beside the page's, with the gateway's and the generator's CPU, and MCP against direct QUIC at one worker.

From the ``mcp-tools`` workload's run folder (``steps.csv``, ``resources.csv``). Each tolerance says in a comment what
noise or model it allows for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from swarmgauge.reports.index_demarkus_reads import VERB_MODEL, bucket_setting, with_reasons
from swarmgauge.reports.index_figures import Check, figure, ms, read_steps, requests_of, run_json, step_table

#: why an MCP row is out of reach here, in one line (shown only when the row strays past its tolerance)
ONE_WORKER = (
    "one worker waits out every call in turn: the Python gateway's own CPU a call (uvicorn, the MCP SDK, its QUIC "
    "hop; {gateway}) and the generator's MCP client's ride on each 20 ms read, where the page's Go gateway adds "
    "nothing visible"
)


def one_worker_why(gateway_cpu: float | None, rps: float) -> str:
    """The 1-worker rows' why, with the gateway's CPU a call as this run measured it (its share of a core over the
    step's calls/s)."""
    said = f"{gateway_cpu * 10 / rps:.1f} ms here" if gateway_cpu is not None and rps > 0 else "not sampled"
    return ONE_WORKER.format(gateway=said)


EIGHT_WORKERS = (
    "the page's two 8-worker rows through one bucket end p99 at 85 and 104 ms and put p50 at 60 and 40 ms about "
    "Little's mean of 8 / 160 req/s = 50 ms; the stand-in gives both tools the same, about 50 and 105 ms"
)
LOOKUP_ALL_EIGHT = (
    "the stand-in's near-even service puts an 8-worker p50 at Little's mean, 8 / 158 req/s = 50.6 ms (1.26x the "
    "page's 40), for either tool, where the page puts mark_lookup_all's 0.8x below that mean (p50 40, p99 104) and "
    "mark_fetch's 1.2x above it (60, 85) through the same bucket; a LOOKUP spread wider than FETCH's at the same mean "
    "(lognormal sigma 0.4-0.6 against 0.2) pulls this p50 to 49-50 ms, holding in 81-92 % of 4 s windows, but puts "
    f"QUIC LOOKUP's 16-user p99 at 1.19-1.21x, the page's tightest 16-user tail ({VERB_MODEL}): one LOOKUP cannot "
    "be both"
)
MCP_REASONS = {
    ("MCP `mark_fetch`", 8): EIGHT_WORKERS,
    ("MCP `mark_lookup_all` (one world)", 8): LOOKUP_ALL_EIGHT,
}
MCP_FETCH: dict[int, tuple[float, ...]] = {1: (53, 20, 26), 8: (160, 60, 85), 32: (160, 260, 268)}
MCP_LOOKUP_ALL: dict[int, tuple[float, ...]] = {1: (53, 20, 27), 8: (160, 40, 104), 32: (160, 240, 287)}


def cpu_by_step(resources: pd.DataFrame) -> dict[int, float]:
    """The sampled target's (the gateway's) mean CPU per step, in % of one core."""
    if resources.empty:
        return {}
    rows = resources[(resources["metric"] == "cpu_percent") & resources["source"].astype(str).str.startswith("psutil:")]
    return {int(step): float(value) for step, value in rows.groupby("step")["value"].mean().items()}


def mcp_tables(runs: dict[str, Path | None], checks: list[Check]) -> list[pd.DataFrame]:
    run = runs.get("mcp-tools")
    steps = read_steps(run)
    if steps.empty:
        return []
    cpu = cpu_by_step(run_resources(run))
    # the MCP workload's Mark server has the reads' bottleneck (``cli.demo_pages.MARK_BOTTLENECK``), as the run had it
    options = (run_json(runs, "mcp-tools", "run.json") or {}).get("options") or {}
    bucket = bucket_setting(str(options.get("mcp_mark_args") or ""))
    tables = []
    for tool, page, label in (
        ("mark_fetch", MCP_FETCH, "MCP `mark_fetch`"),
        ("mark_lookup_all", MCP_LOOKUP_ALL, "MCP `mark_lookup_all` (one world)"),
    ):
        rows = requests_of(steps[steps["label"].astype(str).str.startswith(tool + " ")], "MCP")
        rows = rows[rows["name"] == f"tools/call {tool}"].reset_index(drop=True)
        if not rows.empty:
            # the gateway is Python on 2 shared cores against the page's Go: the ceiling is the bucket's 160 only
            # while the gateway (and the Mark server behind it) keep up, so past 8 workers the rows carry the
            # machine's load; the gateway's and the generator's CPU are beside each row to tell them apart
            shown = step_table(rows, page, label, "Step", tolerance=0.25, set_by=bucket)
            shown["gateway CPU"] = [f"{cpu[int(step)]:.0f} %" if int(step) in cpu else "" for step in rows["step"]]
            if "generator_cpu_max" in rows:
                shown["generator CPU"] = [
                    "" if pd.isna(value) else f"{float(value):.0f} %" for value in rows["generator_cpu_max"]
                ]
            one = rows[rows["users"].astype(int) == 1]
            reasons = dict(MCP_REASONS)
            if not one.empty:
                step, rps = int(one["step"].iloc[0]), float(one["rps"].iloc[0])
                reasons[(label, 1)] = one_worker_why(cpu.get(step), rps)
            tables.append(with_reasons(shown, reasons))
    return tables


def mcp_over_quic(runs: dict[str, Path | None], checks: list[Check]) -> dict[str, Any] | None:
    steps = read_steps(runs.get("mcp-tools"))
    if steps.empty:
        return None
    tool = steps[(steps["label"].astype(str) == "mark_fetch 1") & (steps["name"] == "tools/call mark_fetch")]
    direct = requests_of(steps[steps["label"].astype(str) == "QUIC FETCH 1"], "FETCH")
    if tool.empty or direct.empty:
        return None
    mcp_p50, quic_p50 = float(tool["p50_ms"].iloc[0]), float(direct["p50_ms"].iloc[0])
    checks.append(
        Check(
            mcp_p50 - quic_p50 <= 0.25 * quic_p50,
            f"MCP mark_fetch p50 {ms(mcp_p50)} against QUIC FETCH {ms(quic_p50)} at 1 worker (page: identical, 20 ms)",
        )
    )
    # the page rounds both to 20 ms; the Python gateway's own few ms on a 20 ms floor are inside a quarter
    return figure(
        f"MCP over QUIC at 1 worker, p50 ratio ({ms(mcp_p50)} / {ms(quic_p50)})",
        mcp_p50 / quic_p50,
        1.0,
        lambda v: f"{float(v):.2f}",
        tolerance=0.25,
    )


def run_resources(run: Path | None) -> pd.DataFrame:
    """A run folder's ``resources.csv`` (empty when the run sampled none)."""
    if run is None or not (run / "resources.csv").is_file():
        return pd.DataFrame()
    return pd.read_csv(run / "resources.csv")
