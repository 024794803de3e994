"""The kneo run ledger across processes and the end-of-run reconciliation, for ``users/kneo_user.py``.

Each process's users record what they sent in a ``RunLedger`` (one per Environment and run); workers drain theirs
into ``report_to_master`` and the master merges. A web UI's every START is a run of its own: its own tag and an empty
ledger (:func:`next_run`), reconciled at its STOP into its own run folder. At a run's end the master (or a local run) waits for the store's runs
to finish, reads them (``--kneo-store`` or ``--kneo-store-file``), compares (``targets/kneo/store.py``), prints the
table, writes ``kneo.json`` and serves the SLO term ``kneo_mismatches``, gated ``==0`` when a store is given.
"""

from __future__ import annotations

import json
import logging
import uuid
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gevent
from locust import events
from locust.env import Environment
from locust.runners import MasterRunner, WorkerRunner

from swarmgauge.core import hooks
from swarmgauge.core.lifecycle import at_end
from swarmgauge.core.locust_compat import has_message_handler
from swarmgauge.core.run_context import PerEnvironment
from swarmgauge.errors import UsageError
from swarmgauge.files import write_atomic
from swarmgauge.protocols.kneo import RunLedger
from swarmgauge.targets.kneo.store import StoreUnavailable, drain, reconcile, table_lines
from swarmgauge.targets.postgres import redact_dsn

log = logging.getLogger(__name__)
REPORT_KEY = "swarmgauge_kneo"
RESULT_NAME = "kneo.json"
FINAL_MESSAGE = "swarmgauge_kneo_ledger"
MISMATCH_TERM = "kneo_mismatches"
_ENVS: weakref.WeakSet[Any] = weakref.WeakSet()


@dataclass
class _KneoRun(PerEnvironment):
    """Owned by ``users/kneo_ledger.py``: the run's tag, its ledger of runs sent, and its reconciliation once done."""

    tag: str = ""
    ledger: RunLedger | None = None
    reconciliation: dict[str, Any] | None = None
    #: runs started in this process (a web UI's STARTs); the ``--kneo-run-tag`` given at start-up ("" when none)
    runs: int = 0
    given_tag: str | None = None


def next_run(environment: Environment) -> None:
    """At each START on the master or a local run: the first run keeps the tag made at init; a later one (the web
    UI's next START) gets a tag of its own (``<given>-<n>`` when ``--kneo-run-tag`` was given) and an empty ledger,
    so it reconciles only the runs it sent. Workers receive the new tag with the spawn message's options."""
    record = _KneoRun.of(environment)
    options = environment.parsed_options
    if record.given_tag is None:
        record.given_tag = "" if record.tag else str(getattr(options, "kneo_run_tag", "") or "")
    record.runs += 1
    if record.runs == 1:
        return
    record.tag = f"{record.given_tag}-{record.runs}" if record.given_tag else f"sg-{uuid.uuid4().hex[:16]}"
    if options is not None:
        options.kneo_run_tag = record.tag
    record.ledger, record.reconciliation = RunLedger(), None


def run_tag(environment: Environment) -> str:
    """This test run's tag; the master (or local runner) makes one, workers receive it with the options."""
    options = getattr(environment, "parsed_options", None)
    tag = getattr(options, "kneo_run_tag", "") if options is not None else ""
    if not tag:
        record = _KneoRun.of(environment)
        if not record.tag:
            record.tag = f"sg-{uuid.uuid4().hex[:16]}"
        tag = record.tag
        if options is not None:
            options.kneo_run_tag = tag
    return tag


def ledger_for(environment: Environment) -> RunLedger:
    """The process's ledger of runs sent (one per Environment)."""
    record = _KneoRun.of(environment)
    if record.ledger is None:
        record.ledger = RunLedger()
        _ENVS.add(environment)
    return record.ledger


def store_locator(options: Any) -> str:
    """``--kneo-store``, or the first line of ``--kneo-store-file``; a missing file is a UsageError."""
    locator = str(getattr(options, "kneo_store", "") or "")
    path = str(getattr(options, "kneo_store_file", "") or "")
    if not locator and path:
        try:
            locator = Path(path).read_text().strip().splitlines()[0].strip()
        except (OSError, IndexError):
            raise UsageError(f"--kneo-store-file {path}: cannot read a store from it") from None
    return locator


