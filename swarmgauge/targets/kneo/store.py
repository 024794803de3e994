"""Reconciliation: count one test run's rows in kneo-serv's store and compare them with what Locust counted.

Every run carries ``metadata.swarmgauge_run = <tag>``; kneo-serv keeps it in the JSON text column ``runs.payload``
at ``metadata.caller_metadata``. The store is read with sqlite3 (a read-only connection to the service's file) or
psycopg (a DSN). :func:`reconcile` is pure: it turns a ledger (``RunLedger.drain()`` shape) and the rows into the
table the report shows, and counts mismatches. A store that cannot be read raises :class:`StoreUnavailable` with
the DSN's password redacted; the caller keeps every other result of the run.

A *stranded* run is one kneo-serv 1.2.0 saved as ``running`` and then never queued: ``POST /runs`` with
``async_mode`` saves the run, then enqueues it in a second store call, and a process killed between the two leaves a
row no worker will ever claim (no ``run_queue`` record, no deadline). The drain stops waiting for those, and the
reconciliation counts them on a line of their own: a crash-consistency gap of the target, not a counting error.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from swarmgauge.errors import SwarmgaugeError
from swarmgauge.targets.postgres import redact_dsn

TERMINAL = frozenset({"completed", "failed", "cancelled", "timed_out", "expired"})
QUEUE_FULL_TYPE = "queue_full"
# Error codes whose refused send still leaves a terminal row (kneo-serv 1.2.0 stores a sync run that failed to
# compile as failed{SpecCompilationError} and answers 400 spec_invalid without the run id).
ROW_KEEPING_CODES = ("spec_invalid",)

_SQLITE_QUERY = (
    "SELECT id, status, json_extract(payload, '$.error.type') FROM runs "
    "WHERE json_extract(payload, '$.metadata.caller_metadata.swarmgauge_run') = ?"
)
_POSTGRES_QUERY = (
    "SELECT id, status, payload::jsonb #>> '{error,type}' FROM runs "
    "WHERE payload::jsonb #>> '{metadata,caller_metadata,swarmgauge_run}' = %s"
)

_STRANDED_WHERE = "status IN ('running', 'queued') AND id NOT IN (SELECT run_id FROM run_queue)"
_SQLITE_STRANDED = (
    "SELECT id FROM runs WHERE json_extract(payload, '$.metadata.caller_metadata.swarmgauge_run') = ? "
    f"AND {_STRANDED_WHERE}"
)
_POSTGRES_STRANDED = (
    "SELECT id FROM runs WHERE payload::jsonb #>> '{metadata,caller_metadata,swarmgauge_run}' = %s "
    f"AND {_STRANDED_WHERE}"
)
STRANDED_SETTLE_SECONDS = 5.0

Row = tuple[str, str | None]  # (status, error type)


class Drained(NamedTuple):
    """What :func:`drain` found: the rows, whether nothing is left for the service to finish, the stranded ids."""

    rows: dict[str, Row]
    drained: bool
    stranded: frozenset[str]


class StoreUnavailable(SwarmgaugeError):
    """The store named by ``--kneo-store`` could not be read (bad DSN, missing file, no ``runs`` table)."""


def is_dsn(locator: str) -> bool:
    return locator.startswith(("postgresql://", "postgres://"))


def read_rows(locator: str, tag: str, *, connect_timeout: float = 5.0) -> dict[str, Row]:
    """Run id -> (status, error type) for every row tagged ``tag``."""
    found = query(locator, (_SQLITE_QUERY, _POSTGRES_QUERY), tag, connect_timeout)
    return {str(run_id): (status, error_type) for run_id, status, error_type in found}


def read_stranded(locator: str, tag: str, *, connect_timeout: float = 5.0) -> frozenset[str]:
    """Ids of the rows tagged ``tag`` that are ``running``/``queued`` with no ``run_queue`` record (not yet, or never)."""
    return frozenset(
        str(run_id) for (run_id,) in query(locator, (_SQLITE_STRANDED, _POSTGRES_STRANDED), tag, connect_timeout)
    )


def query(locator: str, queries: tuple[str, str], tag: str, timeout: float) -> list[tuple[Any, ...]]:
    if not locator:
        raise StoreUnavailable("no store given (--kneo-store DSN or SQLite path)")
    if is_dsn(locator):
        return _query_postgres(locator, queries[1], tag, timeout)
    return _query_sqlite(Path(locator), queries[0], tag, timeout)


def _query_sqlite(path: Path, query: str, tag: str, timeout: float) -> list[tuple[Any, ...]]:
    if not path.is_file():
        raise StoreUnavailable(f"SQLite store {path} does not exist")
    try:
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=timeout)
        try:
            return connection.execute(query, (tag,)).fetchall()
        finally:
            connection.close()
    except sqlite3.Error as exc:
        raise StoreUnavailable(f"SQLite store {path}: {exc}") from None


def _query_postgres(dsn: str, query: str, tag: str, timeout: float) -> list[tuple[Any, ...]]:
    try:
        import psycopg
    except ImportError as exc:
        raise StoreUnavailable(f"psycopg is not installed: {exc}") from None
    try:
        with psycopg.connect(dsn, connect_timeout=max(1, int(timeout))) as connection:
            return connection.execute(query, (tag,)).fetchall()
    except psycopg.Error as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StoreUnavailable(f"PostgreSQL store {redact_dsn(dsn)}: {redact_dsn(message)}") from None


def drain(
    locator: str,
    tag: str,
    *,
    timeout: float = 30.0,
    interval: float = 0.25,
    settle: float = STRANDED_SETTLE_SECONDS,
    sleep: Callable[[float], None] = time.sleep,
) -> Drained:
    """Read the rows until none is left that the service will still finish, or ``timeout`` passes.

    Call it once the load has stopped. A non-terminal row with no queue record for ``settle`` seconds in a row is
    stranded (nothing will ever claim it), so the drain does not wait the whole timeout for it.
    """
    deadline = time.monotonic() + max(0.0, timeout)
    stranded_since: dict[str, float] = {}
    for _ in range(100_000):
        rows = read_rows(locator, tag)
        open_ids = {run_id for run_id, (status, _) in rows.items() if status not in TERMINAL}
        now = time.monotonic()
        unqueued = read_stranded(locator, tag) & open_ids if open_ids else frozenset()
        stranded_since = {run_id: stranded_since.get(run_id, now) for run_id in unqueued}
        settled = frozenset(run_id for run_id, since in stranded_since.items() if now - since >= settle)
        if open_ids <= settled:
            return Drained(rows, True, settled)
        if now >= deadline:
            return Drained(rows, False, settled)
        sleep(interval)
    return Drained(read_rows(locator, tag), False, frozenset())


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
        self.checks.append(
            {
                "check": check,
                "locust": locust,
                "store": store,
                "ok": (locust == store) if ok is None else ok,
                "note": note,
            }
        )

    def as_dict(self) -> dict[str, Any]:
        return {"tag": self.tag, "checks": self.checks, "store_statuses": self.statuses, "mismatches": self.mismatches}


def reconcile(
    tag: str,
    ledger: Mapping[str, Any],
    rows: Mapping[str, Row],
    drained: bool = True,
    stranded: frozenset[str] = frozenset(),
) -> Reconciliation:
    """Compare Locust's ledger with the store's rows for one tag, check by check.

    Accepted runs must all be present; a terminal status Locust saw must be the stored one; each ``queue_full``
    refusal must be a stored ``failed{queue_full}`` row; no other row may exist beyond the refusals that keep a
    row, except up to one per send that got no response; nothing may be left non-terminal after the drain but the
    ``stranded`` runs, and those must be sends Locust got no answer for (a run it was told was queued must finish).
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
    stored_queue_full = sum(
        1 for status, error_type in unclaimed.values() if status == "failed" and error_type == QUEUE_FULL_TYPE
    )
    result.add("queue_full refusals stored as failed{queue_full}", queue_full, stored_queue_full)
    kept = sum(int(refused.get(code, 0)) for code in ROW_KEEPING_CODES)
    others = len(unclaimed) - stored_queue_full
    result.add(
        "other rows: refused sends that keep one, none unsent",
        kept,
        others,
        ok=kept <= others <= kept + indeterminate,
        note=f"up to {indeterminate} more: sends without an answer" if indeterminate else "",
    )
    stranded_here = {run_id for run_id in stranded if run_id in rows and rows[run_id][0] not in TERMINAL}
    stranded_unanswered = {run_id for run_id in stranded_here if run_id not in accepted}
    result.add(
        "stranded by a crash: stored, never queued",
        indeterminate,
        len(stranded_here),
        ok=stranded_here == stranded_unanswered and len(stranded_here) <= indeterminate,
        note=(
            "kneo-serv saved these runs and died before queueing them: no worker will ever finish them"
            if stranded_here
            else ""
        ),
    )
    left = sum(1 for run_id, (status, _) in rows.items() if status not in TERMINAL and run_id not in stranded_here)
    result.add("runs left non-terminal after the drain", 0, left, ok=drained and left == 0)
    return result


def _same_status(seen: str, stored: str) -> bool:
    return seen == stored or (seen == "succeeded" and stored == "completed")


def table_lines(result: Reconciliation) -> list[str]:
    """The reconciliation as aligned text lines, for a headless run's output."""
    lines = [
        f"kneo reconciliation {result.tag}: "
        + ("matches" if not result.mismatches else f"{result.mismatches} mismatch(es)")
    ]
    for check in result.checks:
        note = f"  ({check['note']})" if check.get("note") else ""
        lines.append(
            f"  {'ok  ' if check['ok'] else 'FAIL'} {check['check']:<52} locust {check['locust']:>7}"
            f"  store {check['store']:>7}{note}"
        )
    return lines
