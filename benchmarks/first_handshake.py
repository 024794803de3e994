"""The first QUIC handshake of a fresh process against its later ones, with the crypto warm-up and without it.

A process's first key pair sets up the QUIC engine's crypto library; ``swarmgauge.quic.settings.warm_crypto`` does
that when the client configuration is built, before any handshake is timed. Per round, two fresh processes (one with
the warm-up, one with it switched off, in alternating order) each build a ``MarkClient`` and time ``--handshakes``
handshakes against one embedded Mark server. Prints each variant's median first and later handshake and writes
JSON with the load average. Figures only.

    python -m benchmarks.first_handshake [--rounds 5] [--handshakes 4] [--engine qh3] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from swarmgauge.files import write_json

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "first_handshake.json"
VARIANTS = ("warm", "cold")


def run_child(url: str, engine: str, handshakes: int, warm: bool) -> list[float]:
    """In this (fresh) process: ``handshakes`` handshakes in ms, each on a new client; ``warm=False`` skips the
    warm-up, as the code before it did."""
    from gevent import monkey

    monkey.patch_all()
    from swarmgauge.quic import settings
    from swarmgauge.users.mark_client import MarkClient

    if not warm:
        settings.warm_crypto = lambda quic_engine: None  # type: ignore[assignment]  # the code before the warm-up
    seconds = []
    for _ in range(handshakes):
        client = MarkClient(url, insecure=True, quic_engine=engine)
        try:
            seconds.append(client.connect() * 1000.0)
        finally:
            client.close()
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--handshakes", type=int, default=4)
    parser.add_argument("--engine", default="qh3", choices=("qh3", "aioquic"))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if not 1 <= opts.rounds <= 50 or not 2 <= opts.handshakes <= 50:
        print("first_handshake: --rounds must be 1..50 and --handshakes 2..50", file=sys.stderr)
        return 2
    if opts.child:
        print("RESULT " + json.dumps(run_child(opts.url, opts.engine, opts.handshakes, opts.child == "warm")))
        return 0
    from swarmgauge.targets.launch import child_env, launch_target

    found: dict[str, list[list[float]]] = {variant: [] for variant in VARIANTS}
    with launch_target("mark", ["--port", "0", "--seed-corpus", "20", "--quic-engine", opts.engine]) as server:
        for round_no in range(opts.rounds):
            order = VARIANTS if round_no % 2 == 0 else VARIANTS[::-1]
            for variant in order:
                command = [sys.executable, "-m", "benchmarks.first_handshake", "--child", variant, "--url", server.url]
                command += ["--engine", opts.engine, "--handshakes", str(opts.handshakes)]
                done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=child_env(), timeout=120)
                lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
                if done.returncode != 0 or not lines:
                    print(f"first_handshake: {variant} child failed: {done.stderr.strip()[-400:]}", file=sys.stderr)
                    return 1
                found[variant].append(json.loads(lines[-1][len("RESULT ") :]))
    doc: dict[str, Any] = {"benchmark": "first_handshake", "engine": opts.engine, "rounds": opts.rounds}
    for variant, runs in found.items():
        doc[variant] = {
            "first_ms_median": round(statistics.median(run[0] for run in runs), 2),
            "later_ms_median": round(statistics.median(ms for run in runs for ms in run[1:]), 2),
            "runs_ms": [[round(ms, 2) for ms in run] for run in runs],
        }
        print(
            f"{variant:5}: first handshake p50 {doc[variant]['first_ms_median']:8.2f} ms, "
            f"later ones {doc[variant]['later_ms_median']:6.2f} ms"
        )
    doc["load_average"] = [round(value, 2) for value in os.getloadavg()]
    doc["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    print(f"load average {doc['load_average']}; written to {opts.out}")
    write_json(opts.out, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
