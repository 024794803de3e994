"""Pluggable sources for the resource sampler: each turns one ``--sample`` spec into readings.

A source is polled once per sampling interval from the sampler greenlet; it must be cheap, must not keep a socket
or thread between polls, and signals trouble by raising :class:`SourceError` (the sampler counts those and logs
them once per interval; it never stops the run). Specs look like ``KIND:ARGUMENT``:

``psutil:pid=N`` · ``psutil:pidfile=PATH`` · ``psutil:match=REGEX`` (add ``,uss`` for USS) · ``cgroup:PATH`` ·
``gctrace:LOGFILE`` · ``pprof:URL`` · ``expvar:URL`` · ``prom:URL#metric,metric``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, cast

from swarmgauge.core.trend import MIB
from swarmgauge.errors import SwarmgaugeError, UsageError

# kind -> "module:factory"; factories take the argument after "KIND:" and raise UsageError when it is malformed.
SOURCE_KINDS = {
    "psutil": "swarmgauge.listeners.sources.proc:PsutilSource.from_spec",
    "cgroup": "swarmgauge.listeners.sources.cgroup:CgroupSource.from_spec",
    "gctrace": "swarmgauge.listeners.sources.gctrace:GctraceSource.from_spec",
    "pprof": "swarmgauge.listeners.sources.goheap:PprofSource.from_spec",
    "expvar": "swarmgauge.listeners.sources.goheap:ExpvarSource.from_spec",
    "prom": "swarmgauge.listeners.sources.prom:PromSource.from_spec",
}

__all__ = ["MIB", "SOURCE_KINDS", "Reading", "Source", "SourceError", "parse_source"]


class SourceError(SwarmgaugeError):
    """A source could not be read this interval (process gone, file missing, endpoint down, bad body)."""


@dataclass(frozen=True)
class Reading:
    """One value a source read: ``metric`` names it with its unit (``rss_bytes``, ``cpu_percent``, ``gc_count``)."""

    metric: str
    value: float


class Source(Protocol):
    """What the sampler needs from a source."""

    label: str

    def sample(self) -> list[Reading]:
        """Read the current values; raise :class:`SourceError` when the target cannot be read now."""


def parse_source(spec: str) -> Source:
    """Build the source a ``--sample`` spec names, or raise :class:`UsageError` with one line saying why."""
    kind, sep, argument = spec.partition(":")
    if not sep or not argument:
        raise UsageError(f"--sample {spec!r}: expected KIND:ARGUMENT with KIND one of {', '.join(SOURCE_KINDS)}")
    target = SOURCE_KINDS.get(kind.strip().lower())
    if target is None:
        raise UsageError(f"--sample {spec!r}: unknown source {kind!r}; choose one of {', '.join(SOURCE_KINDS)}")
    module_name, _, attr_path = target.partition(":")
    found: object = importlib.import_module(module_name)
    for attr in attr_path.split("."):
        found = getattr(found, attr)
    factory = cast(Callable[[str], Source], found)
    source = factory(argument.strip())
    source.label = spec.strip()
    return source
