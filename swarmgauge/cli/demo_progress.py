"""The progress lines of ``swarmgauge demo``: each workload with its elapsed time and the whole demo's time left.

The time left is the planned load seconds of the workloads still to run plus, for each of them, the start-up and
teardown measured so far (a workload's elapsed time over its planned seconds, averaged over those done), plus the
run reports rendered after the last one (``reports_s``); before the first workload ends, ``FIRST_GUESS_OVERHEAD_S``
stands in for that measure.
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: start-up and teardown per workload, until one has been measured: with each start-up under the end before it
#: (``cli/demo_runs.py``) and kneo-serv imported once for its page, ``demo --all`` took 1.5 s a workload over its plan
#: at --scale 1 (17.9 min for 17.0 planned) and 1.6 s at 0.25 (5.8 min for 4.8), the host at its reference speed;
#: the guess of 4 s said 19.9 and 7.7 min for them
FIRST_GUESS_OVERHEAD_S = 2.0
#: one run's report (0.4 to 4 s on one core of 2): the renderer works through each run's report while the next
#: workload starts up, so the last run's is what is left after the load (34 and 32 of 35 rendered under start-ups in
#: those two runs, the rest in 2 s; the estimate of 35 s for all 35 on 2 cores said 6.5 min for a 5.8 min run)
REPORT_S = 2.0


def minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


class Progress:
    """The demo's clock: what is planned, what is done, and the estimate of what is left."""

    def __init__(
        self, planned: list[float], clock: Callable[[], float] = time.monotonic, reports_s: float = 0.0
    ) -> None:
        self.planned = planned
        self.clock = clock
        self.reports_s = reports_s
        self.began = clock()
        self.overheads: list[float] = []
        self.done = 0

    def overhead(self) -> float:
        """Seconds a workload takes beyond its plan: the mean measured so far, or the first guess."""
        return sum(self.overheads) / len(self.overheads) if self.overheads else FIRST_GUESS_OVERHEAD_S

    def left(self) -> float:
        """Seconds the workloads not yet finished should take, start-up included, and the reports after them."""
        remaining = self.planned[self.done :]
        return sum(remaining) + self.overhead() * len(remaining) + self.reports_s

    def opening(self) -> str:
        return f"{minutes(sum(self.planned))} of load planned, about {minutes(self.left())} with start-up"

    def starting(self, number: int, name: str, what: str) -> str:
        """The head of a workload's line, printed before it runs."""
        return f"[{number}/{len(self.planned)}] {name}: {what} (planned {minutes(self.planned[number - 1])}) ..."

    def finished(self, took: float) -> str:
        """The end of a workload's line: the demo's elapsed time and the estimate of what is left of it."""
        self.overheads.append(max(0.0, took - self.planned[self.done]))
        self.done += 1
        elapsed = self.clock() - self.began
        tail = f"about {minutes(self.left())} left" if self.done < len(self.planned) else "no workload left"
        if self.done == len(self.planned) and self.reports_s:
            tail += f", the reports next (about {minutes(self.reports_s)})"
        return f"demo {minutes(elapsed)} elapsed, {tail}"
