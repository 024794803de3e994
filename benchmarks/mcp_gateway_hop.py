"""The MCP gateway's CPU per ``tools/call mark_fetch`` and the 1-worker throughput, per engine of its Mark hop.

``python -m benchmarks.mcp_gateway_hop [--cases qh3,aioquic] [--rounds 3] [--duration 8] [--warmup 2]
[--baseline-tree DIR] [--mark-args ARGS] [--out FILE]``

Why: the demarkus page's ``mark_fetch`` row at one worker (53 calls/s, p50 20 ms) came out at 0.74x here, and the
gateway (the ``mcp`` SDK's Streamable HTTP server plus its QUIC hop to the Mark server) spent ~3.9 ms of CPU a call.

One reference Mark server with the demo's bottleneck (``cli.demo_pages.MARK_BOTTLENECK``: the ~20 ms read the
page's one worker waits on; ``--mark-args ''`` for a bare server) serves every case. Per round, each case in turn
starts its own gateway (``--json-response``, as the demo's), and one client (``MCPClient``, the demo's MCPUser
client, in this process) calls ``mark_fetch`` of the corpus documents back to back; over the window after the
warm-up the gateway's CPU (user+sys), the Mark server's, the calls and their p50 are taken. A case is an engine name
(the gateway's ``--mark-quic-engine``), that with a variant of the gateway's options (``qh3-uvicornwrites``: a
response in uvicorn's own two writes), or ``main``: the gateway of the code in ``--baseline-tree`` (an export of
another commit, put first on the child's ``PYTHONPATH``), so the code before a change is measured in the same run.
Cases alternate within each round so that drift on the shared machine hits them alike; the table gives each case's
median over the rounds and its ratio to the first case. Figures only: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from gevent import monkey

monkey.patch_all()

import psutil  # noqa: E402

from swarmgauge.cli.demo_pages import MARK_BOTTLENECK  # noqa: E402
from swarmgauge.files import write_json  # noqa: E402
from swarmgauge.targets.launch import launch_target  # noqa: E402
from swarmgauge.targets.mark.seed import corpus_paths  # noqa: E402
from swarmgauge.targets.mcp_gateway import gateway_base_url  # noqa: E402
from swarmgauge.users.mcp_client import MCPClient  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "mcp_gateway_hop.json"
CORPUS = 300
#: ``ENGINE-VARIANT`` cases: the gateway's options of each variant (``qh3-uvicornwrites``: uvicorn's two writes)
VARIANTS = {"": [], "uvicornwrites": ["--http-writes", "uvicorn"]}
PAGE_ONE_WORKER_CALLS_PER_S = 53.0  # the demarkus page's MCP mark_fetch row at 1 worker
HEADER = (
    "case",
    "calls/s",
    "x page",
    "gateway CPU ms/call",
    "x first (paired)",
    "Mark CPU ms/call",
    "p50 ms",
    "UDP/call",
    "TCP/call",
    "failed",
)


def _cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def packets_sent() -> dict[str, int]:
    """The machine's UDP datagrams (IPv4 and IPv6) and TCP segments sent so far: per call, on a quiet machine, what
    the Mark hop and the HTTP side put on the loopback."""
    counts = {"udp": 0, "tcp": 0}
    lines = Path("/proc/net/snmp").read_text().splitlines()
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        table = dict(zip(names.split()[1:], values.split()[1:], strict=True))
        if names.startswith("Udp:"):
            counts["udp"] += int(table["OutDatagrams"])
        elif names.startswith("Tcp:"):
            counts["tcp"] += int(table["OutSegs"])
    for line in Path("/proc/net/snmp6").read_text().splitlines():
        name, _, value = line.partition(" ")
        if name == "Udp6OutDatagrams":
            counts["udp"] += int(value)
    return counts


def _profile(pid: int, seconds: float, output: Path) -> subprocess.Popen:
    """py-spy on the gateway over the window, as collapsed stacks (its sampling adds a little CPU to the figures)."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    output.parent.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [spy, "record", "--pid", str(pid), "--duration", f"{seconds:.0f}", "--rate", "250", "--nonblocking"]
        + ["--format", "raw", "--output", str(output)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def one_window(
    base_url: str, gateway_pid: int, mark_pid: int, warmup: float, duration: float, profile: Path | None = None
) -> dict[str, Any]:
    """One client calling mark_fetch back to back; the gateway's and the Mark server's CPU over the window."""
    docs = itertools.cycle(corpus_paths(CORPUS))
    client = MCPClient(base_url, timeout=10.0)
    client.open_session()
    gateway, mark = psutil.Process(gateway_pid), psutil.Process(mark_pid)
    ends = time.monotonic() + warmup
    while time.monotonic() < ends:
        client.call_tool("mark_fetch", {"url": next(docs)})
    calls = failed = 0
    latencies: list[float] = []
    load_before = os.getloadavg()[0]
    spy = None if profile is None else _profile(gateway_pid, duration, profile)
    gateway_cpu, mark_cpu, packets = _cpu_seconds(gateway), _cpu_seconds(mark), packets_sent()
    began = time.monotonic()
    while time.monotonic() - began < duration:
        sent = time.perf_counter()
        try:
            client.call_tool("mark_fetch", {"url": next(docs)})
        except Exception:  # noqa: BLE001 - a failed call is counted, the window goes on
            failed += 1
        latencies.append((time.perf_counter() - sent) * 1000.0)
        calls += 1
    wall = time.monotonic() - began
    gateway_cpu, mark_cpu = _cpu_seconds(gateway) - gateway_cpu, _cpu_seconds(mark) - mark_cpu
    sent_after = packets_sent()
    client.close()
    if spy is not None:
        spy.wait(30)
    return {
        "calls": calls,
        "failed": failed,
        "wall_s": wall,
        "calls_per_s": calls / wall,
        "gateway_cpu_ms_per_call": gateway_cpu / calls * 1000.0,
        "mark_cpu_ms_per_call": mark_cpu / calls * 1000.0,
        "p50_ms": statistics.median(latencies),
        "udp_datagrams_per_call": (sent_after["udp"] - packets["udp"]) / calls,
        "tcp_segments_per_call": (sent_after["tcp"] - packets["tcp"]) / calls,
        "load_1min": [load_before, os.getloadavg()[0]],
    }


def hop_engine(base_url: str) -> str | None:
    """The Mark hop's engine the gateway reports in ``/metrics`` (None: a gateway from before it reported one)."""
    with urllib.request.urlopen(base_url + "/metrics", timeout=5) as response:
        for line in response.read().decode().splitlines():
            if line.startswith('mcp_gateway_mark_quic_engine{engine="'):
                return line.split('"')[1]
    return None


def run_case(case: str, mark_url: str, mark_pid: int, opts: argparse.Namespace, round_number: int) -> dict[str, Any]:
    args = ["--mark", mark_url, "--json-response"]
    env = {"PYTHONSAFEPATH": "1"}  # the working directory (this clone) never shadows the tree the case asks for
    if case == "main":
        env["PYTHONPATH"] = os.pathsep.join(p for p in (opts.baseline_tree, os.environ.get("PYTHONPATH")) if p)
    else:
        engine_name, _, variant = case.partition("-")
        args += ["--mark-quic-engine", engine_name, *VARIANTS[variant]]
    gateway = launch_target("mcp", args, env=env, wait_for=("ready", "mark"))
    try:
        profile = None if opts.profile is None else opts.profile / f"{case}-round{round_number + 1}.txt"
        window = one_window(gateway_base_url(gateway.url), gateway.pid, mark_pid, opts.warmup, opts.duration, profile)
        return {"case": case, "hop_engine": hop_engine(gateway_base_url(gateway.url)), **window}
    finally:
        gateway.stop()


def median_rows(cases: list[str], windows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for case in cases:
        mine = [w for w in windows if w["case"] == case]
        row: dict[str, Any] = {"case": case, "rounds": len(mine), "failed": sum(w["failed"] for w in mine)}
        for key in (
            "calls_per_s",
            "gateway_cpu_ms_per_call",
            "mark_cpu_ms_per_call",
            "p50_ms",
            "udp_datagrams_per_call",
            "tcp_segments_per_call",
        ):
            row[key] = statistics.median(w[key] for w in mine)
            row[key + "_spread"] = [min(w[key] for w in mine), max(w[key] for w in mine)]
        rows.append(row)
    first = rows[0]
    by_round = {w["round"]: w for w in windows if w["case"] == first["case"]}
    for row in rows:
        # paired within each round: the machine's pace drifts between rounds more than the cases differ
        paired = [
            w["gateway_cpu_ms_per_call"] / by_round[w["round"]]["gateway_cpu_ms_per_call"]
            for w in windows
            if w["case"] == row["case"] and w["round"] in by_round
        ]
        row["gateway_cpu_over_first_per_round"] = paired
        row["gateway_cpu_over_first"] = statistics.median(paired)
        row["calls_per_s_over_first"] = row["calls_per_s"] / first["calls_per_s"]
        row["calls_per_s_over_page"] = row["calls_per_s"] / PAGE_ONE_WORKER_CALLS_PER_S
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "|".join("---" for _ in HEADER) + "|"]
    for row in rows:
        low, high = row["gateway_cpu_ms_per_call_spread"]
        cells = [
            row["case"],
            f"{row['calls_per_s']:.1f}",
            f"{row['calls_per_s_over_page']:.2f}",
            f"{row['gateway_cpu_ms_per_call']:.2f} ({low:.2f}-{high:.2f})",
            f"{row['gateway_cpu_over_first']:.2f}",
            f"{row['mark_cpu_ms_per_call']:.2f}",
            f"{row['p50_ms']:.2f}",
            f"{row['udp_datagrams_per_call']:.2f}",
            f"{row['tcp_segments_per_call']:.2f}",
            str(row["failed"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mcp_gateway_hop", description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="aioquic,qh3", help="engines of the Mark hop, and 'main' (--baseline-tree)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=8.0, help="measured seconds per case and round")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds per case and round before measuring")
    parser.add_argument("--baseline-tree", default="", help="the tree whose gateway case 'main' runs")
    parser.add_argument("--mark-args", default=MARK_BOTTLENECK, help="the Mark server's simulation options")
    parser.add_argument("--profile", type=Path, help="py-spy the gateway of each window into this folder")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="JSON result file")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(list(sys.argv[1:] if argv is None else argv))
    cases = [c.strip() for c in opts.cases.split(",") if c.strip()]
    if not cases or ("main" in cases and not opts.baseline_tree):
        print("mcp_gateway_hop: give --cases, and --baseline-tree for 'main'", file=sys.stderr)
        return 2
    mark = launch_target("mark", ["--port", "0", "--seed-corpus", str(CORPUS), *opts.mark_args.split()])
    windows = []
    try:
        for round_number in range(opts.rounds):
            for case in cases:
                window = run_case(case, mark.url, mark.pid, opts, round_number)
                window["round"] = round_number
                windows.append(window)
                print(
                    f"[round {round_number + 1} {case} (hop {window['hop_engine'] or 'aioquic, before the option'})] "
                    f"{window['calls_per_s']:.1f} calls/s, gateway "
                    f"{window['gateway_cpu_ms_per_call']:.2f} ms CPU a call, p50 {window['p50_ms']:.2f} ms, "
                    f"load {window['load_1min'][0]:.2f}-{window['load_1min'][1]:.2f}",
                    flush=True,
                )
    finally:
        mark.stop()
    rows = median_rows(cases, windows)
    print(table(rows))
    doc = {
        "settings": {
            "cases": cases,
            "rounds": opts.rounds,
            "duration_s": opts.duration,
            "warmup_s": opts.warmup,
            "mark_args": opts.mark_args,
            "baseline_tree": opts.baseline_tree or None,
            "profiled": opts.profile is not None,
            "page_one_worker_calls_per_s": PAGE_ONE_WORKER_CALLS_PER_S,
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
        },
        "rows": rows,
        "windows": windows,
    }
    write_json(Path(opts.out), doc)
    print(f"wrote {opts.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