def reconcile_run(environment: Environment) -> dict[str, Any] | None:
    """Once per run, on the master or a local run: drain, read the store, compare, write ``kneo.json``."""
    if isinstance(environment.runner, WorkerRunner):
        return None
    done = _KneoRun.of(environment).reconciliation
    if done is not None:
        return done
    options = environment.parsed_options
    ledger = ledger_for(environment).drain()
    observed: dict[str, int] = {}
    for status in ledger["accepted"].values():
        observed[status or "unobserved"] = observed.get(status or "unobserved", 0) + 1
    locator = store_locator(options)
    doc: dict[str, Any] = {
        "tag": run_tag(environment),
        "store": redact_dsn(locator) or None,
        "mismatches": None,
        "error": None,
        "ledger": {
            "accepted": len(ledger["accepted"]),
            "observed": observed,
            "queue_full": ledger["rejected_queue_full"],
            "refused": ledger["refused"],
            "indeterminate": ledger["indeterminate"],
        },
    }
    lines: list[str] = []
    if locator:
        try:
            found = drain(
                locator, doc["tag"], timeout=float(getattr(options, "kneo_drain_timeout", 30.0)), sleep=gevent.sleep
            )
            result = reconcile(doc["tag"], ledger, found.rows, found.drained, found.stranded)
            doc.update(result.as_dict())
            lines = table_lines(result)
            if getattr(options, "kneo_mode", "sync") == "batch":
                doc["queue_drain"] = {
                    **_queue_drain(locator, doc["tag"]),
                    "batch": int(getattr(options, "kneo_batch", 0)),
                    "dispatched": len(ledger["accepted"]),
                }
                lines.append(_drain_line(doc["queue_drain"]))
        except StoreUnavailable as exc:
            doc["error"] = f"StoreUnavailable: {exc}"
            lines = [f"kneo reconciliation {doc['tag']}: not done: {doc['error']}"]
    _KneoRun.of(environment).reconciliation = doc
    _write_result(environment, doc)
    for line in lines:
        print(line, flush=True)
        log.info(line)
    return doc


def _queue_drain(locator: str, tag: str) -> dict[str, Any]:
    from swarmgauge.targets.kneo.drain import drain_figures, read_times

    return drain_figures(read_times(locator, tag))


def _drain_line(figures: dict[str, Any]) -> str:
    if not figures.get("runs_per_s"):
        return f"kneo queue drain: {figures.get('runs', 0)} run(s) finished, no drain rate"
    return (
        f"kneo queue drain: {figures['runs']} runs in {figures['drain_s']:.1f} s = {figures['runs_per_s']:.1f} "
        f"runs/s; queue wait p50 {figures['wait_p50_ms']:.0f} ms, p95 {figures['wait_p95_ms']:.0f} ms, "
        f"p99 {figures['wait_p99_ms']:.0f} ms ({figures['unfinished']} unfinished; "
        f"{figures.get('dispatched')} of the batch of {figures.get('batch')} dispatched)"
    )


def _write_result(environment: Environment, doc: dict[str, Any]) -> None:
    hooks.add_run_info(environment, "kneo", {k: doc.get(k) for k in ("tag", "store", "mismatches", "error")})
    directory = hooks.run_dir(environment)
    if directory is not None:
        write_atomic(directory / RESULT_NAME, hooks.redact(json.dumps(doc, indent=2, default=str), environment))


def _mismatches(environment: Environment, step: int | None) -> float | None:
    """The run's mismatches once its end reconciled the ledger ("ledgers reconciled" comes before the verdicts);
    None while it runs: the web UI's live view asks every few seconds, and reconciling a run still sending would
    judge it on the runs sent so far, and keep that answer for its end."""
    if step is not None:
        return None
    doc = _KneoRun.of(environment).reconciliation
    value = doc.get("mismatches") if doc else None
    return None if value is None else float(value)


def _send_final_ledger(environment: Environment, **_: Any) -> None:
    """On a worker, just before its final per-step figures: the ledger goes first on the same socket, so the
    master has it by the time the shape sees every worker's final report (Locust's quit waits only 0.5 s)."""
    runner = environment.runner
    if isinstance(runner, WorkerRunner) and environment in _ENVS:
        runner.send_message(FINAL_MESSAGE, ledger_for(environment).drain())


def _on_final_ledger(environment: Environment, msg: Any, **_: Any) -> None:
    log.debug("final kneo ledger from %s: %d accepted", msg.node_id, len((msg.data or {}).get("accepted") or {}))
    if msg.data:
        ledger_for(environment).merge(msg.data)


hooks.register_metric(MISMATCH_TERM, _mismatches)
hooks.register_step_counter("queue_full")
hooks.before_flush.add_listener(_send_final_ledger)


@events.init.add_listener
def _on_init(environment: Environment, **_: Any) -> None:
    runner = environment.runner
    if isinstance(runner, MasterRunner) and not has_message_handler(runner, FINAL_MESSAGE):
        runner.register_message(FINAL_MESSAGE, _on_final_ledger)


@events.test_start.add_listener
def _on_test_start(environment: Environment, **_: Any) -> None:
    if isinstance(environment.runner, WorkerRunner) or environment.parsed_options is None or environment not in _ENVS:
        return
    next_run(environment)
    if store_locator(environment.parsed_options):
        hooks.add_slos(environment, [f"{MISMATCH_TERM}==0"])


@events.report_to_master.add_listener
def _on_report_to_master(client_id: str, data: dict, **_: Any) -> None:
    for environment in list(_ENVS):
        if isinstance(environment.runner, WorkerRunner) and environment.runner.client_id == client_id:
            data[REPORT_KEY] = ledger_for(environment).drain()


@events.worker_report.add_listener
def _on_worker_report(client_id: str, data: dict, **_: Any) -> None:
    packed = data.get(REPORT_KEY)
    if not packed:
        return
    for environment in list(_ENVS):
        if isinstance(environment.runner, MasterRunner):
            ledger_for(environment).merge(packed)


@at_end("ledgers reconciled")
def _on_quitting(environment: Environment) -> None:
    if environment in _ENVS:  # a run with kneo users (users/kneo_user.py starts the ledger at init)
        reconcile_run(environment)
