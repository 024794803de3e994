"""What one pooled Mark FETCH does in the generator, counted, and its CPU against a baseline tree's run at the same
moment: pooled ``MarkClient`` users closed-loop on real UDP against the reference server.

``python -m benchmarks.mark_fetch_path [--baseline DIR] [--users 16] [--fetches 300] [--rounds 6] [--corpus 300]
[--out benchmarks/results/mark_fetch_path.json]``

Counts (this tree, one run, through public seams only): readable callbacks, drains, datagrams in and out, greenlet
switches and the engine's ``next_timer``/``datagrams_to_send``/``receive_datagrams`` calls, each per FETCH. CPU: in
each round this tree's client and the baseline's (``DIR``, e.g. ``git worktree add --detach DIR main``) run at the
same time, each in its own process against the same server, so a shared machine's load falls on both alike; each
reports its process CPU per FETCH, and the round its ratio. ``mark_compare`` (two trees under Locust, one after the
other) and ``mark_client`` (against a FastHttpUser GET) are the figures of record; nothing here asserts.
"""

from __future__ import annotations

import argparse
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
ENGINE_CALLS = ("next_timer", "datagrams_to_send", "receive_datagrams")


def measure(url: str, users: int, fetches: int, corpus: int, count: bool) -> dict[str, Any]:
    """``users`` pooled clients, each ``fetches`` FETCHes after its handshake; CPU (and, if ``count``, the counts)
    over the FETCHes only."""
    import gevent
    import gevent.event
    import greenlet

    from swarmgauge.quic.engine import engine
    from swarmgauge.quic.transport import UdpTransport
    from swarmgauge.targets.mark.seed import corpus_paths
    from swarmgauge.users.mark_client import MarkClient

    counts = dict.fromkeys(("readable", "drains", "datagrams_in", "datagrams_out", "switches", *ENGINE_CALLS), 0)

    class CountingTransport(UdpTransport):
        def drain(self, *one_flush: bool) -> list[bytes]:  # a baseline tree's driver may pass no argument
            received = super().drain(*one_flush)
            counts["drains"] += 1
            counts["datagrams_in"] += len(received)
            return received

        def send(self, data: bytes) -> None:
            counts["datagrams_out"] += 1
            super().send(data)

        def set_on_readable(self, callback: Any) -> None:
            def counted() -> None:
                counts["readable"] += 1
                callback()

            super().set_on_readable(None if callback is None else counted)

    quic = engine("qh3")
    if count:
        for name in ENGINE_CALLS:
            method = getattr(quic, name)

            def counted_call(*args: Any, _method: Any = method, _name: str = name) -> Any:
                counts[_name] += 1
                return _method(*args)

            setattr(quic, name, counted_call)
    paths = list(corpus_paths(corpus))
    go = gevent.event.Event()
    done = [0]

    def user(seed: int) -> None:
        rng = random.Random(seed)
        client = MarkClient(url, insecure=True, transport_factory=CountingTransport.open if count else None)
        client.connect()
        go.wait(timeout=60)
        for _ in range(fetches):
            client.fetch(rng.choice(paths))
            done[0] += 1
        client.close()

    greenlets = [gevent.spawn(user, seed) for seed in range(users)]
    gevent.sleep(1.0)  # handshakes
    before = dict(counts)

    def switched(event: str, _args: Any) -> None:
        if event in ("switch", "throw"):
            counts["switches"] += 1

    if count:
        greenlet.settrace(switched)
    cpu = time.process_time()
    go.set()
    gevent.joinall(greenlets, timeout=120, raise_error=True)
    cpu = time.process_time() - cpu
    greenlet.settrace(None)
    total = max(1, done[0])
    result: dict[str, Any] = {"fetches": done[0], "cpu_us_per_fetch": round(cpu / total * 1e6, 1)}
    if count:
        result["per_fetch"] = {name: round((counts[name] - before[name]) / total, 3) for name in counts}
    return result


def child(tree: Path, url: str, opts: argparse.Namespace, count: bool) -> subprocess.Popen[str]:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", url, "--users", str(opts.users)]
    command += ["--fetches", str(opts.fetches), "--corpus", str(opts.corpus)] + (["--count"] if count else [])
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.Popen(command, cwd=str(tree), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def result_of(process: subprocess.Popen[str], tree: Path) -> dict[str, Any]:
    out, err = process.communicate(timeout=300)
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    if process.returncode != 0 or not lines:
        raise SystemExit(f"mark_fetch_path: the run in {tree} failed: {err.strip()[-800:]}")
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mark_fetch_path", description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", type=Path, help="another tree, run at the same time as this one each round")
    parser.add_argument("--users", type=int, default=16)
    parser.add_argument("--fetches", type=int, default=300, help="FETCHes per user and round")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--corpus", type=int, default=300)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "mark_fetch_path.json")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--count", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.users < 1 or opts.fetches < 1 or opts.rounds < 1 or opts.corpus < 1:
        print("mark_fetch_path: --users, --fetches, --rounds and --corpus must be >= 1", file=sys.stderr)
        return 2
    if opts.baseline is not None and not (opts.baseline / "swarmgauge" / "quic").is_dir():
        print(f"mark_fetch_path: {opts.baseline} is not a swarmgauge tree", file=sys.stderr)
        return 2
    if opts.child:
        print("RESULT " + json.dumps(measure(opts.child, opts.users, opts.fetches, opts.corpus, opts.count)))
        return 0
    from swarmgauge.files import write_json
    from swarmgauge.targets.launch import launch_target

    server = launch_target("mark", ["--port", "0", "--seed-corpus", str(opts.corpus), "--clock", CLOCK])
    try:
        counted = result_of(child(ROOT, server.url, opts, count=True), ROOT)
        print("per FETCH (this tree): " + ", ".join(f"{k} {v}" for k, v in counted["per_fetch"].items()))
        counted_baseline = None
        if opts.baseline is not None:
            counted_baseline = result_of(child(opts.baseline, server.url, opts, count=True), opts.baseline)
            print("per FETCH (baseline): " + ", ".join(f"{k} {v}" for k, v in counted_baseline["per_fetch"].items()))
        rounds = []
        for index in range(opts.rounds if opts.baseline is not None else 0):
            runs = {
                "this": child(ROOT, server.url, opts, False),
                "baseline": child(opts.baseline, server.url, opts, False),
            }
            figures = {name: result_of(process, ROOT)["cpu_us_per_fetch"] for name, process in runs.items()}
            figures["ratio"] = round(figures["this"] / figures["baseline"], 3)
            figures["load_average"] = round(os.getloadavg()[0], 2)
            rounds.append(figures)
            print(
                f"round {index + 1}: this {figures['this']} µs, baseline {figures['baseline']} µs per FETCH, "
                f"{figures['ratio']}x, load {figures['load_average']}"
            )
    finally:
        server.stop()
    summary: dict[str, Any] = {
        "benchmark": "mark_fetch_path",
        "settings": {k: v for k, v in vars(opts).items() if k in ("users", "fetches", "rounds", "corpus")},
        "trees": {"this": str(ROOT), "baseline": str(opts.baseline)},
        "counts_per_fetch": counted["per_fetch"],
        "counts_per_fetch_baseline": None if counted_baseline is None else counted_baseline["per_fetch"],
        "cpu_us_per_fetch_counted_run": counted["cpu_us_per_fetch"],
        "rounds": rounds,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    if rounds:
        summary["median_ratio"] = statistics.median(r["ratio"] for r in rounds)
        print(f"median ratio this/baseline: {summary['median_ratio']}")
    write_json(opts.out, summary)
    print(f"written to {opts.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
