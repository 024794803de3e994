"""What the resource sampler costs: CPU per sample for each source kind, and the share of a core at an interval.

Each source reads a real input on this machine: ``psutil`` a running brain stand-in, ``prom`` that stand-in's
``/metrics`` (prometheus-client's own exposition), ``pprof`` and ``expvar`` a local HTTP server answering in Go's
formats, ``gctrace`` a log that grows by Go 1.2x ``gc`` lines between samples, ``cgroup`` a cgroup v2 directory (the
machine's own when it has one, else a tree with the kernel's file formats). The target: under 1 % of a core at the
default 5 s interval with five sources.

    python -m benchmarks.sampler [--samples 200] [--interval 5] [--out benchmarks/results/sampler.json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from swarmgauge.files import write_json
from swarmgauge.listeners.sources import SourceError, parse_source
from swarmgauge.targets.launch import launch_target

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "sampler.json"
GC_LINE = (
    "gc {n} @{t:.3f}s 1%: 0.018+1.2+0.003 ms clock, 0.14+0.5/1.0/0+0.024 ms cpu, 40->41->20 MB, "
    "42 MB goal, 0 MB stacks, 0 MB globals, 8 P\n"
)
MEMSTATS = "".join(
    f"# {k} = {v}\n"
    for k, v in (
        ("Alloc", 2375120),
        ("Sys", 14001160),
        ("HeapAlloc", 2375120),
        ("HeapSys", 7831552),
        ("HeapInuse", 3375104),
        ("NumGC", 2),
    )
)
PPROF = (
    "heap profile: 1: 1048576 [1: 1048576] @ heap/1048576\n1: 1048576 [1: 1048576] @ 0x43e5a5\n\n\n"
    "# runtime.MemStats\n" + MEMSTATS
)
EXPVAR = json.dumps(
    {
        "memstats": {
            "Alloc": 2375120,
            "Sys": 14001160,
            "HeapAlloc": 2375120,
            "HeapInuse": 3375104,
            "HeapSys": 7831552,
            "NumGC": 2,
        }
    }
)


class GoDebug(BaseHTTPRequestHandler):
    def do_GET(self):
        body = (PPROF if self.path.startswith("/debug/pprof/heap") else EXPVAR).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def cgroup_dir(scratch: Path) -> Path:
    """The machine's cgroup v2 root when it is one, else a tree with the same files and formats."""
    real = Path("/sys/fs/cgroup")
    if (real / "memory.current").exists() and (real / "memory.stat").exists():
        return real
    tree = scratch / "cgroup"
    tree.mkdir()
    (tree / "memory.current").write_text("1879048192\n")
    (tree / "memory.stat").write_text(
        "anon 1610612736\nfile 268435456\ninactive_file 134217728\nactive_file 134217728\nslab 8388608\n"
    )
    (tree / "cpu.stat").write_text("usage_usec 123456789\nuser_usec 100000000\nsystem_usec 23456789\n")
    (tree / "memory.max").write_text("max\n")
    return tree


def cost_per_sample(spec: str, samples: int, between=None) -> dict:
    """Median-free, plain average: process CPU over ``samples`` polls of one source, in microseconds."""
    source = parse_source(spec)
    failures = 0
    source.sample()  # first poll may seed state (gctrace reads the tail, psutil primes cpu_percent)
    spent = 0.0
    for _ in range(samples):
        if between is not None:
            between()
        started = time.process_time()
        try:
            source.sample()
        except SourceError:
            failures += 1
        spent += time.process_time() - started
    return {
        "source": spec.split(":", 1)[0],
        "spec": spec,
        "samples": samples,
        "failures": failures,
        "cpu_us_per_sample": round(spent / samples * 1e6, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--interval", type=float, default=5.0, help="the sampler interval to judge the cost at")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="swarmgauge-sampler-"))
    go = ThreadingHTTPServer(("127.0.0.1", 0), GoDebug)
    threading.Thread(target=go.serve_forever, daemon=True).start()
    go_url = f"http://127.0.0.1:{go.server_address[1]}"
    log = scratch / "gctrace.log"
    log.write_text("".join(GC_LINE.format(n=n, t=n * 0.5) for n in range(1, 50)))
    counter = iter(range(50, 10**9))

    def grow_log() -> None:
        with log.open("a") as handle:
            n = next(counter)
            handle.write(GC_LINE.format(n=n, t=n * 0.5))

    brain = launch_target("brain", ["--port", "0"])
    try:
        cases = [
            cost_per_sample(f"psutil:pid={brain.pid}", args.samples),
            cost_per_sample(f"cgroup:{cgroup_dir(scratch)}", args.samples),
            cost_per_sample(f"gctrace:{log}", args.samples, between=grow_log),
            cost_per_sample(f"pprof:{go_url}/debug/pprof/heap?debug=1", args.samples),
            cost_per_sample(f"expvar:{go_url}/debug/vars", args.samples),
            cost_per_sample(f"prom:{brain.url}/metrics#process_resident_memory_bytes", args.samples),
        ]
    finally:
        brain.stop()
        go.shutdown()
    five = [c for c in cases if c["source"] != "expvar"]
    per_interval_us = sum(c["cpu_us_per_sample"] for c in five)
    share = per_interval_us / (args.interval * 1e6) * 100
    print(f"{'source':8} {'µs CPU / sample':>16} {'failures':>9}")
    for case in cases:
        print(f"{case['source']:8} {case['cpu_us_per_sample']:>16,.1f} {case['failures']:>9}")
    print(
        f"five sources (psutil, cgroup, gctrace, pprof, prom) at a {args.interval:g} s interval: "
        f"{per_interval_us / 1000:.2f} ms CPU per interval = {share:.3f} % of a core (target < 1 %)"
    )
    result = {
        "interval_s": args.interval,
        "cases": cases,
        "five_sources_cpu_ms_per_interval": per_interval_us / 1000,
        "five_sources_core_percent": share,
        "target_core_percent": 1.0,
    }
    print(f"written to {write_json(args.out, result, indent=1)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
