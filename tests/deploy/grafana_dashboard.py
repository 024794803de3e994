"""Reading ``deploy/grafana/swarmgauge.json``: its PromQL expressions and the metric names they use."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "swarmgauge.json"
METRIC_NAME = re.compile(r"\bswarmgauge_[a-z0-9_]+\b")


def load() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


def expressions(dashboard: dict[str, Any]) -> Iterator[str]:
    """Every panel target's ``expr`` and every query variable's query."""
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            yield target["expr"]
    for variable in dashboard["templating"]["list"]:
        query = variable.get("query")
        if isinstance(query, dict):
            yield query["query"]


def metric_names(dashboard: dict[str, Any]) -> set[str]:
    return {name for expr in expressions(dashboard) for name in METRIC_NAME.findall(expr)}


def runnable(expr: str, run: str) -> str:
    """``expr`` with Grafana's variables filled in, as Grafana would send it for one run."""
    return expr.replace("$__rate_interval", "1m").replace("$run", re.escape(run))
