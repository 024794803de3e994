"""Generator CPU per Mark FETCH, per QUIC engine: MarkUser under Locust, aioquic's asyncio client, each engine alone
in memory, and how the cost grows with mostly idle users.

``python -m benchmarks.mark_client [--duration 10] [--warmup 2] [--users 1,16] [--corpus 300] [--rounds 3]
[--engines qh3,aioquic] [--server-engine qh3] [--scaling 1,16,64,256,1024] [--scaling-pace 160]
[--profiler py-spy|cprofile|none] [--out benchmarks/results/mark_client.json]``

One reference server (``swarmgauge target mark``, clock pinned so its bytes are reproducible) serves every case.
Each case runs in its own child process, so gevent's monkey-patching and asyncio never meet, and reports process
CPU (user+sys), completed FETCHes and latencies over the steady window only, after a warm-up:

- ``locust``: ``FetchUser`` / ``FreshFetchUser`` of ``locustfiles/demarkus_reads.py`` in an in-process Locust
  ``Environment`` with a local runner (Locust's own stats included, swarmgauge's listeners not attached), once per
  engine of ``--engines``;
- ``scaling``: ``FetchUser`` pooled on the first engine at each ``--scaling`` user count, all users together paced
  to ``--scaling-pace`` FETCH/s (so most connections are idle), with the generator's RSS growth per connection;
- ``asyncio``: ``aioquic.asyncio.connect`` with a minimal protocol, one request per stream with FIN, read to FIN;
- ``memory``: a client and a server ``QuicConnection`` in one process on a virtual clock, no sockets; only the
  client-side calls are timed (``thread_time``); the server answers with the bytes the reference server sends,
  built with ``targets.mark.handler.Handler`` (the asyncio case checks every answer of the real server against them);
- ``locust-floor`` and ``udp-floor`` (``benchmarks/mark_floors.py``): Locust's own bookkeeping per request, and one
  UDP round trip through gevent's io watcher; with the engine in memory they are the least a MarkUser FETCH can cost
  on real sockets, and the ratios say what MarkUser costs above their sum.

The cases run ``--rounds`` times, interleaved (all cases once, then all again), and each case reports its median
round with every round's figure beside it: the machines these run on are shared, and a neighbour's burst during
one case would otherwise skew a ratio. One more locust pooled run (at the largest user count) is profiled over its window, with py-spy when it is
installed (sampling from outside, native frames included) or else cProfile on the CPU clock, and summarised by
function and by part (aioquic, swarmgauge, Locust, gevent, syscalls). The cases themselves live in
``benchmarks/mark_client_cases.py``. Figures only: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from importlib import metadata as _metadata
from pathlib import Path
from typing import Any

from benchmarks.mark_client_cases import CLOCK, ROOT, BenchmarkError, kind_path
from benchmarks.mark_client_table import (
    ANCHOR_CLIENT,
    FLOOR_CLIENTS,
    GOALS,
    NO_ENGINE_CLIENTS,
    POLICIES,
    ratios,
    render,
)
from swarmgauge.errors import UsageError
from swarmgauge.files import write_json
from swarmgauge.quic.engine import DEFAULT_ENGINE, DEFAULT_SERVER_ENGINE, ENGINES

DEFAULT_OUT = ROOT / "benchmarks" / "results" / "mark_client.json"
CLIENTS = ("locust", "asyncio", "memory", *NO_ENGINE_CLIENTS)
PROFILERS = ("py-spy", "cprofile", "none")


# -- orchestration ---------------------------------------------------------------------------------------------
def child_command(
    *,
    client: str,
    engine: str,
    policy: str,
    users: int,
    url: str,
    server_pid: int,
    duration: float,
    warmup: float,
    pace: float,
    corpus: int | None = None,
) -> list[str]:
    """The ``--child`` command line of one case. ``corpus`` may be left out: mark_compare runs other trees' copies of
    this module, which may predate that flag."""
    command = [sys.executable, "-m", "benchmarks.mark_client", "--child", client, "--policy", policy]
    command += ["--users", str(users), "--url", url, "--server-pid", str(server_pid)]
    command += ["--duration", str(duration), "--warmup", str(warmup), "--engine", engine, "--pace", str(pace)]
    return command + (["--corpus", str(corpus)] if corpus is not None else [])


def read_result(done: subprocess.CompletedProcess[str], what: str) -> dict[str, Any]:
    """A child's figures: its last ``RESULT`` line, or a BenchmarkError naming the case and the end of its stderr."""
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        raise BenchmarkError(f"{what} failed (exit {done.returncode}): {done.stderr.strip()[-800:]}")
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    return result


