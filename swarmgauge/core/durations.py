"""The one duration parser for plans, trends and target options: ``500ms``, ``1.5s``, ``10m``, ``1h30m``, ``45``."""

from __future__ import annotations

import math
import re
from typing import Any

from swarmgauge.errors import UsageError

#: The length of a stage with no set end (Locust's ``-u`` without ``-t``, as a web UI run often is): the shape engine
#: needs a number, so it is a year; run.json marks such a stage ``until_stopped`` and the report says so.
UNTIL_STOPPED = 365 * 24 * 3600.0

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|min|h|m|s)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


class DurationError(UsageError):
    """A duration that is not ``<number><unit>`` parts (ms, s, m, min, h) or a bare number of seconds."""


def parse_duration(value: Any, what: str = "duration") -> float:
    """Seconds from ``500ms``, ``1.5s``, ``10m``, ``1h30m``, ``2m 30s`` or a bare number (seconds); never negative.

    ``what`` names the option or field in the error, so the one line says where the bad value came from.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise DurationError(f"{what}: expected a duration such as 30s, 5m or 1h30m, got {value!r}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        text = value.strip().replace(" ", "")
        if _NUMBER.fullmatch(text):
            seconds = float(text)
        else:
            parts = _PART.findall(text)
            if not parts or "".join(number + unit for number, unit in parts) != text:
                raise DurationError(f"{what}: expected a duration such as 500ms, 30s, 5m or 1h30m, got {value!r}")
            seconds = sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)
    if not math.isfinite(seconds):
        raise DurationError(f"{what}: must be a finite duration, got {value!r}")
    if seconds < 0:
        raise DurationError(f"{what}: must not be negative, got {value!r}")
    return seconds
