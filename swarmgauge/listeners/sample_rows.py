"""``SampleRows``: the resource sampler's rows kept as columns of machine numbers, read back as ``Row``.

The sampler keeps every row for the whole run (``resources.csv`` and the leak verdict need each one), a few rows
every interval. As ``Row`` objects that is ~260 bytes a row and the generator's memory grows with the run; as
columns it is ~50 bytes a row, and every value reads back exactly (floats as doubles, the step's None as -1).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator

from swarmgauge.core.verdict import Row

NO_STEP = -1


class SampleRows:
    """An append-only sequence of ``Row`` stored column-wise; (node, source, metric) triples are kept once."""

    def __init__(self, rows: Iterable[Row] = ()) -> None:
        self.times = array("d")
        self.elapsed = array("d")
        self.values = array("d")
        self.steps = array("q")
        self.rounds = array("q")
        self.series_ids = array("q")
        self.series: list[tuple[str, str, str]] = []
        self._series_index: dict[tuple[str, str, str], int] = {}
        self.extend(rows)

    def append(self, row: Row) -> None:
        if row.step is not None and row.step < 0:
            raise ValueError(f"a sample row's step is an index >= 0 or None, not {row.step}")
        key = (row.node, row.source, row.metric)
        series_id = self._series_index.get(key)
        if series_id is None:
            series_id = self._series_index[key] = len(self.series)
            self.series.append(key)
        self.times.append(row.time)
        self.elapsed.append(row.elapsed_s)
        self.values.append(row.value)
        self.steps.append(NO_STEP if row.step is None else row.step)
        self.rounds.append(row.round)
        self.series_ids.append(series_id)

    def extend(self, rows: Iterable[Row]) -> None:
        for row in rows:
            self.append(row)

    def __len__(self) -> int:
        return len(self.times)

    def __getitem__(self, index: int) -> Row:
        node, source, metric = self.series[self.series_ids[index]]
        step = self.steps[index]
        return Row(
            self.times[index],
            self.elapsed[index],
            None if step == NO_STEP else step,
            node,
            source,
            metric,
            self.values[index],
            self.rounds[index],
        )

    def __iter__(self) -> Iterator[Row]:
        for index in range(len(self.times)):
            yield self[index]
