"""The demo's run reports, rendered once the load is over: ``python -m swarmgauge.cli.demo_reports RUN...``.

Each workload's Locust runs with ``--no-report``. Rendered in the workload's own process, a report paid the imports
of pandas, matplotlib and plotly again and took its seconds out of the demo's budget one workload at a time (0.8 to
4 s each over 32 workloads). Here a few processes, one per core, share every run's report once no load is left to
disturb; each pays the imports once. A report that fails is said in one line and the others go on.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from swarmgauge.targets.launch import child_env

#: how long one process may take per report it renders (a 1-minute soak's report takes a few seconds on 2 cores)
SECONDS_PER_REPORT = 60.0


def render_reports(runs: list[Path]) -> tuple[float, int, list[str]]:
    """Every run's report, one process per core: (seconds taken, processes, a line per report not rendered)."""
    began = time.monotonic()
    if not runs:
        return 0.0, 0, []
    count = max(1, min(os.cpu_count() or 1, len(runs)))
    shares = [runs[i::count] for i in range(count)]
    children = [
        subprocess.Popen(
            [sys.executable, "-m", "swarmgauge.cli.demo_reports", *map(str, share)],
            env=child_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for share in shares
    ]
    failed: list[str] = []
    for child, share in zip(children, shares):
        said: list[str] = []
        try:
            out, _ = child.communicate(timeout=SECONDS_PER_REPORT * len(share))
        except subprocess.TimeoutExpired:
            child.kill()
            out, _ = child.communicate()
            said.append(f"{len(share)} reports: timed out after {SECONDS_PER_REPORT * len(share):.0f} s")
        said += [line.removeprefix("failed: ") for line in out.splitlines() if line.startswith("failed: ")]
        if child.returncode not in (0, None) and not said:  # this process's own end, whatever the others said
            said.append(f"a report process ended with {child.returncode}: {out[-300:]}")
        failed += said
    return time.monotonic() - began, count, failed


def main(argv: list[str]) -> int:
    """Render each run folder's report; ``failed: RUN: why`` for each that could not be rendered."""
    import logging

    from swarmgauge.reports.report import render_report

    logging.basicConfig(level=logging.ERROR)
    code = 0
    for run in argv:
        try:
            render_report(Path(run))
        except Exception as exc:  # noqa: BLE001 - one report lost must not lose the others
            print(f"failed: {run}: {type(exc).__name__}: {exc}", flush=True)
            code = 1
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