def run_case(
    opts: argparse.Namespace,
    url: str,
    server_pid: int,
    case: tuple[str, str, str, int, float],
    profiler: str | None = None,
) -> dict[str, Any]:
    client, engine, policy, users, pace = case
    command = child_command(
        client=client,
        engine=engine,
        policy=policy,
        users=users,
        url=url,
        server_pid=server_pid,
        duration=opts.duration,
        warmup=opts.warmup,
        pace=pace,
        corpus=opts.corpus,
    )
    from swarmgauge.targets.launch import child_env

    what = f"case {client}/{policy}/{users}"
    try:
        done = subprocess.run(
            command + (["--profile-case", profiler] if profiler else []),
            capture_output=True,
            text=True,
            cwd=str(ROOT),
            env=child_env(),
            timeout=opts.warmup + opts.duration + 90,
        )
    except subprocess.TimeoutExpired:
        raise BenchmarkError(f"{what} did not finish") from None
    return {
        "client": client,
        "engine": None if client in NO_ENGINE_CLIENTS else engine,
        "connection": policy,
        "users": users,
        "pace": pace,
        "load_average": round(os.getloadavg()[0], 2),
        **read_result(done, what),
    }


def median_round(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The round with the median CPU per FETCH, with every round's figure beside it (this machine is shared)."""
    ordered = sorted(results, key=lambda result: result["cpu_us_per_fetch"])
    return {**ordered[(len(ordered) - 1) // 2], "rounds_cpu_us_per_fetch": [r["cpu_us_per_fetch"] for r in results]}


def _users(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise UsageError(f"--users takes positive whole numbers separated by commas, not {text!r}")
    return values


def parse_options(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mark_client", description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=10.0, help="seconds of steady window per case")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds before the window (handshakes, JIT-free)")
    parser.add_argument("--users", default="1,16", help="user counts for the locust and asyncio cases")
    parser.add_argument("--corpus", type=int, default=300, help="documents the reference server is seeded with")
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds of every case, interleaved; each case reports its median round"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON file to write")
    parser.add_argument("--profiler", choices=PROFILERS, default="", help="default: py-spy if installed, else cprofile")
    parser.add_argument(
        "--engines",
        default=",".join(ENGINES),
        help="QUIC engines of the MarkUser and in-memory cases; the first one gets the scaling table",
    )
    parser.add_argument("--server-engine", default=DEFAULT_SERVER_ENGINE, help="QUIC engine of the reference server")
    parser.add_argument(
        "--scaling", default="1,16,64,256,1024", help="user counts of the paced scaling table ('' for none)"
    )
    parser.add_argument("--scaling-pace", type=float, default=160.0, help="FETCH/s of all scaling users together")
    parser.add_argument("--child", choices=CLIENTS, help=argparse.SUPPRESS)
    parser.add_argument("--engine", default=DEFAULT_ENGINE, help=argparse.SUPPRESS)
    parser.add_argument("--pace", type=float, default=0.0, help=argparse.SUPPRESS)
    parser.add_argument("--policy", choices=POLICIES, default="pooled", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--server-pid", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--profile-case", choices=PROFILERS[:2], help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    opts.user_counts = _users(opts.users)
    opts.scaling_counts = _users(opts.scaling) if opts.scaling.strip() else []
    opts.engine_names = [name.strip() for name in opts.engines.split(",") if name.strip()]
    if not opts.engine_names or not set(opts.engine_names + [opts.server_engine, opts.engine]) <= set(ENGINES):
        raise UsageError(f"engines are {', '.join(ENGINES)}, not {opts.engines!r} / {opts.server_engine!r}")
    if not opts.duration > 0 or opts.warmup < 0 or opts.corpus < 1 or opts.rounds < 1:
        raise UsageError("--duration must be > 0, --warmup >= 0, --corpus >= 1 and --rounds >= 1")
    if not (math.isfinite(opts.scaling_pace) and opts.scaling_pace > 0):
        raise UsageError("--scaling-pace must be a positive number of FETCH/s")
    if opts.child:
        opts.users = opts.user_counts[0]
    elif not opts.profiler:
        opts.profiler = "py-spy" if Path(kind_path("py-spy")).exists() else "cprofile"
    return opts


def _anchor_target() -> Any:
    """nginx for the FastHttpUser anchor (``benchmarks.scaling.Nginx``), or None when it is not installed."""
    from benchmarks.scaling import Nginx, NginxUnavailable

    try:
        return Nginx(workers=1)
    except NginxUnavailable as exc:
        print(f"mark_client: no FastHttpUser anchor: {exc}", file=sys.stderr)
        return None


def main(argv: list[str] | None = None) -> int:
    try:
        opts = parse_options(argv)
    except UsageError as exc:
        print(f"mark_client: {exc}", file=sys.stderr)
        return 2
    if opts.child:
        from benchmarks import mark_client_cases as cases
        from benchmarks import mark_floors as floors

        runner = {
            "locust": cases.run_locust,
            "asyncio": cases.run_asyncio,
            "memory": cases.run_memory,
            "locust-floor": floors.run_locust_floor,
            "udp-floor": floors.run_udp_floor,
            ANCHOR_CLIENT: floors.run_fasthttp_anchor,
        }[opts.child]
        window = cases.Window(opts.server_pid if opts.child in ("locust", "asyncio") else None)
        print("RESULT " + json.dumps(runner(opts, window)), flush=True)
        return 0
    from swarmgauge.targets.launch import launch_target

    server = launch_target(
        "mark",
        ["--port", "0", "--seed-corpus", str(opts.corpus), "--clock", CLOCK, "--quic-engine", opts.server_engine],
    )
    first = opts.engine_names[0]
    plan: list[tuple[str, str, str, int, float]] = [
        (client, engine, policy, users, 0.0)
        for engine in opts.engine_names
        for client in ("locust", "memory")
        for policy in POLICIES
        for users in ([1] if client == "memory" else opts.user_counts)
    ]
    plan += [("asyncio", "aioquic", policy, users, 0.0) for policy in POLICIES for users in opts.user_counts]
    plan += [(client, first, "pooled", users, 0.0) for client in FLOOR_CLIENTS for users in opts.user_counts]
    anchor = _anchor_target()
    if anchor is not None:
        plan += [(ANCHOR_CLIENT, first, "pooled", users, 0.0) for users in opts.user_counts]
    plan += [("locust", first, "pooled", users, opts.scaling_pace) for users in opts.scaling_counts]
    rounds: dict[tuple[str, str, str, int, float], list[dict[str, Any]]] = {case: [] for case in plan}
    profile = None
    try:
        for round_index in range(opts.rounds):
            for case in plan:
                target = anchor if case[0] == ANCHOR_CLIENT and anchor is not None else server
                result = run_case(opts, target.url, target.process.pid if target is anchor else server.pid, case)
                rounds[case].append(result)
                print(
                    f"round {round_index + 1}/{opts.rounds} {'/'.join(map(str, case))}: "
                    f"{result['cpu_us_per_fetch']} µs CPU per FETCH",
                    file=sys.stderr,
                    flush=True,
                )
        cases = [median_round(rounds[case]) for case in plan]
        if opts.profiler != "none":
            profile = run_case(
                opts, server.url, server.pid, ("locust", first, "pooled", opts.user_counts[-1], 0.0), opts.profiler
            )
    except BenchmarkError as exc:
        print(f"mark_client: {exc}", file=sys.stderr)
        return 1
    finally:
        server.stop()
        if anchor is not None:
            anchor.stop()
    doc = {
        "benchmark": "mark_client",
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "settings": {
            "duration_s": opts.duration,
            "warmup_s": opts.warmup,
            "users": opts.user_counts,
            "rounds": opts.rounds,
            "engines": opts.engine_names,
            "server_engine": opts.server_engine,
            "scaling_users": opts.scaling_counts,
            "scaling_pace": opts.scaling_pace,
            "corpus": opts.corpus,
            "server_clock": CLOCK,
        },
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            **{name: _metadata.version(name) for name in ("aioquic", "qh3", "locust", "gevent")},
        },
        "load_average": [round(value, 2) for value in os.getloadavg()],
        "goals": GOALS,
        "cases": cases,
        "ratios": ratios(cases),
        "profile": profile.pop("profile", None) if profile else None,
        "profile_case": profile,
    }
    print(render(doc))
    print(f"\nwritten to {write_json(opts.out, doc)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
