"""What ``--feeder`` was given as: the file, mode, end-of-rows rule and batch, checked; the columns Users take.

Pure (reads an options namespace and User classes' attributes), so the listener (``listeners/feeder.py``) and a
test share one reading of the options.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from swarmgauge.errors import UsageError

MODES = ("shared", "unique")
EXHAUSTED = ("stop", "recycle")
DEFAULT_EXHAUSTED = {"shared": "recycle", "unique": "stop"}
MAX_BATCH = 1000
DEFAULT_MODE = "shared"
DEFAULT_BATCH = 20


@dataclass
class FeederSettings:
    """One run's ``--feeder``, ``--feeder-mode``, ``--feeder-exhausted`` (the mode's default filled in), ``--feeder-batch``."""

    path: str
    mode: str
    exhausted: str
    batch: int

    @property
    def stops(self) -> bool:
        return self.exhausted == "stop"


def settings_from(options: Any) -> FeederSettings | None:
    """The feeder this run was given, or None; a bad value is a UsageError.

    An option left unset (``""``, or None for the batch) takes its default here, not in the parser, so a plan's
    ``feeder:`` can fill the ones the run was not given (:mod:`swarmgauge.plans.plan_feeder`)."""
    path = str(getattr(options, "feeder", "") or "")
    if not path:
        return None
    mode = str(getattr(options, "feeder_mode", "") or DEFAULT_MODE)
    if mode not in MODES:
        raise UsageError(f"--feeder-mode must be one of {', '.join(MODES)}, not {mode!r}")
    exhausted = str(getattr(options, "feeder_exhausted", "") or DEFAULT_EXHAUSTED[mode])
    if exhausted not in EXHAUSTED:
        raise UsageError(f"--feeder-exhausted must be one of {', '.join(EXHAUSTED)}, not {exhausted!r}")
    given_batch = getattr(options, "feeder_batch", None)
    batch = DEFAULT_BATCH if given_batch in (None, "") else int(given_batch)
    if not 1 <= batch <= MAX_BATCH:
        raise UsageError(f"--feeder-batch must be 1..{MAX_BATCH}, got {batch}")
    return FeederSettings(path, mode, exhausted, batch)


def needed_columns(user_classes: list[type], attribute: str = "feeder_columns") -> dict[str, str]:
    """Each column the run's User classes take (``feeder_columns``), with the first class that takes it."""
    needed: dict[str, str] = {}
    for user_class in user_classes:
        for column in getattr(user_class, attribute, ()) or ():
            needed.setdefault(column, user_class.__name__)
    return needed
