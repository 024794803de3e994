"""Feeder rows: a CSV or JSON Lines file read once and checked, and a dealer that hands its rows out in order.

Pure (no Locust, no gevent), so the same code reads the file on a local run, a worker and the master; the Locust
wiring (options, the master's hand-out over messages, the end of a run) is ``listeners/feeder.py``.

Formats, by the file's suffix: ``.csv`` (the first line is the header, every row has as many fields as it) and
``.jsonl`` / ``.ndjson`` (one JSON object per line). Blank lines are skipped. Every refusal is a
:class:`UsageError` naming the file and the line, so a bad file stops the run before any load.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swarmgauge.errors import UsageError

CSV_SUFFIXES = (".csv",)
JSONL_SUFFIXES = (".jsonl", ".ndjson")
#: More rows than this is refused: the master holds them all in memory and the hand-out keeps per-row state.
MAX_ROWS = 5_000_000


@dataclass(frozen=True)
class FeederRows:
    """The rows of one file, each with the line it came from (so a later check can name it)."""

    path: str
    columns: tuple[str, ...]
    rows: tuple[dict[str, Any], ...]
    lines: tuple[int, ...]
    header_line: int = 0  # a CSV's header; 0 for JSON Lines

    def __len__(self) -> int:
        return len(self.rows)


def read_rows(path: str | Path) -> FeederRows:
    """Read and check ``path``; a missing file, an unknown suffix, a malformed row or no row is a UsageError."""
    file = Path(path)
    if not file.is_file():
        raise UsageError(f"feeder file {file}: no such file")
    suffix = file.suffix.lower()
    if suffix in CSV_SUFFIXES:
        found = _read_csv(file)
    elif suffix in JSONL_SUFFIXES:
        found = _read_jsonl(file)
    else:
        raise UsageError(f"feeder file {file}: unknown format {suffix or '(no suffix)'!r}; use .csv, .jsonl or .ndjson")
    if not found.rows:
        raise UsageError(f"feeder file {file}: no rows")
    return found


def _too_many(file: Path, line: int, count: int) -> None:
    if count >= MAX_ROWS:
        raise UsageError(f"{file}:{line}: more than {MAX_ROWS} rows")


def _read_csv(file: Path) -> FeederRows:
    rows: list[dict[str, Any]] = []
    lines: list[int] = []
    header: list[str] | None = None
    header_line = 0
    try:
        with open(file, newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle, strict=True)
            for fields in reader:
                line = reader.line_num
                if not fields:
                    continue
                if header is None:
                    header, header_line = _csv_header(file, line, fields), line
                    continue
                if len(fields) != len(header):
                    raise UsageError(f"{file}:{line}: {len(fields)} fields, the header has {len(header)}")
                _too_many(file, line, len(rows))
                rows.append(dict(zip(header, fields, strict=True)))
                lines.append(line)
    except csv.Error as exc:
        raise UsageError(f"{file}:{reader.line_num}: malformed CSV: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise UsageError(f"{file}: not UTF-8 text: {exc.reason}") from exc
    return FeederRows(str(file), tuple(header or ()), tuple(rows), tuple(lines), header_line)


def _csv_header(file: Path, line: int, fields: list[str]) -> list[str]:
    names = [name.strip() for name in fields]
    if any(not name for name in names):
        raise UsageError(f"{file}:{line}: the header has an empty column name")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise UsageError(f"{file}:{line}: the header repeats {', '.join(repeated)}")
    return names


def _read_jsonl(file: Path) -> FeederRows:
    rows: list[dict[str, Any]] = []
    lines: list[int] = []
    columns: dict[str, None] = {}
    try:
        with open(file, encoding="utf-8") as handle:
            for line, text in enumerate(handle, start=1):
                if not text.strip():
                    continue
                try:
                    value = json.loads(text)
                except json.JSONDecodeError as exc:
                    raise UsageError(f"{file}:{line}: not JSON: {exc.msg}") from exc
                if not isinstance(value, dict):
                    raise UsageError(f"{file}:{line}: not a JSON object ({type(value).__name__})")
                _too_many(file, line, len(rows))
                columns.update(dict.fromkeys(value))
                rows.append(value)
                lines.append(line)
    except UnicodeDecodeError as exc:
        raise UsageError(f"{file}: not UTF-8 text: {exc.reason}") from exc
    return FeederRows(str(file), tuple(columns), tuple(rows), tuple(lines))


def check_columns(feeder: FeederRows, needed: Iterable[str], who: str) -> None:
    """Every row has each ``needed`` column, else a UsageError naming the file, the line and ``who`` needs it.

    A CSV lacks a column in its header (line of the header); a JSON Lines file in its first row without the key.
    """
    for column in needed:
        for row, line in zip(feeder.rows, feeder.lines, strict=True):
            if column not in row:
                have = ", ".join(feeder.columns) or "none"
                where = feeder.header_line or line
                raise UsageError(f"{feeder.path}:{where}: no column {column!r}, which {who} takes (has: {have})")


def check_json_objects(feeder: FeederRows, columns: Iterable[str], who: str) -> None:
    """Each ``columns`` value is a JSON object, or text that parses to one (a CSV cell), else a UsageError."""
    for column in columns:
        for row, line in zip(feeder.rows, feeder.lines, strict=True):
            if column not in row:
                continue  # check_columns refuses a row without a column a User needs
            value = row[column]
            if isinstance(value, str):
                try:
                    value = json.loads(value)
                except json.JSONDecodeError as exc:
                    raise UsageError(f"{feeder.path}:{line}: column {column!r} is not JSON: {exc.msg}") from exc
            if not isinstance(value, dict):
                raise UsageError(f"{feeder.path}:{line}: column {column!r} is not a JSON object, which {who} takes")


class RowDealer:
    """Hands out row numbers ``0..count-1`` in order, in batches: every row once per pass.

    ``recycle=False``: one pass, then nothing more (:attr:`exhausted`). ``recycle=True``: a new pass starts where
    the last one ended, so rows are used again only after every row was used once more.
    """

    def __init__(self, count: int, recycle: bool) -> None:
        if count < 1:
            raise ValueError("a dealer needs at least one row")
        self.count = count
        self.recycle = recycle
        self.dealt = 0

    @property
    def exhausted(self) -> bool:
        return not self.recycle and self.dealt >= self.count

    @property
    def passes(self) -> int:
        """Passes begun so far (1 after the first row is dealt, 2 once the first row is dealt again)."""
        return -(-self.dealt // self.count)

    def deal(self, wanted: int) -> list[int]:
        """Up to ``wanted`` row numbers, the next in order; fewer (or none) once a single pass has run out."""
        if wanted < 1:
            return []
        take = wanted if self.recycle else min(wanted, self.count - self.dealt)
        numbers = [(self.dealt + i) % self.count for i in range(max(take, 0))]
        self.dealt += len(numbers)
        return numbers
