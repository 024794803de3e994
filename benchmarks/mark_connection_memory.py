"""What one pooled Mark connection keeps after its handshake and first FETCH: RSS and tracemalloc per connection.

``python -m benchmarks.mark_connection_memory [--connections 300] [--top 15]
[--out benchmarks/results/mark_connection_memory.json]``

One reference server (``swarmgauge target mark``); two child processes each open ``--connections`` pooled
``MarkClient`` s one after another (as Locust's spawning staggers them) and FETCH once on each:

- ``rss``: the process's resident memory per connection, read after ``gc.collect()`` and glibc's ``malloc_trim``
  so that freed pages do not count (no tracemalloc: its own bookkeeping would);
- ``traced``: Python's allocations per connection by source line (tracemalloc), grouped by part: qh3's native
  core object (allocated through Python), qh3's Python, swarmgauge, gevent, the rest. RSS less the traced figure
  is native memory that tracemalloc does not see (qh3's Rust heap: keys, recovery, streams).

The Locust User and its greenlet (the rest of a MarkUser's figure in ``mark_client``'s scaling table) are not in
these connections. Figures only: nothing asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.mark_client_cases import CLOCK, ROOT, BenchmarkError
from swarmgauge.errors import UsageError
from swarmgauge.files import write_json

DEFAULT_OUT = ROOT / "benchmarks" / "results" / "mark_connection_memory.json"
PARTS = (
    ("qh3 native core object", "qh3/quic/connection.py:492"),
    ("qh3", "/qh3/"),
    ("swarmgauge", "swarmgauge/"),
    ("gevent", "/gevent/"),
)


def _part(where: str) -> str:
    return next((part for part, needle in PARTS if needle in where), "other")


def run_child(url: str, connections: int, mode: str, top: int) -> dict[str, Any]:
    """In a fresh process: open the connections one by one, FETCH once on each, and measure (``mode``)."""
    from gevent import monkey

    monkey.patch_all()
    import ctypes
    import gc
    import tracemalloc

    import psutil

    from swarmgauge.targets.mark.seed import corpus_paths
    from swarmgauge.users.mark_client import MarkClient

    trim = getattr(ctypes.CDLL("libc.so.6"), "malloc_trim", None)
    process = psutil.Process()

    def resident() -> int:
        gc.collect()
        if trim is not None:
            trim(0)
        return int(process.memory_info().rss)

    path = corpus_paths(300)[0]
    warm = MarkClient(url, insecure=True)
    warm.fetch(path)  # imports, caches and the first connection's one-off costs, outside the figures
    if mode == "traced":
        tracemalloc.start(1)
    before, snapshot = resident(), tracemalloc.take_snapshot() if mode == "traced" else None
    clients = [MarkClient(url, insecure=True) for _ in range(connections)]
    for client in clients:
        client.fetch(path)
    result: dict[str, Any] = {"rss_kib_per_connection": round((resident() - before) / connections / 1024, 1)}
    if snapshot is not None:
        stats = tracemalloc.take_snapshot().compare_to(snapshot, "lineno")
        parts: dict[str, float] = {}
        for stat in stats:
            where = f"{stat.traceback[0].filename}:{stat.traceback[0].lineno}"
            parts[_part(where)] = parts.get(_part(where), 0.0) + stat.size_diff / connections
        result["traced_kib_per_connection"] = round(sum(parts.values()) / 1024, 1)
        result["traced_bytes_by_part"] = {
            part: round(size) for part, size in sorted(parts.items(), key=lambda i: -i[1])
        }
        result["top_lines"] = [
            {
                "where": f"{stat.traceback[0].filename.split('site-packages/')[-1].replace(str(ROOT) + '/', '')}"
                f":{stat.traceback[0].lineno}",
                "bytes_per_connection": round(stat.size_diff / connections),
                "blocks_per_connection": round(stat.count_diff / connections, 1),
            }
            for stat in stats[:top]
        ]
    for client in clients:
        client.close()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.mark_connection_memory", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--connections", type=int, default=300, help="pooled connections per child")
    parser.add_argument("--top", type=int, default=15, help="source lines listed by traced bytes")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON file to write")
    parser.add_argument("--child", choices=("rss", "traced"), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if not 1 <= opts.connections <= 5000 or opts.top < 0:
        print("mark_connection_memory: --connections must be 1..5000 and --top >= 0", file=sys.stderr)
        return 2
    if opts.child:
        print("RESULT " + json.dumps(run_child(opts.url, opts.connections, opts.child, opts.top)), flush=True)
        return 0
    from swarmgauge.targets.launch import child_env, launch_target

    server = launch_target("mark", ["--port", "0", "--seed-corpus", "300", "--clock", CLOCK, "--quic-engine", "qh3"])
    doc: dict[str, Any] = {"benchmark": "mark_connection_memory", "connections": opts.connections}
    try:
        for mode in ("rss", "traced"):
            command = [sys.executable, "-m", "benchmarks.mark_connection_memory", "--child", mode, "--url", server.url]
            command += ["--connections", str(opts.connections), "--top", str(opts.top)]
            done = subprocess.run(command, capture_output=True, text=True, cwd=str(ROOT), env=child_env(), timeout=600)
            lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
            if done.returncode != 0 or not lines:
                raise BenchmarkError(f"{mode} child failed (exit {done.returncode}): {done.stderr.strip()[-800:]}")
            doc[mode] = json.loads(lines[-1][len("RESULT ") :])
    except (BenchmarkError, UsageError, subprocess.TimeoutExpired) as exc:
        print(f"mark_connection_memory: {exc}", file=sys.stderr)
        return 1
    finally:
        server.stop()
    doc["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    doc["load_average"] = [round(value, 2) for value in os.getloadavg()]
    rss, traced = doc["rss"]["rss_kib_per_connection"], doc["traced"]["traced_kib_per_connection"]
    doc["native_kib_per_connection"] = round(rss - traced, 1)
    native = doc["native_kib_per_connection"]
    print(f"per pooled connection: {rss} KiB resident, {traced} KiB traced by Python, ~{native} KiB native")
    print(f"load average {doc['load_average']}")
    for part, size in doc["traced"]["traced_bytes_by_part"].items():
        print(f"  {part}: {size} B")
    print(f"written to {write_json(opts.out, doc)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
