"""A plan's ``feeder:`` key: the test data a plan runs with, so a plan file carries its rows as it carries its stages.

::

    feeder: {file: rows.csv, mode: unique, exhausted: stop, batch: 50}

``file`` is read relative to the plan file's folder (a plan and its rows move together); ``mode``, ``exhausted`` and
``batch`` mean what ``--feeder-mode``, ``--feeder-exhausted`` and ``--feeder-batch`` mean and default as they do.
An option given for the run (command line, environment, config file) wins over the plan's value for that option
alone, and the run says so (:func:`merge_plan_feeder`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swarmgauge.core.feeder_settings import EXHAUSTED, MAX_BATCH, MODES
from swarmgauge.errors import UsageError

FEEDER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "file": {"type": "string", "minLength": 1, "description": "CSV or JSON Lines, relative to the plan file"},
        "mode": {"enum": list(MODES)},
        "exhausted": {"enum": list(EXHAUSTED)},
        "batch": {"type": "integer", "minimum": 1, "maximum": MAX_BATCH},
    },
    "required": ["file"],
    "additionalProperties": False,
}
FEEDER_KEYS = tuple(FEEDER_SCHEMA["properties"])


@dataclass(frozen=True)
class PlanFeeder:
    """A plan's feeder: the file (resolved against the plan's folder) and what the plan set of the rest."""

    file: str
    mode: str | None = None
    exhausted: str | None = None
    batch: int | None = None


def parse_feeder(value: Any, where: str, plan_folder: Path | None) -> PlanFeeder | None:
    """The ``feeder:`` mapping checked (``where`` names the plan file), or None when the plan has none."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise UsageError(f"{where}: feeder must be a mapping such as {{file: rows.csv, mode: unique}}, got {value!r}")
    unknown = sorted(str(key) for key in set(value) - set(FEEDER_KEYS))
    if unknown:
        raise UsageError(f"{where}: feeder: unknown key(s) {', '.join(unknown)}; known: {', '.join(FEEDER_KEYS)}")
    file = value.get("file")
    if not isinstance(file, str) or not file.strip():
        raise UsageError(f"{where}: feeder: file is missing (a CSV or JSON Lines file, relative to the plan file)")
    path = Path(file.strip()).expanduser()
    if not path.is_absolute() and plan_folder is not None:
        path = plan_folder / path
    return PlanFeeder(
        file=str(path),
        mode=_choice(value, "mode", MODES, where),
        exhausted=_choice(value, "exhausted", EXHAUSTED, where),
        batch=_batch(value.get("batch"), where),
    )


def _choice(value: dict[str, Any], key: str, choices: tuple[str, ...], where: str) -> str | None:
    chosen = value.get(key)
    if chosen is None:
        return None
    if chosen not in choices:
        raise UsageError(f"{where}: feeder: {key} must be one of {', '.join(choices)}, not {chosen!r}")
    return str(chosen)


def _batch(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_BATCH:
        raise UsageError(f"{where}: feeder: batch must be a whole number 1..{MAX_BATCH}, not {value!r}")
    return value


#: Each plan feeder key with the option that sets it and that option's dest on the parsed options.
FEEDER_OPTIONS = (
    ("file", "--feeder", "feeder"),
    ("mode", "--feeder-mode", "feeder_mode"),
    ("exhausted", "--feeder-exhausted", "feeder_exhausted"),
    ("batch", "--feeder-batch", "feeder_batch"),
)


def merge_plan_feeder(options: Any, feeder: PlanFeeder, plan_source: str) -> list[dict[str, Any]]:
    """Fill the feeder options this run was not given from the plan's ``feeder:``; an option given for the run
    keeps its value. Returns what the options replaced of the plan (``{"option", "given", "plan", "message"}``)."""
    overrides: list[dict[str, Any]] = []
    for key, flag, dest in FEEDER_OPTIONS:
        planned = getattr(feeder, key)
        if planned is None:
            continue
        given = getattr(options, dest, None)
        if given in (None, ""):
            setattr(options, dest, planned)
        elif given != planned:
            message = f"{flag} {given} (given for the run) wins over plan {plan_source}'s feeder {key}: {planned}"
            overrides.append({"option": flag, "given": given, "plan": planned, "message": message})
    return overrides
