"""What a Locust user keeps at N users, paced as ``mark_client``'s scaling table: per user, RSS, Python's allocations
by source line, and the resident pages of its greenlet's Python data stack; a MarkUser beside a no-op user.

``python -m benchmarks.mark_user_memory [--users 1000] [--pace 160] [--top 30] [--kinds mark,noop]
[--out benchmarks/results/mark_user_memory.json]``

One reference server; for each kind, two child processes start ``--users`` users under an in-process Locust runner
(``mark``: ``FetchUser`` pooled on qh3; ``noop``: a ``User`` whose task does nothing), all paced to ``--pace`` tasks/s
together, and read after every user is spawned (and connected) and a one-second warm-up:

- ``rss``: resident memory per user since before the runner started, and each user greenlet's 16 KiB root Python
  data stack (CPython 3.11+ gives each greenlet its own) read with ``mincore``: how many of its pages are resident;
- ``traced``: tracemalloc over the same span, per user by source line.

``mark_connection_memory`` measures a pooled connection without its Locust user; this adds the user. Figures only:
nothing asserts.
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

DEFAULT_OUT = ROOT / "benchmarks" / "results" / "mark_user_memory.json"
KINDS = ("mark", "noop")
PAGE = 4096
ROOT_CHUNK = 16384  # CPython's first data-stack chunk of a thread (here: of a greenlet)


def _user_class(kind: str, users: int, pace: float) -> Any:
    from locust import User, constant_throughput, task

    from swarmgauge.locustfiles.demarkus_reads import FetchUser

    wait = constant_throughput(pace / users)
    if kind == "mark":
        return type("PacedFetchUser", (FetchUser,), {"wait_time": wait, "abstract": False})

    class NoopUser(User):
        wait_time = wait

        @task
        def nothing(self) -> None:
            """A paced task that does no work: the user and its greenlet alone."""

    return NoopUser


def _resident_stack_pages(greenlets: list[Any]) -> dict[str, int] | None:
    """Histogram of resident pages in each suspended greenlet's root data-stack chunk; None where the frame layout
    is not the one read here (CPython 3.11: a frame object's ``f_frame`` pointer after its header and ``f_back``)."""
    import ctypes

    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    pages: dict[str, int] = {}
    for greenlet in greenlets:
        frame = greenlet.gr_frame
        if frame is None:
            continue
        while frame.f_back is not None:
            frame = frame.f_back
        address = ctypes.c_void_p.from_address(id(frame) + 24).value or 0
        base = address & ~(PAGE - 1)
        if address - base not in (24, 32):  # the root chunk's header (and its skipped first slot)
            return None
        vector = (ctypes.c_ubyte * (ROOT_CHUNK // PAGE))()
        if libc.mincore(base, ROOT_CHUNK, vector) != 0:
            return None
        resident = str(sum(byte & 1 for byte in vector))
        pages[resident] = pages.get(resident, 0) + 1
    return pages


def run_child(url: str, kind: str, mode: str, users: int, pace: float, top: int) -> dict[str, Any]:
    """In a fresh process: spawn the users, wait until they are up (and connected), measure (``mode``)."""
    from gevent import monkey

    monkey.patch_all()
    import gc
    import tracemalloc

    import gevent
    import locust
    import psutil
    from locust.env import Environment

    parsed = argparse.Namespace(
        host=url, mark_insecure=True, mark_connection="", mark_timeout=10.0, mark_corpus=300, mark_quic_engine="qh3"
    )
    env = Environment(user_classes=[_user_class(kind, users, pace)], host=url, parsed_options=parsed)
    handshakes = [0]

    def on_request(request_type: str, exception: BaseException | None = None, **_: Any) -> None:
        if request_type == "QUIC" and exception is None:
            handshakes[0] += 1

    env.events.request.add_listener(on_request)
    process = psutil.Process()
    gc.collect()
    if mode == "traced":
        tracemalloc.start(1)
    snapshot = tracemalloc.take_snapshot() if mode == "traced" else None
    before = process.memory_info().rss
    runner = env.create_local_runner()
    locust.events.init.fire(
        environment=env, runner=runner, web_ui=None
    )  # as locust.main: a run's set-up, its wait seam
    runner.start(users, spawn_rate=min(users, 100))
    for _ in range(1200):  # bounded (120 s): every user spawned, and connected if it is a MarkUser
        gevent.sleep(0.1)
        if runner.user_count >= users and (kind == "noop" or handshakes[0] >= users):
            break
    gevent.sleep(1.0)
    result: dict[str, Any] = {}
    if snapshot is None:  # RSS from this child only: tracemalloc's own bookkeeping would be in the other's
        result["rss_kib_per_user"] = round((process.memory_info().rss - before) / users / 1024, 2)
        result["stack_pages_resident"] = _resident_stack_pages(list(runner.user_greenlets))
    else:
        stats = tracemalloc.take_snapshot().compare_to(snapshot, "lineno")
        result["traced_kib_per_user"] = round(sum(stat.size_diff for stat in stats) / users / 1024, 2)
        result["top_lines"] = [
            {
                "where": f"{stat.traceback[0].filename.split('site-packages/')[-1].replace(str(ROOT) + '/', '')}"
                f":{stat.traceback[0].lineno}",
                "bytes_per_user": round(stat.size_diff / users),
                "blocks_per_user": round(stat.count_diff / users, 2),
            }
            for stat in stats[:top]
        ]
    runner.quit()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mark_user_memory", description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=1000, help="Locust users per child")
    parser.add_argument("--pace", type=float, default=160.0, help="tasks/s of all users together")
    parser.add_argument("--top", type=int, default=30, help="source lines listed by traced bytes")
    parser.add_argument("--kinds", default=",".join(KINDS), help="users to measure: mark, noop or both")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON file to write")
    parser.add_argument("--child", choices=("rss", "traced"), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    kinds = [kind.strip() for kind in opts.kinds.split(",") if kind.strip()]
    if not 1 <= opts.users <= 5000 or not 0 < opts.pace < 1e6 or opts.top < 0 or not kinds or set(kinds) - set(KINDS):
        print(
            "mark_user_memory: --users must be 1..5000, --pace > 0, --top >= 0, --kinds of mark,noop", file=sys.stderr
        )
        return 2
    if opts.child:
        result = run_child(opts.url, kinds[0], opts.child, opts.users, opts.pace, opts.top)
        print("RESULT " + json.dumps(result), flush=True)
        return 0
    from swarmgauge.targets.launch import child_env, launch_target

    server = launch_target("mark", ["--port", "0", "--seed-corpus", "300", "--clock", CLOCK, "--quic-engine", "qh3"])
    doc: dict[str, Any] = {"benchmark": "mark_user_memory", "users": opts.users, "pace": opts.pace, "kinds": {}}
    try:
        for kind in kinds:
            doc["kinds"][kind] = {}
            for mode in ("rss", "traced"):
                command = [sys.executable, "-m", "benchmarks.mark_user_memory", "--child", mode, "--url", server.url]
                command += [
                    "--kinds",
                    kind,
                    "--users",
                    str(opts.users),
                    "--pace",
                    str(opts.pace),
                    "--top",
                    str(opts.top),
                ]
                done = subprocess.run(
                    command, capture_output=True, text=True, cwd=str(ROOT), env=child_env(), timeout=900
                )
                lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
                if done.returncode != 0 or not lines:
                    raise BenchmarkError(f"{kind} {mode} child failed (exit {done.returncode}): {done.stderr[-800:]}")
                doc["kinds"][kind].update(json.loads(lines[-1][len("RESULT ") :]))
    except (BenchmarkError, UsageError, subprocess.TimeoutExpired) as exc:
        print(f"mark_user_memory: {exc}", file=sys.stderr)
        return 1
    finally:
        server.stop()
    doc["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    doc["load_average"] = [round(value, 2) for value in os.getloadavg()]
    for kind, figures in doc["kinds"].items():
        print(
            f"{kind}: {figures['rss_kib_per_user']} KiB resident per user, {figures['traced_kib_per_user']} KiB traced;"
            f" data-stack pages resident per greenlet {figures['stack_pages_resident']}"
        )
        for line in figures["top_lines"][:10]:
            print(f"  {line['bytes_per_user']:6d} B  {line['where']}")
    print(f"load average {doc['load_average']}")
    print(f"written to {write_json(opts.out, doc)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
