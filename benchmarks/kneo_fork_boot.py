"""How long a kneo workload waits for its kneo-serv: processes forked from the fork parent against each started as
``kneo service serve``, for 1, 2 and 8 processes on PostgreSQL and on SQLite, the two alternating. Figures only;
writes the JSON.

A boot is timed as a workload starts it (``locustfiles/kneo_dispatch.py``): on PostgreSQL the throwaway cluster is
part of it, the fork parent launched before it so kneo-serv's imports overlap it; ``service_s`` is the part after
the cluster was up. Run it alone on the machine (``flock -x /work/wt/quiet.lock``)::

    python -m benchmarks.kneo_fork_boot [--repeats 3] [--processes 1,2,8] [--stores postgres,sqlite] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

from swarmgauge.files import write_json
from swarmgauge.targets.kneo.service import KneoService, launch_fork_parent
from swarmgauge.targets.postgres import PostgresCluster

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "kneo_fork_boot.json"
METHODS = ("fork", "exec")


def boot(store: str, processes: int, method: str) -> dict[str, float]:
    """One boot as a workload does it, stopped at once: total seconds and the service's part."""
    started = time.monotonic()
    fork_parent = launch_fork_parent() if method == "fork" else None
    cluster = PostgresCluster(fsync=False).start() if store == "postgres" else None
    service_started = time.monotonic()
    service = KneoService(
        store=store,
        dsn=cluster.dsn if cluster else None,
        processes=processes,
        start_method=method,
        fork_parent=fork_parent,
    )
    try:
        service.start()
        ended = time.monotonic()
        assert method == "exec" or service.fork_parent is not None, "the fork path fell back"
    finally:
        service.stop()
        if cluster is not None:
            cluster.stop()
    return {"boot_s": round(ended - started, 3), "service_s": round(ended - service_started, 3)}


def summary(runs: dict[str, list[dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Per case (``store processes method``): the median boot and service seconds."""
    return {
        case: {key: round(statistics.median(run[key] for run in boots), 3) for key in ("boot_s", "service_s")}
        for case, boots in runs.items()
    }


def table(medians: dict[str, dict[str, float]]) -> str:
    """One line per store and process count: the fork path's median boot beside the exec path's."""
    lines = [f"{'store':<9}{'procs':>6}{'fork s':>9}{'exec s':>9}{'saved s':>9}"]
    cases = sorted({tuple(case.split()[:2]) for case in medians}, key=lambda case: (case[0], int(case[1])))
    for store, processes in cases:
        fork, exec_ = (medians.get(f"{store} {processes} {method}", {}).get("boot_s") for method in METHODS)
        saved = f"{exec_ - fork:9.2f}" if fork is not None and exec_ is not None else f"{'':>9}"
        lines.append(f"{store:<9}{processes:>6}{fork or 0:9.2f}{exec_ or 0:9.2f}{saved}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--processes", default="1,2,8")
    parser.add_argument("--stores", default="postgres,sqlite")
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    args = parser.parse_args(argv)
    runs: dict[str, list[dict[str, float]]] = {}
    load_before = round(os.getloadavg()[0], 2)
    for repeat in range(args.repeats):
        for store in args.stores.split(","):
            for processes in (int(count) for count in args.processes.split(",")):
                # alternating, and the first method of a pair alternating too: neither always boots second
                for method in METHODS if repeat % 2 == 0 else METHODS[::-1]:
                    result = boot(store, processes, method)
                    runs.setdefault(f"{store} {processes} {method}", []).append(result)
                    print(f"{store} {processes} {method}: {result}", flush=True)
    doc: dict[str, Any] = {
        "runs": runs,
        "median": summary(runs),
        "repeats": args.repeats,
        "load_avg_before": load_before,
        "load_avg_after": round(os.getloadavg()[0], 2),
        "cpus": os.cpu_count(),
    }
    print(table(doc["median"]))
    print(f"written {write_json(Path(args.out), doc)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
