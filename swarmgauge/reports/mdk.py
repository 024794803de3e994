"""Report section for MDK Gateway runs: the benchmark page's pass/fail table, action acceptance and rejections with
the Kernel's own counts beside Locust's, and the "Failure drills" table.

Inputs in the run directory: ``mdk.json`` (written by ``listeners/mdk_results.py``: headroom per Worker, CPU per
component, Locust's errors, the stand-in's command counters), ``mdk_drills.json`` (``targets.mdk.drills``),
``steps.csv`` (per-step HDR percentiles) and ``slo.json`` (the RSS slope). Colours follow the MDK page: headroom
green < 0.7, amber < 1.0, red otherwise; action p99 <= 2,000 ms; busiest process <= 80 % of a core; rejected +
timed out 0, amber under 1 %; RSS slope <= 18,000 MiB/h, and a red slope is amber when the soak was under 24 h.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd

from swarmgauge.reports.sections import Section

RESULT_NAME = "mdk.json"
DRILLS_NAME = "mdk_drills.json"
ORDER = {"green": 0, "amber": 1, "red": 2, "unknown": 1}
RSS_LIMIT_MIB_H = 18000.0
SOAK_FOR_LEAK_CLAIM_S = 24 * 3600.0
_REJECTED = re.compile(r"^Rejected\((ERR_[A-Z0-9_]+)\)$")


def headroom_colour(value: float | None) -> str:
    if value is None:
        return "unknown"
    return "green" if value < 0.7 else "amber" if value < 1.0 else "red"


def rejected_colour(ratio: float | None) -> str:
    if ratio is None:
        return "unknown"
    return "green" if ratio == 0 else "amber" if ratio < 0.01 else "red"


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _slo_observed(run_dir: Path, prefix: str) -> float | None:
    doc = _read_json(run_dir / "slo.json") or {}
    for verdict in doc.get("verdicts", []):
        if str(verdict.get("expr", "")).startswith(prefix) and verdict.get("observed") is not None:
            return float(verdict["observed"])
    return None


def _action_rows(run_dir: Path) -> pd.DataFrame:
    path = run_dir / "steps.csv"
    if not path.is_file():
        return pd.DataFrame()
    frame = pd.read_csv(path)
    return frame[(frame["request_type"] == "MDK") & (frame["name"] == "action")]


def _run_seconds(run_dir: Path) -> float | None:
    run = _read_json(run_dir / "run.json") or {}
    start, end = run.get("started_at"), run.get("ended_at")
    return float(end) - float(start) if isinstance(start, (int, float)) and isinstance(end, (int, float)) else None


def verdict_table(run_dir: Path, doc: dict[str, Any]) -> pd.DataFrame:
    """One row per MDK threshold, as the page's table; the overall verdict is the worst row."""
    rows = []
    headroom = (doc.get("headroom") or {}).get("value")
    rows.append(
        (
            "Telemetry freshness (headroom)",
            "" if headroom is None else f"{headroom:.3f}",
            "< 0.7",
            "0.7 to < 1.0",
            ">= 1.0",
            headroom_colour(headroom),
        )
    )
    actions = _action_rows(run_dir)
    p99 = _slo_observed(run_dir, "MDK:action:p99")
    if p99 is None and not actions.empty:
        p99 = float(actions["p99_ms"].max())
    rows.append(
        (
            "Action submit p99",
            "" if p99 is None else f"{p99:.0f} ms",
            "<= 2000 ms",
            "-",
            "> 2000 ms",
            "unknown" if p99 is None else "green" if p99 <= 2000 else "red",
        )
    )
    cpu = doc.get("cpu_percent") or {}
    busiest = max(cpu.items(), key=lambda kv: kv[1]) if cpu else None
    rows.append(
        (
            "Steady CPU, busiest process",
            "" if busiest is None else f"{busiest[1]:.0f} % ({busiest[0]})",
            "<= 80 %",
            "-",
            "> 80 %",
            "unknown" if busiest is None else "green" if busiest[1] <= 80 else "red",
        )
    )
    ratio = doc.get("rejected_ratio")
    rows.append(
        (
            "Rejected + timed out",
            "" if ratio is None else f"{ratio * 100:.2f} %",
            "0",
            "< 1 %",
            ">= 1 %",
            rejected_colour(ratio),
        )
    )
    slope = _slo_observed(run_dir, "rss_slope")
    slope_mib = None if slope is None else slope / 2**20
    colour = "unknown" if slope_mib is None else "green" if slope_mib <= RSS_LIMIT_MIB_H else "red"
    soak = _run_seconds(run_dir)
    if colour == "red" and (soak is None or soak < SOAK_FOR_LEAK_CLAIM_S):
        colour = "amber"
    rows.append(
        (
            "RSS slope (max across processes)",
            "" if slope_mib is None else f"{slope_mib:,.0f} MiB/h",
            f"<= {RSS_LIMIT_MIB_H:,.0f} MiB/h",
            "red demoted under a 24 h soak",
            "> limit (24 h soak)",
            colour,
        )
    )
    return pd.DataFrame(rows, columns=["criterion", "observed", "green", "amber", "red", "verdict"])


