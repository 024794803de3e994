"""Reconciliation: count one test run's rows in kneo-serv's store and compare them with what Locust counted.

Every run carries ``metadata.swarmgauge_run = <tag>``; kneo-serv keeps it in the JSON text column ``runs.payload``
at ``metadata.caller_metadata``. The store is read with sqlite3 (a read-only connection to the service's file) or
psycopg (a DSN). :func:`reconcile` is pure: it turns a ledger (``RunLedger.drain()`` shape) and the rows into the
table the report shows, and counts mismatches. A store that cannot be read raises :class:`StoreUnavailable` with
the DSN's password redacted; the caller keeps every other result of the run.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from swarmgauge.errors import SwarmgaugeError
from targets.postgres import redact_dsn

TERMINAL = frozenset({"completed", "failed", "cancelled", "timed_out", "expired"})
QUEUE_FULL_TYPE = "queue_full"
# Error codes whose refused send still leaves a terminal row (kneo-serv 1.2.0 stores a sync run that failed to
# compile as failed{SpecCompilationError} and answers 400 spec_invalid without the run id).
ROW_KEEPING_CODES = ("spec_invalid",)

_SQLITE_QUERY = (
    "SELECT id, status, json_extract(payload, '$.error.type') FROM runs "
    "WHERE json_extract(payload, '$.metadata.caller_metadata.swarmgauge_run') = ?")
_POSTGRES_QUERY = (
    "SELECT id, status, payload::jsonb #>> '{error,type}' FROM runs "
    "WHERE payload::jsonb #>> '{metadata,caller_metadata,swarmgauge_run}' = %s")

Row = tuple[str, str | None]  # (status, error type)


class StoreUnavailable(SwarmgaugeError):
    """The store named by ``--kneo-store`` could not be read (bad DSN, missing file, no ``runs`` table)."""


def is_dsn(locator: str) -> bool:
    return locator.startswith(("postgresql://", "postgres://"))


def read_rows(locator: str, tag: str, *, connect_timeout: float = 5.0) -> dict[str, Row]:
    """Run id -> (status, error type) for every row tagged ``tag``."""
    if not locator:
        raise StoreUnavailable("no store given (--kneo-store DSN or SQLite path)")
    if is_dsn(locator):
        return _read_postgres(locator, tag, connect_timeout)
    return _read_sqlite(Path(locator), tag, connect_timeout)


def _read_sqlite(path: Path, tag: str, timeout: float) -> dict[str, Row]:
    if not path.is_file():
        raise StoreUnavailable(f"SQLite store {path} does not exist")
    try:
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=timeout)
        try:
            rows = connection.execute(_SQLITE_QUERY, (tag,)).fetchall()
        finally:
            connection.close()
    except sqlite3.Error as exc:
        raise StoreUnavailable(f"SQLite store {path}: {exc}") from None
    return {str(run_id): (status, error_type) for run_id, status, error_type in rows}


def _read_postgres(dsn: str, tag: str, timeout: float) -> dict[str, Row]:
    try:
        import psycopg
    except ImportError as exc:
        raise StoreUnavailable(f"psycopg is not installed: {exc}") from None
    try:
        with psycopg.connect(dsn, connect_timeout=max(1, int(timeout))) as connection:
            rows = connection.execute(_POSTGRES_QUERY, (tag,)).fetchall()
    except psycopg.Error as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StoreUnavailable(f"PostgreSQL store {redact_dsn(dsn)}: {redact_dsn(message)}") from None
    return {str(run_id): (status, error_type) for run_id, status, error_type in rows}


def drain(locator: str, tag: str, *, timeout: float = 30.0, interval: float = 0.25,
          sleep: Callable[[float], None] = time.sleep) -> tuple[dict[str, Row], bool]:
    """Read the rows until none is left non-terminal or ``timeout`` passes; returns (rows, drained)."""
    deadline = time.monotonic() + max(0.0, timeout)
    for _ in range(100_000):
        rows = read_rows(locator, tag)
        if all(status in TERMINAL for status, _ in rows.values()):
            return rows, True
        if time.monotonic() >= deadline:
            return rows, False
        sleep(interval)
    return read_rows(locator, tag), False


@dataclass
class Reconciliation:
    """The comparison's table (one dict per check) and the number of mismatching checks."""

    tag: str
    checks: list[dict[str, Any]] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)

    @property
    def mismatches(self) -> int:
        return sum(1 for check in self.checks if not check["ok"])

    def add(self, check: str, locust: int, store: int, ok: bool | None = None, note: str = "") -> None:
        self.checks.append({"check": check, "locust": locust, "store": store,
                            "ok": (locust == store) if ok is None else ok, "note": note})

    def as_dict(self) -> dict[str, Any]:
        return {"tag": self.tag, "checks": self.checks, "store_statuses": self.statuses,
                "mismatches": self.mismatches}


def reconcile(tag: str, ledger: Mapping[str, Any], rows: Mapping[str, Row], drained: bool = True) -> Reconciliation:
    """Compare Locust's ledger with the store's rows for one tag, check by check.

    Accepted runs must all be present; a terminal status Locust saw must be the stored one; each ``queue_full``
    refusal must be a stored ``failed{queue_full}`` row; no other row may exist beyond the refusals that keep a
    row, except up to one per send that got no response; nothing may be left non-terminal after the drain.
    """
    accepted: Mapping[str, str | None] = ledger.get("accepted") or {}
    refused: Mapping[str, int] = ledger.get("refused") or {}
    queue_full = int(ledger.get("rejected_queue_full") or 0)
    indeterminate = int(ledger.get("indeterminate") or 0)
    result = Reconciliation(tag)
    for status, _ in rows.values():
        result.statuses[status] = result.statuses.get(status, 0) + 1
    present = [run_id for run_id in accepted if run_id in rows]
    result.add("accepted runs present", len(accepted), len(present))
    observed = {run_id: status for run_id, status in accepted.items() if status is not None and run_id in rows}
    agreeing = sum(1 for run_id, status in observed.items() if _same_status(status, rows[run_id][0]))
    result.add("terminal status as Locust saw it", len(observed), agreeing)
    unclaimed = {run_id: row for run_id, row in rows.items() if run_id not in accepted}
    stored_queue_full = sum(1 for status, error_type in unclaimed.values()
                            if status == "failed" and error_type == QUEUE_FULL_TYPE)
    result.add("queue_full refusals stored as failed{queue_full}", queue_full, stored_queue_full)
    kept = sum(int(refused.get(code, 0)) for code in ROW_KEEPING_CODES)
    others = len(unclaimed) - stored_queue_full
    result.add("other rows: refused sends that keep one, none unsent", kept, others,
               ok=kept <= others <= kept + indeterminate,
               note=f"up to {indeterminate} more: sends without an answer" if indeterminate else "")
    left = sum(1 for status, _ in rows.values() if status not in TERMINAL)
    result.add("runs left non-terminal after the drain", 0, left, ok=drained and left == 0)
    return result


def _same_status(seen: str, stored: str) -> bool:
    return seen == stored or (seen == "succeeded" and stored == "completed")


def table_lines(result: Reconciliation) -> list[str]:
    """The reconciliation as aligned text lines, for a headless run's output."""
    lines = [f"kneo reconciliation {result.tag}: "
             + ("matches" if not result.mismatches else f"{result.mismatches} mismatch(es)")]
    for check in result.checks:
        note = f"  ({check['note']})" if check.get("note") else ""
        lines.append(f"  {'ok  ' if check['ok'] else 'FAIL'} {check['check']:<52} locust {check['locust']:>7}"
                     f"  store {check['store']:>7}{note}")
    return lines
