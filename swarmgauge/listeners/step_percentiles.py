"""``percentiles.csv``: each step's HDR histogram read at a fixed ladder of percentiles, so the report can draw the
latency distribution per step without the histograms themselves (which live only in the master's memory).

No Locust here: rows from a :class:`StepMerge`, written by ``listeners/steps.py`` beside ``steps.csv``.
"""

from __future__ import annotations

from typing import Any

from swarmgauge.core.run_files import PERCENTILES, names
from swarmgauge.listeners.step_stats import StepMerge

#: 0 to 99.999: the body of the distribution, then the tail in the nines an HDR plot shows (100 is the max)
LADDER = (0.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99, 99.999, 100.0)
COLUMNS = names(PERCENTILES)


def percentile_rows(merge: StepMerge) -> list[dict[str, Any]]:
    """One row per step, request type, name and percentile of :data:`LADDER`; names without a response time skipped."""
    rows = []
    for (step, rtype, name), stats in sorted(merge.entries.items()):
        if stats.histogram.get_total_count() == 0:
            continue
        for percentile, ms in stats.percentiles_ms(LADDER).items():
            rows.append({"step": step, "request_type": rtype, "name": name, "percentile": percentile, "ms": ms})
    return rows
