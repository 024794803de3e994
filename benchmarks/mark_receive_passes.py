"""Receive passes per Mark FETCH: how often the QUIC driver wakes to read its socket per answer, and the reads and
datagrams behind them, for pooled closed-loop users on real UDP against the reference server; this tree and a
baseline tree side by side, in alternating rounds against one server.

``python -m benchmarks.mark_receive_passes [--baseline DIR] [--users 16] [--rounds 3] [--duration 4] [--warmup 1]
[--corpus 300] [--servers one|each] [--out benchmarks/results/mark_receive_passes.json]``

Counts, not time: each case runs in a child process with its tree first on ``PYTHONPATH`` (``DIR`` is another
commit's tree, e.g. ``git archive COMMIT | tar -x -C DIR``), and a subclass of ``UdpTransport`` under ``MarkClient``
counts the readable callbacks (passes), the reads and the datagrams over the steady window. The CPU per FETCH is
printed beside them; ``benchmarks/mark_client`` (against a FastHttpUser GET) and ``benchmarks/mark_compare`` (two
trees under Locust) are the figures of record. Nothing here asserts. ``--servers one`` (the default) runs one
reference server from this tree for both trees' clients (a client change); ``--servers each`` runs each tree's
clients against a server run from that tree (a change of the reference server itself, as issue 34's).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CLOCK = "2026-01-01T00:00:00Z"
SERVERS = ("one", "each")
FIGURES = (
    "passes_per_fetch",
    "reads_per_fetch",
    "later_reads_with_data_per_fetch",
    "datagrams_per_fetch",
    "cpu_us_per_fetch",
)


def measure(url: str, users: int, duration: float, warmup: float, corpus: int) -> dict[str, Any]:
    """One closed-loop run of ``users`` pooled clients in this process; the counts over the window after ``warmup``."""
    import gevent

    import swarmgauge
    from swarmgauge.quic.transport import UdpTransport
    from swarmgauge.targets.mark.seed import corpus_paths
    from swarmgauge.users.mark_client import MarkClient

    counts = {"passes": 0, "reads": 0, "datagrams": 0, "fetches": 0, "later_reads_with_data": 0}
    reads_this_pass = [0]

    class CountingTransport(UdpTransport):
        def drain(self, *one_flush: bool) -> list[bytes]:  # a baseline tree's driver may pass no argument
            received = super().drain(*one_flush)
            counts["reads"] += 1
            counts["datagrams"] += len(received)
            reads_this_pass[0] += 1
            if reads_this_pass[0] > 1 and received:  # a read after the pass's first one found the answer's rest
                counts["later_reads_with_data"] += 1
            return received

        def set_on_readable(self, callback: Any) -> None:
            def counted() -> None:
                counts["passes"] += 1
                reads_this_pass[0] = 0
                callback()

            super().set_on_readable(None if callback is None else counted)

    paths = list(corpus_paths(corpus))
    running = [True]

    def user(seed: int) -> None:
        rng = random.Random(seed)
        client = MarkClient(url, insecure=True, transport_factory=CountingTransport.open)
        client.connect()
        deadline = time.monotonic() + warmup + duration + 30  # bounded, whatever the window does
        while running[0] and time.monotonic() < deadline:
            client.fetch(rng.choice(paths))
            counts["fetches"] += 1
        client.close()

    greenlets = [gevent.spawn(user, seed) for seed in range(users)]
    gevent.sleep(warmup)
    before, cpu = dict(counts), time.process_time()
    gevent.sleep(duration)
    after, cpu = dict(counts), time.process_time() - cpu
    running[0] = False
    gevent.joinall(greenlets, timeout=30, raise_error=True)
    fetches = max(1, after["fetches"] - before["fetches"])
    return {
        "fetches": fetches,
        "passes_per_fetch": round((after["passes"] - before["passes"]) / fetches, 3),
        "reads_per_fetch": round((after["reads"] - before["reads"]) / fetches, 3),
        "datagrams_per_fetch": round((after["datagrams"] - before["datagrams"]) / fetches, 3),
        "later_reads_with_data_per_fetch": round(
            (after["later_reads_with_data"] - before["later_reads_with_data"]) / fetches, 3
        ),
        "cpu_us_per_fetch": round(cpu / fetches * 1e6, 1),
        "tree": str(Path(swarmgauge.__file__).parents[1]),  # which tree the child ran
    }


def launch_server_of(tree: Path, args: list[str]) -> Any:
    """A reference server run from ``tree``: first on ``PYTHONPATH`` and its working directory (``python -m`` puts
    the working directory ahead of ``PYTHONPATH``, so from this tree's directory this tree's server would run)."""
    from swarmgauge.targets.launch import launch_target

    with contextlib.chdir(tree):
        return launch_target("mark", args, env={"PYTHONPATH": str(tree)})


def run_child(tree: Path, url: str, opts: argparse.Namespace) -> dict[str, Any]:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", url, "--users", str(opts.users)]
    command += ["--duration", str(opts.duration), "--warmup", str(opts.warmup), "--corpus", str(opts.corpus)]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        command, cwd=str(tree), env=env, capture_output=True, text=True, timeout=opts.warmup + opts.duration + 90
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"mark_receive_passes: the case in {tree} failed: {done.stderr.strip()[-800:]}")
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    return {**result, "load_average": round(os.getloadavg()[0], 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.mark_receive_passes", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--baseline", type=Path, help="another tree, measured in the rounds between this one's")
    parser.add_argument("--users", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=4.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--corpus", type=int, default=300)
    parser.add_argument("--servers", choices=SERVERS, default="one", help="one server from this tree, or each tree's")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "mark_receive_passes.json")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.users < 1 or opts.rounds < 1 or not opts.duration > 0 or opts.warmup < 0 or opts.corpus < 1:
        print("mark_receive_passes: --users, --rounds, --corpus >= 1, --duration > 0, --warmup >= 0", file=sys.stderr)
        return 2
    if opts.baseline is not None and not (opts.baseline / "swarmgauge" / "quic" / "transport.py").is_file():
        print(f"mark_receive_passes: {opts.baseline} is not a swarmgauge tree", file=sys.stderr)
        return 2
    if opts.child:
        print("RESULT " + json.dumps(measure(opts.child, opts.users, opts.duration, opts.warmup, opts.corpus)))
        return 0
    from swarmgauge.files import write_json
    from swarmgauge.targets.launch import launch_target

    trees = {"this": ROOT, **({"baseline": opts.baseline.resolve()} if opts.baseline is not None else {})}
    rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    args = ["--port", "0", "--seed-corpus", str(opts.corpus), "--clock", CLOCK, "--quic-engine", "qh3"]
    with contextlib.ExitStack() as stack:
        one = stack.enter_context(launch_target("mark", args)) if opts.servers == "one" else None
        servers = {name: one or stack.enter_context(launch_server_of(tree, args)) for name, tree in trees.items()}
        for index in range(opts.rounds):
            for name, tree in list(trees.items()) if index % 2 == 0 else list(trees.items())[::-1]:
                rounds[name].append(run_child(tree, servers[name].url, opts))
                print(f"round {index + 1} {name}: {rounds[name][-1]}", file=sys.stderr, flush=True)
    medians = {name: {key: statistics.median(r[key] for r in runs) for key in FIGURES} for name, runs in rounds.items()}
    doc = {
        "benchmark": "mark_receive_passes",
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "settings": {k: v for k, v in vars(opts).items() if k not in ("child", "out", "baseline")},
        "trees": {name: str(tree) for name, tree in trees.items()},
        "load_average": [round(value, 2) for value in os.getloadavg()],
        "medians": medians,
        "rounds": rounds,
    }
    print(json.dumps(medians, indent=1))
    print(f"written to {write_json(opts.out, doc)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
