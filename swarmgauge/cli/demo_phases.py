"""Where a demo workload's time goes, phase by phase, for its progress line and the demo's closing line.

A workload's process starts up (the interpreter, Locust, its targets: PostgreSQL's initdb, a fleet of mock devices)
while the one before it ends, so only the start-up left when that one has exited adds to the demo's time ("waited").
Then its load (from the go, or from its start-up's end if later, until its users stopped), its drain (a kneo queue
worked off, the sampling ended: ``listeners/handoff.py``'s ``load-end`` to ``load-done``) and its end (its files, its
targets stopped) follow one another. The handoff files' times mark the phases; a phase with a file missing (a run
that failed early) is left out rather than guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: the phases a workload's elapsed time is made of, in order (start-up only as far as it was waited for)
PHASES = ("waited", "load", "drain", "end")


def _span(start: float | None, stop: float | None) -> float | None:
    return None if start is None or stop is None else max(0.0, stop - start)


@dataclass(frozen=True)
class Phases:
    """Wall-clock times (``time.time()``) of one workload's process: started, ready (start-up done), let go, load
    ended (users stopped), load done (drain and sampling over), exited."""

    started: float | None = None
    ready: float | None = None
    let_go: float | None = None
    load_end: float | None = None
    load_done: float | None = None
    exited: float | None = None

    def startup(self) -> float | None:
        return _span(self.started, self.ready)

    def waited(self) -> float | None:
        """The start-up left once the demo let it go: what its start-up added to the demo's time."""
        return _span(self.let_go, max(self.ready, self.let_go)) if self.ready and self.let_go else None

    def load(self) -> float | None:
        began = max(self.ready, self.let_go) if self.ready and self.let_go else None
        return _span(began, self.load_end)

    def drain(self) -> float | None:
        return _span(self.load_end, self.load_done)

    def end(self) -> float | None:
        return _span(self.load_done, self.exited)

    def seconds(self) -> dict[str, float]:
        """Each phase measured, rounded to 0.1 s (``demo.json`` keeps them)."""
        found = {"startup": self.startup(), **{name: getattr(self, name)() for name in PHASES}}
        return {name: round(value, 1) for name, value in found.items() if value is not None}

    def text(self) -> str:
        """``start-up 5.2 s (0.8 s waited), load 20.3 s, drain 0.4 s, end 2.1 s`` (what was measured of it)."""
        return phase_text(self.seconds())


def phase_text(seconds: dict[str, float]) -> str:
    parts = []
    if "startup" in seconds:
        waited = f" ({seconds['waited']:.1f} s waited)" if "waited" in seconds else ""
        parts.append(f"start-up {seconds['startup']:.1f} s{waited}")
    parts += [f"{name} {seconds[name]:.1f} s" for name in PHASES[1:] if name in seconds]
    return ", ".join(parts)


@dataclass
class PhaseTotals:
    """The demo's phases summed over its workloads, then the reports and the index after them."""

    totals: dict[str, float] = field(default_factory=dict)
    planned: float = 0.0

    def add(self, seconds: dict[str, float], planned: float) -> None:
        for name, value in seconds.items():
            self.totals[name] = self.totals.get(name, 0.0) + value
        self.planned += planned

    def text(self, reports_s: float, index_s: float, total_s: float) -> str:
        """The closing line: where the demo's time went."""
        got = self.totals
        return (
            f"time by phase: start-up waited {got.get('waited', 0.0):.0f} s (of {got.get('startup', 0.0):.0f} s, the "
            f"rest under the runs before), load {got.get('load', 0.0):.0f} s ({self.planned:.0f} planned), drain "
            f"{got.get('drain', 0.0):.0f} s, end {got.get('end', 0.0):.0f} s, reports {reports_s:.0f} s, index "
            f"{index_s:.0f} s; {total_s / 60:.1f} min in all"
        )
