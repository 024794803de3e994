"""How fast this host runs Python right now, against the same host when the reference was measured.

The embedded targets and the generator are Python, and on a shared host the CPU a unit of their work takes moves
with the neighbours: kneo-serv's CPU a run went from 28 to 45 ms and the MDK stand-in's CPU a read from 0.76 to 1.39
ms between runs of the same code hours apart, and every rate the pages compare moved with them. ``demo`` runs
:func:`probe_ms` before its first workload and after its last, and the index says how far each was from
:data:`REFERENCE_MS`, so a reader can tell a slow host from a slow target.

The probe is a fixed piece of the kind of work the targets do (JSON in and out, dicts, string formatting, a little
arithmetic), timed in the process's own CPU time, so waiting for a core does not count and a slower core does; the
median of its rounds leaves out a neighbour's burst of a few milliseconds.
"""

from __future__ import annotations

import gc
import json
import statistics
import time

#: the probe's median CPU on this 2-core host, the fastest measured then (``python -m benchmarks.host_speed``,
#: 2026-12-07 05:08 UTC, beside the MDK stand-in at 0.78 ms of CPU a read on 2,000 / 4, where the fit of its
#: settings had measured 0.93; benchmarks/results/host_speed_0508.json)
REFERENCE_MS = 24.4
#: rounds of the probe; their median is the figure (one round is about 24 ms at the reference speed)
ROUNDS = 7
#: units of work in one round
UNITS = 2_000


def _unit(number: int) -> int:
    """One unit: a small record encoded, decoded, indexed and formatted, as a request handler would."""
    record = {"id": number, "name": f"device-{number:05d}", "tags": ["a", "b", str(number % 7)], "load": number * 0.5}
    decoded = json.loads(json.dumps(record))
    index = {tag: position for position, tag in enumerate(decoded["tags"])}
    text = "|".join(f"{key}={value}" for key, value in sorted(decoded.items()) if key != "tags")
    total = 0
    for step in range(40):
        total += (step * number) % 13
    return total + len(text) + len(index)


def probe_once(units: int = UNITS) -> float:
    """CPU milliseconds one round of ``units`` took in this process."""
    began = time.process_time()
    for number in range(units):
        _unit(number)
    return (time.process_time() - began) * 1000.0


def probe_ms(rounds: int = ROUNDS) -> float:
    """The median CPU milliseconds of ``rounds`` rounds of the probe, with the cyclic collector held off: in a
    process holding pandas' and Locust's objects, the rounds' allocations set off full collections of that heap
    (45 and 40 ms for the first two rounds against 24, the same machine) that time the process, not the host."""
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        return statistics.median([probe_once() for _ in range(max(1, rounds))])
    finally:
        if enabled:
            gc.enable()


def slowdown(measured_ms: float, reference_ms: float = REFERENCE_MS) -> float:
    """How many times slower than the reference machine (1.0: as fast; below 1: faster)."""
    return measured_ms / reference_ms if reference_ms > 0 else float("nan")
