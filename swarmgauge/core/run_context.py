"""What swarmgauge keeps per Locust ``Environment``: typed records, one per concern, each owned by one module.

Locust's ``Environment`` declares its attributes; ours live beside it, in records keyed weakly by the Environment
(:class:`PerEnvironment`). A record class is defined by the module that owns it and names that owner in its
docstring; only the owner writes its fields, other modules call the owner's functions. :class:`RunContext` holds
the few facts several modules read (the run's ``run.json`` facts, its SLO verdicts, its abort, its closed folder).
A second Environment in the same process (a test, a web-UI restart) gets records of its own, and a record goes with
its Environment.
"""

from __future__ import annotations

import argparse
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

_RECORDS: dict[int, tuple[Any, dict[type, Any]]] = {}


def _forget(key: int) -> None:
    _RECORDS.pop(key, None)


def _found(environment: Any) -> dict[type, Any] | None:
    entry = _RECORDS.get(id(environment))
    if entry is None:
        return None
    holder, records = entry
    target = holder() if isinstance(holder, weakref.ref) else holder
    return records if target is environment else None


def _records(environment: Any) -> dict[type, Any]:
    """The records of ``environment``, keyed by identity: weakly where the object allows it (a Locust Environment),
    strongly otherwise (a stand-in such as a ``SimpleNamespace`` in a test, which lives as long as the process)."""
    found = _found(environment)
    if found is not None:
        return found
    records: dict[type, Any] = {}
    try:
        holder: Any = weakref.ref(environment)
        weakref.finalize(environment, _forget, id(environment))
    except TypeError:
        holder = environment
    _RECORDS[id(environment)] = (holder, records)
    return records


def held_ids() -> set[int]:
    """The ids of the Environments that have records now (a test checks that a gone one leaves none behind)."""
    return set(_RECORDS)


def environments() -> list[Any]:
    """The Environments that have records and are still alive, in the order their first record was made."""
    alive = []
    for holder, _records in list(_RECORDS.values()):
        target = holder() if isinstance(holder, weakref.ref) else holder
        if target is not None:
            alive.append(target)
    return alive


class PerEnvironment:
    """Base of a per-Environment record: a dataclass whose fields all have defaults."""

    @classmethod
    def of(cls, environment: Any) -> Self:
        """The record of ``environment``, made the first time it is asked for (found: two lookups, one weakref)."""
        entry = _RECORDS.get(id(environment))
        if entry is not None:
            holder, found = entry
            if (holder() if type(holder) is weakref.ref else holder) is environment:
                known = found.get(cls)
                if known is not None:
                    return known
        records = _records(environment)
        record = records.get(cls)
        if record is None:
            record = records[cls] = cls()
        return record

    @classmethod
    def peek(cls, environment: Any) -> Self | None:
        """The record of ``environment`` if one was made, without making one."""
        records = _found(environment)
        return None if records is None else records.get(cls)

    @classmethod
    def renew(cls, environment: Any) -> Self:
        """A fresh record in place of the old one (a new run in the same process); returns it."""
        record = _records(environment)[cls] = cls()
        return record


@dataclass
class RunContext(PerEnvironment):
    """The facts of one run that several modules read; each field is written only by the module named beside it."""

    #: ``listeners/rundir.py``: what ``run.json`` holds so far (``hooks.add_run_info`` writes through it).
    run_info: dict[str, Any] = field(default_factory=dict)
    #: ``listeners/slo.py``: the SLO verdicts of the run once checked, None before (and after a web-UI START).
    slo_verdicts: list[Any] | None = None
    #: ``listeners/slo.py``: SLOs a locustfile added in code (``hooks.add_slos``), checked beside ``--slo``.
    default_slos: list[str] = field(default_factory=list)
    #: ``listeners/slo_abort.py``: why ``--abort-on`` stopped the run, None while it has not.
    aborted: dict[str, Any] | None = None
    #: ``listeners/webui.py``: the folder of the web UI's last closed run, None while a run is open.
    closed_run: Path | None = None


def weakly_held(environment: Any) -> Callable[[], Any]:
    """A call that gives ``environment`` back while it lives (None after), for a listener or record that must not
    keep it alive; a stand-in that cannot be weakly referenced is held strongly (it lives on anyway)."""
    try:
        return weakref.ref(environment)
    except TypeError:
        return lambda: environment


def listen(environment: Any, hook: Any, handler: Callable[..., object]) -> None:
    """Add ``handler(environment, **kwargs)`` to the event ``hook`` (one of ``environment.events``) for as long as
    ``environment`` lives: Locust's worker reports carry no Environment, and a listener holding it strongly would
    keep a finished one alive on a shared ``events``."""
    held = weakly_held(environment)

    def call(**kwargs: Any) -> None:
        target = held()
        if target is None:
            hook.remove_listener(call)
            return
        kwargs.pop("environment", None)  # events such as quitting name it too: it is ``target``
        handler(target, **kwargs)

    hook.add_listener(call)


def options(environment: Any) -> argparse.Namespace:
    """The parsed command line, or an empty one for an Environment made without it (a library user's own)."""
    parsed = getattr(environment, "parsed_options", None)
    return parsed if parsed is not None else argparse.Namespace()