def actions_table(doc: dict[str, Any], actions: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Locust's count of each outcome beside the Kernel's, and each open-model step's acceptance percentiles."""
    errors = doc.get("errors") or {}
    rejected = {m.group(1): n for e, n in errors.items() if (m := _REJECTED.match(e))}
    kernel = doc.get("kernel") or {}
    queued_kernel = (kernel.get("commands") or {}).get("QUEUED")
    counted = doc.get("actions") or {}
    rows = [("QUEUED (accepted)", counted.get("queued"), queued_kernel)]
    for code in sorted(set(rejected) | set(kernel.get("rejected") or {})):
        rows.append((f"Rejected({code})", rejected.get(code, 0), (kernel.get("rejected") or {}).get(code)))
    table = pd.DataFrame(rows, columns=["outcome", "Locust", "Kernel"])
    table["match"] = [
        "yes" if k is not None and int(locust or 0) == int(k) else ("-" if k is None else "NO")
        for locust, k in zip(table["Locust"], table["Kernel"])
    ]
    table["Kernel"] = ["-" if k is None else int(k) for k in table["Kernel"]]
    bursts = actions[actions["target_rate"].notna()] if "target_rate" in actions else actions.iloc[0:0]
    acceptance = [
        {
            "step": str(r["label"]),
            "rate": float(r["target_rate"]),
            "submits": int(r["requests"]),
            "failures": int(r["failures"]),
            "p50_ms": float(r["p50_ms"]),
            "p99_ms": float(r["p99_ms"]),
        }
        for _, r in bursts.iterrows()
        if int(r["requests"])
    ]
    return table, {
        "submitted": counted.get("submitted"),
        "queued": counted.get("queued"),
        "kernel_queued": queued_kernel,
        "rejected": rejected,
        "acceptance": acceptance,
    }


def request_counts(doc: dict[str, Any]) -> dict[str, Any] | None:
    """The requests the run sent the Gateway beside the Gateway's own count (its ``/metrics`` reads, the sampler's,
    left out): ``counted`` by the run, ``before_the_run`` (the discovery's summaries) and ``drill_probes`` (a
    drill's own reads), in no figure of the run, ``gateway`` (None for a Gateway without the count) and whether
    they ``match``; None for a run from before ``mdk.json`` held them."""
    requests = doc.get("requests")
    if not isinstance(requests, dict):
        return None
    own = ((doc.get("kernel") or {}).get("gateway")) or {}
    gateway = int(own["requests"]) - int(own.get("metrics_requests") or 0) if "requests" in own else None
    sent = sum(int(requests.get(key) or 0) for key in ("counted", "before_the_run", "drill_probes"))
    return {**requests, "gateway": gateway, "match": None if gateway is None else gateway == sent}


def request_text(counts: dict[str, Any]) -> str:
    before = int(counts.get("before_the_run") or 0)
    text = f"Requests to the Gateway: {int(counts.get('counted') or 0):,} counted by the run"
    summaries = "fleet summary" if before == 1 else "fleet summaries"
    text += f", {before:,} {summaries} of the discovery before it (in no figure of the run)" if before else ""
    probes = int(counts.get("drill_probes") or 0)
    text += f", {probes:,} reads the drill timed itself (in no figure of the run)" if probes else ""
    if counts["gateway"] is None:
        return text + "; the Gateway gives no count of its own."
    said = "the same" if counts["match"] else "NOT the same"
    return text + f"; the Gateway's own count, its /metrics reads left out: {counts['gateway']:,} ({said})."


def _seconds(value: Any) -> str:
    return "-" if value is None else f"{float(value):.2f} s"


def drills_table(drills: list[dict[str, Any]]) -> pd.DataFrame:
    rows = []
    for d in drills:
        rows.append(
            {
                "drill": d.get("drill"),
                "killed": d.get("component"),
                "READY": _seconds(d.get("ready_s")),
                "first successful read": _seconds(d.get("first_read_s")),
                "read after READY": _seconds(d.get("read_after_ready_s")),
                "snap failed": _seconds(d.get("snap_failed_s")),
                "cached channels failed": _seconds(d.get("cached_failed_s")),
                "devices back": _seconds(d.get("restored_s")),
                "reads again": _seconds(d.get("restored_read_s")),
                "recovered": "yes" if d.get("recovered") else f"NO {d.get('note', '')}".strip(),
            }
        )
    return pd.DataFrame(rows)


def section(run_dir: Path) -> Section | None:
    run_dir = Path(run_dir)
    doc = _read_json(run_dir / RESULT_NAME)
    drills = (_read_json(run_dir / DRILLS_NAME) or {}).get("drills") or []
    if not isinstance(doc, dict) and not drills:
        return None
    doc = doc if isinstance(doc, dict) else {}
    md: list[str] = []
    body: list[str] = []
    summary: dict[str, Any] = {}

    def add(text: str, frame: pd.DataFrame | None = None, heading: str | None = None) -> None:
        if heading:
            md.extend([f"### {heading}", ""])
            body.append(f"<h3>{html.escape(heading)}</h3>")
        md.extend([text, ""])
        body.append(f"<p>{html.escape(text)}</p>")
        if frame is not None and not frame.empty:
            md.extend([frame.to_markdown(index=False), ""])
            body.append(frame.to_html(index=False, escape=True))

    if doc:
        verdicts = verdict_table(run_dir, doc)
        overall = max(verdicts["verdict"], key=lambda c: ORDER.get(c, 1))
        headroom = doc.get("headroom") or {}
        by_worker = ", ".join(f"{w} {v:.3f}" for w, v in sorted((headroom.get("by_worker") or {}).items()))
        value = headroom.get("value")
        shown = "not measured" if value is None else f"{value:.3f}"
        add(
            f"Overall verdict: {overall} (the worst row). Headroom {shown} ({headroom_colour(value)})"
            f"{': ' + by_worker if by_worker else ''} - cycle time of one full read sweep over the collection "
            "interval, worst Worker.",
            verdicts,
        )
        summary["verdicts"] = dict(zip(verdicts["criterion"], verdicts["verdict"]))
        summary["overall"] = overall
        summary["headroom"] = {
            "value": headroom.get("value"),
            "colour": headroom_colour(headroom.get("value")),
            "by_worker": headroom.get("by_worker") or {},
        }
        requests = request_counts(doc)
        if requests is not None:
            add(request_text(requests))
            summary["requests"] = requests
        table, counts = actions_table(doc, _action_rows(run_dir))
        summary["actions"] = counts
        if counts.get("submitted"):
            accept = "; ".join(
                f"{a['step']}: {a['submits']} submits at {a['rate']:g}/s, acceptance p50 "
                f"{a['p50_ms']:.0f} ms, p99 {a['p99_ms']:.0f} ms"
                for a in counts["acceptance"]
            )
            add(
                f"{counts['submitted']} action submits; success only when the Kernel answered QUEUED, a REJECTED "
                f"answer (HTTP 200) is Rejected(code). {accept + '.' if accept else ''}",
                table,
                "Action submits",
            )
    if drills:
        table = drills_table(drills)
        add(
            "Every time counts from the kill. READY and the first successful device read are separate events: "
            "wait for a read, not READY.",
            table,
            "Failure drills",
        )
        summary["drills"] = drills
    return Section(title="MDK fleet", markdown="\n".join(md).rstrip() + "\n", html="\n".join(body), summary=summary)
