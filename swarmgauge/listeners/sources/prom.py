"""``prom:URL#metric,metric`` source: named metrics from a Prometheus text endpoint, parsed by prometheus-client.

A metric is matched by its sample name or its family name (so ``kneo_runs`` and ``kneo_runs_total`` both find a
counter). A metric with one series is reported under its name; with labels, each series is reported as
``name{label="value",...}`` so nothing is summed behind the user's back. Without ``#...`` every gauge and counter
sample is reported (capped at ``MAX_SERIES``).
"""

from __future__ import annotations

import math

from prometheus_client.parser import text_string_to_metric_families

from . import Reading, SourceError
from .goheap import check_url, http_get

MAX_SERIES = 200


def _series_name(name: str, labels: dict[str, str]) -> str:
    if not labels:
        return name
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def parse_prometheus_text(text: str, wanted: tuple[str, ...]) -> list[Reading]:
    """Readings for the ``wanted`` metrics (all gauges and counters when empty) in exposition ``text``."""
    readings = []
    try:
        for family in text_string_to_metric_families(text):
            if wanted and family.name not in wanted and not any(s.name in wanted for s in family.samples):
                continue
            if not wanted and family.type not in ("gauge", "counter"):
                continue
            for sample in family.samples:
                if wanted and sample.name not in wanted and family.name not in wanted:
                    continue
                if sample.name.endswith("_created") or math.isnan(sample.value):
                    continue
                readings.append(Reading(_series_name(sample.name, sample.labels), float(sample.value)))
                if len(readings) >= MAX_SERIES:
                    return readings
    except (ValueError, TypeError, IndexError) as exc:
        raise SourceError(f"malformed Prometheus text: {exc}") from None
    return readings


class PromSource:
    """Polls one Prometheus endpoint for the named metrics."""

    label = "prom"

    def __init__(self, url: str, metrics: tuple[str, ...]) -> None:
        self.url, self.metrics = url, metrics

    @classmethod
    def from_spec(cls, argument: str) -> PromSource:
        url, _, names = argument.partition("#")
        metrics = tuple(n.strip() for n in names.split(",") if n.strip())
        return cls(check_url("prom", url), metrics)

    def sample(self) -> list[Reading]:
        readings = parse_prometheus_text(http_get(self.url).text, self.metrics)
        if self.metrics and not readings:
            raise SourceError(f"{self.url}: none of {', '.join(self.metrics)} in the exposition")
        return readings
