"""Report section for MCP runs: session churn, memory per live session, the idle-TTL drop, gateway vs direct.

From ``steps.csv``: per churn step the sessions started, expired (404) and refused (503), the live-session
estimate (started minus expired minus refused, cumulative) and the p50 of the three calls. From
``resources.csv``: the gateway's memory (working set when a cgroup source was sampled, else USS, else RSS of a
``psutil:`` source) and, when sampled, its own live-session gauge (``mcp_gateway_sessions_live``). Memory per live
session is the least-squares slope of memory against live sessions over the samples after warm-up (the first
tenth of the growth) up to the peak of live sessions; the gateway's gauge is used when there is one (it sees the
TTL reap, the client cannot), else the estimate, interpolated in time within each step. The drop is what the
gauge (or the 404 count) shows after the peak. Gateway vs direct: at 1 user, ``tools/call mark_fetch`` p50 minus
``FETCH`` p50.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from swarmgauge.core.numbers import number
from swarmgauge.reports.sections import Section

LIVE_GAUGE = "mcp_gateway_sessions_live"
MEMORY_METRICS = ("working_set_bytes", "uss_bytes", "rss_bytes")
COUNTERS = ("sessions_started", "sessions_expired", "sessions_refused")
CALLS = ("initialize", "initialized")
WARMUP_FRACTION = 0.1
MIN_SAMPLES = 3
MAX_ROWS = 24
PLATEAU = 0.9  # live sessions within 10 % of the peak are still the plateau
MIB = 2**20


@dataclass
class MemoryFit:
    bytes_per_session: float
    samples: int
    metric: str
    source: str
    live_source: str


def _ms(value: Any) -> str:
    figure = number(value)
    return "" if figure is None else (f"{figure:.1f} ms" if figure < 100 else f"{figure:.0f} ms")


def churn_steps(steps: pd.DataFrame) -> pd.DataFrame:
    """One row per step that started, expired or refused a session, with the cumulative live estimate."""
    if not all(c in steps for c in COUNTERS):
        return pd.DataFrame()
    agg = steps[steps["name"] == "Aggregated"].sort_values("step").copy()
    for column in COUNTERS + ("dropped",):
        agg[column] = pd.to_numeric(agg.get(column, 0), errors="coerce").fillna(0).astype(int)
    agg["live_end"] = (agg["sessions_started"] - agg["sessions_expired"] - agg["sessions_refused"]).cumsum()
    agg["live_start"] = agg["live_end"].shift(1, fill_value=0)
    active = agg[(agg[list(COUNTERS)].sum(axis=1) > 0) | (agg["live_end"] > 0)]
    return active.reset_index(drop=True)


def estimate_at(churn: pd.DataFrame, times: pd.Series) -> pd.Series:
    """The live-session estimate at each wall time, linear within a step (sessions start at a fixed rate)."""
    values = pd.Series(0.0, index=times.index)
    for _, row in churn.iterrows():
        start, span = number(row["started_at"]), number(row["duration_s"]) or 0.0
        if start is None:
            continue
        fraction = ((times - start) / span).clip(0.0, 1.0) if span > 0 else (times >= start).astype(float)
        inside = times >= start
        values[inside] = row["live_start"] + (row["live_end"] - row["live_start"]) * fraction[inside]
    return values


def _memory_series(resources: pd.DataFrame) -> tuple[pd.DataFrame, str, str] | None:
    """(time, elapsed_s, step, value) of the first target memory metric found, with its metric and source."""
    targets = resources[~resources["source"].isin(("generator", "locust"))]
    for metric in MEMORY_METRICS:
        rows = targets[targets["metric"] == metric]
        if not rows.empty:
            source = sorted(rows["source"].astype(str).unique())[0]
            chosen = rows[rows["source"] == source].sort_values("time")
            return chosen[["time", "elapsed_s", "step", "value"]].reset_index(drop=True), metric, source
    return None


def _gauge_series(resources: pd.DataFrame) -> pd.DataFrame | None:
    rows = resources[resources["metric"] == LIVE_GAUGE]
    if rows.empty:
        return None
    return rows.groupby("time", as_index=False)["value"].sum().sort_values("time").reset_index(drop=True)


def samples(resources: pd.DataFrame, churn: pd.DataFrame) -> tuple[pd.DataFrame, str, str, str] | None:
    """Memory samples with the live sessions beside them (gauge when sampled, else the estimate)."""
    found = _memory_series(resources)
    if found is None:
        return None
    memory, metric, source = found
    table = memory.rename(columns={"value": "memory"})
    table["estimate"] = estimate_at(churn, table["time"]) if not churn.empty else float("nan")
    gauge = _gauge_series(resources)
    if gauge is not None:
        table = pd.merge_asof(
            table, gauge.rename(columns={"value": "gauge"}), on="time", direction="nearest", tolerance=2.0
        )
    table["live"] = table["gauge"] if gauge is not None else table["estimate"]
    return table, metric, source, ("gateway gauge" if gauge is not None else "client estimate")


def fit_memory(table: pd.DataFrame, metric: str, source: str, live_source: str) -> MemoryFit | None:
    """Slope of memory over live sessions while they grow, after the first tenth of the growth."""
    data = table.dropna(subset=["live", "memory"])
    if data.empty or data["live"].max() <= 0:
        return None
    peak_at = data.loc[data["live"].idxmax(), "time"]
    growing = data[(data["time"] <= peak_at) & (data["live"] > 0)]
    if growing.empty:
        return None
    began = growing["time"].min()
    growth = growing[growing["time"] >= began + WARMUP_FRACTION * (peak_at - began)]
    if len(growth) < MIN_SAMPLES or growth["live"].max() == growth["live"].min():
        return None
    x, y = growth["live"].astype(float), growth["memory"].astype(float)
    slope = ((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum()
    return MemoryFit(float(slope), len(growth), metric, source, live_source)


def ttl_drop(table: pd.DataFrame) -> dict[str, Any] | None:
    """Peak of live sessions and the lowest point after it, with memory at both (None when nothing dropped)."""
    data = table.dropna(subset=["live"])
    if data.empty:
        return None
    peak = data.loc[data["live"].idxmax()]
    after = data[data["time"] > peak["time"]]
    if after.empty:
        return None
    low = after.loc[after["live"].idxmin()]
    if peak["live"] <= 0 or low["live"] > 0.9 * peak["live"]:
        return None
    below = after[after["live"] < PLATEAU * peak["live"]]
    held = data[(data["time"] >= peak["time"]) & (data["time"] < below["time"].iloc[0])]
    return {
        "peak_live": float(peak["live"]),
        "peak_at_s": float(peak["elapsed_s"]),
        "held_until_s": float(held["elapsed_s"].iloc[-1]),
        "plateau_live": float(held["live"].median()),
        "peak_memory": float(peak["memory"]),
        "low_live": float(low["live"]),
        "low_at_s": float(low["elapsed_s"]),
        "low_memory": float(low["memory"]),
        "end_memory": float(data["memory"].iloc[-1]),
    }


def over_time(table: pd.DataFrame, max_rows: int = MAX_ROWS) -> pd.DataFrame:
    span = float(table["elapsed_s"].max() or 0.0)
    width = max(1.0, span / max_rows)
    binned = table.assign(bin=(table["elapsed_s"] // width).astype(int)).groupby("bin").last()
    out = pd.DataFrame(
        {
            "from s": [f"{b * width:.0f}" for b in binned.index],
            "step": [("" if pd.isna(s) else str(int(s))) for s in binned["step"]],
        }
    )
    if "gauge" in binned:
        out["live (gateway)"] = [("" if pd.isna(v) else f"{v:.0f}") for v in binned["gauge"]]
    out["live (client upper bound)"] = [("" if pd.isna(v) else f"{v:.0f}") for v in binned["estimate"]]
    out["memory MiB"] = [f"{v / MIB:.1f}" for v in binned["memory"]]
    return out


def _p50(steps: pd.DataFrame, step: Any, rtype: str, name: str) -> Any:
    rows = steps[(steps["step"] == step) & (steps["request_type"] == rtype) & (steps["name"] == name)]
    return rows["p50_ms"].iloc[0] if not rows.empty else None


def churn_table(steps: pd.DataFrame, churn: pd.DataFrame, tool_name: str | None) -> pd.DataFrame:
    rows = []
    for _, row in churn.iterrows():
        entry = {
            "Step": row["label"],
            "rate": "" if number(row["target_rate"]) is None else f"{number(row['target_rate']):g}/s",
            "started": int(row["sessions_started"]),
            "expired (404)": int(row["sessions_expired"]),
            "refused (503)": int(row["sessions_refused"]),
            "dropped": int(row["dropped"]),
            "live (client upper bound)": int(row["live_end"]),
        }
        for call in CALLS + ((tool_name,) if tool_name else ()):
            entry[f"{call} p50"] = _ms(_p50(steps, row["step"], "MCP", call))
        entry["errors"] = int(number(row["failures"]) or 0)
        rows.append(entry)
    return pd.DataFrame(rows)


def gateway_vs_direct(steps: pd.DataFrame) -> dict[str, Any] | None:
    """At 1 user: ``tools/call mark_fetch`` p50 through the gateway minus the direct ``FETCH`` p50."""
    one = steps[pd.to_numeric(steps["users"], errors="coerce") == 1]
    one = one[one["target_rate"].isna() | (one["target_rate"].astype(str) == "")] if "target_rate" in one else one
    gateway = one[(one["request_type"] == "MCP") & (one["name"] == "tools/call mark_fetch")]
    direct = one[one["request_type"] == "FETCH"]
    if gateway.empty or direct.empty:
        return None
    gateway_row = gateway.sort_values("requests").iloc[-1]
    direct_row = direct.sort_values("requests").iloc[-1]
    g50, d50 = number(gateway_row["p50_ms"]), number(direct_row["p50_ms"])
    if g50 is None or d50 is None:
        return None
    return {
        "gateway_p50_ms": g50,
        "direct_p50_ms": d50,
        "difference_ms": g50 - d50,
        "gateway_requests": int(gateway_row["requests"]),
        "direct_requests": int(direct_row["requests"]),
        "gateway_step": str(gateway_row["label"]),
        "direct_step": str(direct_row["label"]),
    }


def _tool_name(steps: pd.DataFrame) -> str | None:
    names = sorted(
        n for n in steps.loc[steps["request_type"] == "MCP", "name"].astype(str).unique() if n.startswith("tools/call ")
    )
    return names[0] if len(names) == 1 else None


def section(run_dir: Path) -> Section | None:
    run_dir = Path(run_dir)
    steps_path = run_dir / "steps.csv"
    if not steps_path.is_file():
        return None
    steps = pd.read_csv(steps_path)
    if steps.empty or not (steps["request_type"] == "MCP").any():
        return None
    churn = churn_steps(steps)
    blocks: list[str | pd.DataFrame] = []
    summary: dict[str, Any] = {}
    if not churn.empty:
        blocks += [
            "Session churn per step (the client's upper bound on live sessions is sessions started minus "
            "those it saw expired or refused, cumulative; a gateway that reaps idle sessions the client never "
            "comes back to is not seen here, so its own gauge below is the live count):",
            churn_table(steps, churn, _tool_name(steps)),
        ]
        summary["sessions"] = {c: int(churn[c].sum()) for c in COUNTERS}
        summary["live_estimate_end"] = int(churn["live_end"].iloc[-1])
    resources_path = run_dir / "resources.csv"
    found = samples(pd.read_csv(resources_path), churn) if resources_path.is_file() and not churn.empty else None
    if found is not None:
        table, metric, source, live_source = found
        fit = fit_memory(table, metric, source, live_source)
        if fit is not None:
            blocks.append(
                f"Memory per live session on the gateway: **{fit.bytes_per_session / 1024:.1f} KiB** "
                f"({metric} of `{source}` against live sessions from the {live_source}, least squares over "
                f"{fit.samples} samples after warm-up while sessions grew)."
            )
            summary["memory_per_session"] = {
                "bytes": round(fit.bytes_per_session),
                "metric": metric,
                "source": source,
                "live_source": live_source,
                "samples": fit.samples,
            }
        drop = ttl_drop(table)
        if drop is not None:
            held = (
                f"held at about {drop['plateau_live']:.0f} from {drop['peak_at_s']:.0f} s to "
                f"{drop['held_until_s']:.0f} s, then "
                if drop["held_until_s"] > drop["peak_at_s"]
                else ""
            )
            blocks.append(
                f"Idle TTL: live sessions reached {drop['peak_live']:.0f} (at {drop['peak_at_s']:.0f} s), "
                f"{held}fell to {drop['low_live']:.0f} (at {drop['low_at_s']:.0f} s) as the gateway "
                "reaped idle "
                f"sessions; {metric} went from {drop['peak_memory'] / MIB:.1f} MiB to "
                f"{drop['low_memory'] / MIB:.1f} MiB (an allocator may keep freed memory for reuse, so the "
                "bound shows as memory that stops growing)."
            )
            summary["ttl_drop"] = drop
        blocks += ["Live sessions and gateway memory over time:", over_time(table)]
    compared = gateway_vs_direct(steps)
    if compared is not None:
        blocks.append(
            f"Gateway vs direct at 1 user: `tools/call mark_fetch` p50 {compared['gateway_p50_ms']:.2f} ms "
            f"minus direct `FETCH` p50 {compared['direct_p50_ms']:.2f} ms = "
            f"**{compared['difference_ms']:+.2f} ms** ({compared['gateway_requests']} and "
            f"{compared['direct_requests']} requests)."
        )
        summary["gateway_vs_direct"] = compared
    if not blocks:
        return None
    markdown = "\n\n".join(b.to_markdown(index=False) if isinstance(b, pd.DataFrame) else b for b in blocks) + "\n"
    return Section(title="MCP sessions", markdown=markdown, html=_html(blocks), summary=summary)


def _html(blocks: list[str | pd.DataFrame]) -> str:
    """The same content as the Markdown: tables as HTML tables, sentences as paragraphs."""
    parts = []
    for block in blocks:
        if isinstance(block, pd.DataFrame):
            parts.append(block.to_html(index=False, escape=True, border=0))
        else:
            parts.append(f"<p>{html.escape(block.replace('**', '').replace('`', ''))}</p>")
    return "\n".join(parts)
