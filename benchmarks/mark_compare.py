"""Generator CPU per Mark FETCH of two source trees side by side: the same ``mark_client`` locust cases of a baseline
checkout and of this one, run alternately against one reference server, so a shared machine's load falls on both.

``python -m benchmarks.mark_compare --baseline DIR [--cases qh3/pooled/1,qh3/pooled/16,qh3/fresh/1,qh3/paced/1]
[--rounds 3] [--duration 5] [--warmup 2] [--servers one|each] [--out benchmarks/results/mark_compare.json]``

``DIR`` is another commit's tree (``git worktree add`` or ``git archive COMMIT | tar -x -C DIR``); each case runs as
``python -m benchmarks.mark_client --child locust`` from that tree with it first on ``PYTHONPATH``. A case is
``ENGINE/POLICY/USERS`` with POLICY ``pooled``, ``fresh`` or ``paced`` (pooled users paced together to
``--pace`` FETCH/s). Each case reports its median round per tree and new/baseline. Figures only: nothing asserts.
``--servers one`` (the default) runs one reference server from this tree for both trees (a client change);
``--servers each`` runs each tree's cases against a server run from that tree (a change of the server itself).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.mark_client import child_command, read_result
from benchmarks.mark_client_cases import CLOCK, ROOT, BenchmarkError
from benchmarks.mark_receive_passes import launch_server_of
from swarmgauge.errors import UsageError
from swarmgauge.files import write_json
from swarmgauge.quic.engine import ENGINES

DEFAULT_CASES = "qh3/pooled/1,qh3/pooled/16,qh3/fresh/1,qh3/paced/1,qh3/paced/64"
POLICIES = ("pooled", "fresh", "paced")
SERVERS = ("one", "each")


def parse_case(text: str) -> tuple[str, str, int]:
    engine, _, rest = text.strip().partition("/")
    policy, _, users = rest.partition("/")
    if engine not in ENGINES or policy not in POLICIES or not users.isdigit() or int(users) < 1:
        raise UsageError(f"a case is ENGINE/POLICY/USERS ({'|'.join(ENGINES)}, {'|'.join(POLICIES)}), not {text!r}")
    return engine, policy, int(users)


def parse_options(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mark_compare", description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="the other source tree")
    parser.add_argument("--cases", default=DEFAULT_CASES, help="ENGINE/POLICY/USERS, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--pace", type=float, default=160.0, help="FETCH/s of a paced case's users together")
    parser.add_argument("--servers", choices=SERVERS, default="one", help="one server from this tree, or each tree's")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "mark_compare.json")
    opts = parser.parse_args(argv)
    opts.case_list = [parse_case(text) for text in opts.cases.split(",") if text.strip()]
    if not (opts.baseline / "benchmarks" / "mark_client.py").is_file():
        raise UsageError(f"{opts.baseline} is not a swarmgauge tree with benchmarks/mark_client.py")
    if not opts.case_list or opts.rounds < 1 or not opts.duration > 0 or opts.warmup < 0 or not opts.pace > 0:
        raise UsageError("give at least one case, --rounds >= 1, --duration > 0, --warmup >= 0 and --pace > 0")
    return opts


def run_case(opts: argparse.Namespace, tree: Path, url: str, server_pid: int, case: tuple[str, str, int]) -> Any:
    engine, policy, users = case
    command = child_command(
        client="locust",
        engine=engine,
        policy="fresh" if policy == "fresh" else "pooled",
        users=users,
        url=url,
        server_pid=server_pid,
        duration=opts.duration,
        warmup=opts.warmup,
        pace=opts.pace if policy == "paced" else 0.0,
    )
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONUNBUFFERED": "1"}
    what = f"{'/'.join(map(str, case))} in {tree}"
    try:
        done = subprocess.run(
            command, cwd=str(tree), env=env, capture_output=True, text=True, timeout=opts.warmup + opts.duration + 150
        )
    except subprocess.TimeoutExpired:
        raise BenchmarkError(f"{what} did not finish") from None
    return read_result(done, what)


def summary(rows: dict[str, dict[str, list[float]]]) -> list[dict[str, Any]]:
    """Per case: each tree's median round of CPU µs per FETCH, every round, and new over baseline."""
    out = []
    for case, trees in rows.items():
        baseline, new = trees.get("baseline", []), trees.get("new", [])
        if not baseline or not new:
            continue
        b, n = statistics.median(baseline), statistics.median(new)
        out.append({"case": case, "baseline": b, "new": n, "new_over_baseline": round(n / b, 2), "rounds": trees})
    return out


def render(table: list[dict[str, Any]]) -> str:
    lines = ["| case | baseline µs/FETCH | new µs/FETCH | new/baseline | baseline rounds | new rounds |"]
    lines.append("|---|---|---|---|---|---|")
    for row in table:
        rounds = row["rounds"]
        lines.append(
            f"| {row['case']} | {row['baseline']:.1f} | {row['new']:.1f} | {row['new_over_baseline']:.2f} | "
            + " | ".join(", ".join(f"{v:g}" for v in rounds[tree]) for tree in ("baseline", "new"))
            + " |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    try:
        opts = parse_options(argv)
    except UsageError as exc:
        print(f"mark_compare: {exc}", file=sys.stderr)
        return 2
    from swarmgauge.targets.launch import launch_target

    trees = {"baseline": opts.baseline.resolve(), "new": ROOT}
    args = ["--port", "0", "--seed-corpus", "300", "--clock", CLOCK]
    servers: dict[str, Any] = {}
    rows: dict[str, dict[str, list[float]]] = {}
    try:
        one = servers["one"] = launch_target("mark", args) if opts.servers == "one" else None
        for label, tree in trees.items():
            servers[label] = one or launch_server_of(tree, args)
        for round_index in range(opts.rounds):
            for case in opts.case_list:
                name = "/".join(map(str, case))
                for label, tree in trees.items():
                    server = servers[label]
                    result = run_case(opts, tree, server.url, server.pid, case)
                    rows.setdefault(name, {}).setdefault(label, []).append(result["cpu_us_per_fetch"])
                    if opts.servers == "each" and result.get("server_cpu_us_per_fetch") is not None:
                        server_row = rows.setdefault(f"{name} server", {}).setdefault(label, [])
                        server_row.append(result["server_cpu_us_per_fetch"])
                    print(f"round {round_index + 1} {name} {label}: {result['cpu_us_per_fetch']} µs", file=sys.stderr)
    except BenchmarkError as exc:
        print(f"mark_compare: {exc}", file=sys.stderr)
        return 1
    finally:
        for server in {id(server): server for server in servers.values() if server is not None}.values():
            server.stop()
    table = summary(rows)
    doc = {
        "benchmark": "mark_compare",
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "baseline": str(opts.baseline),
        "settings": {
            "rounds": opts.rounds,
            "duration_s": opts.duration,
            "warmup_s": opts.warmup,
            "pace": opts.pace,
            "servers": opts.servers,
        },
        "load_average": [round(value, 2) for value in os.getloadavg()],
        "cases": table,
    }
    print(render(table))
    print(f"\nwritten to {write_json(opts.out, doc)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
