"""The MDK stand-in's own CPU per saturation read: N closed-loop readers (telemetry of a random device, kept-open
connections) against a fleet with the demo's settings (``cli/demo_mdk.py``: ``--worker-read-us 1040``,
``--query-concurrency 123``, no health ping in the window) for a while, then the CPU seconds each stand-in process
spent per completed read, the reads/s and the load average. The readers are one asyncio process of raw HTTP/1.1
(its CPU is reported too), far lighter than Locust's, so the stand-in, not the generator, is what is measured.
On 2 cores the stand-in's CPU a read is what makes the page's saturation rows machine-bound. Figures only; prints
and writes the JSON.

    python -m benchmarks.mdk_read_cpu [--fleet 2000x1] [--readers 1000] [--seconds 10] [--out FILE]
    python -m benchmarks.mdk_read_cpu --starts fork,spawn --repeats 3   # side by side, alternating

``--starts``: how the components start, ``spawn`` (a fresh interpreter each) or ``fork`` (from this process once it
has imported them, as ``swarmgauge target mdk`` does); with both, each repeat runs one of each, in turn.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from swarmgauge.files import write_json
from swarmgauge.targets.mdk.stack import MDKStack

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "mdk_read_cpu.json"
SETTINGS = {"worker_read_us": 1040.0, "query_concurrency": 123, "health_phase_s": 600.0}
#: the readers' first reads all start at once and answer together: counted from here on, each read is one served
WARMUP_S = 2.0


class _Reader(asyncio.Protocol):
    """One kept-open connection sending a telemetry read as soon as the last one's body is in."""

    def __init__(self, host: str, device_ids: list[str], tally: dict[str, int]) -> None:
        self.host, self.device_ids, self.tally = host, device_ids, tally
        self.buffer = b""
        self.transport: asyncio.Transport | None = None
        self.lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self._send()

    def _send(self) -> None:
        assert self.transport is not None
        device = random.choice(self.device_ids)
        self.transport.write(
            f"GET /api/fleet/device/{device}/telemetry HTTP/1.1\r\nHost: {self.host}\r\n\r\n".encode("latin-1")
        )

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            head_end = self.buffer.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = self.buffer[:head_end].decode("latin-1")
            length = 0
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            end = head_end + 4 + length
            if len(self.buffer) < end:
                return
            status = head.split(" ", 2)[1]
            self.buffer = self.buffer[end:]
            self.tally[status] = self.tally.get(status, 0) + 1
            self.tally["reads"] += 1
            self._send()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_result(None)


async def _read_for(url_host: str, port: int, device_ids: list[str], readers: int, seconds: float, on_mark) -> dict:
    loop = asyncio.get_running_loop()
    tally: dict[str, int] = {"reads": 0}
    transports = []
    for _ in range(readers):
        transport, _ = await loop.create_connection(lambda: _Reader(url_host, device_ids, tally), url_host, port)
        transports.append(transport)
    await asyncio.sleep(WARMUP_S)
    counted_from = tally["reads"]
    on_mark("start")
    began = time.monotonic()
    await asyncio.sleep(seconds)
    took = time.monotonic() - began
    counted = tally["reads"] - counted_from
    on_mark("end")
    for transport in transports:
        transport.close()
    return {"reads": counted, "seconds": took, "statuses": {k: v for k, v in tally.items() if k != "reads"}}


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def _profile(processes: dict[str, psutil.Process], seconds: float, folder: Path) -> list[subprocess.Popen]:
    """py-spy on each stand-in process over the window, as collapsed stacks (``<folder>/<component>.txt``)."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    folder.mkdir(parents=True, exist_ok=True)
    return [
        subprocess.Popen(
            [spy, "record", "--pid", str(p.pid), "--duration", f"{seconds:.0f}", "--rate", "250", "--nonblocking"]
            + ["--format", "raw", "--output", str(folder / f"{c}.txt")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for c, p in processes.items()
        if c != "generator"
    ]


def measure(
    devices: int, workers: int, readers: int, seconds: float, profile: Path | None = None, *, fork: bool = False
) -> dict[str, Any]:
    stack = MDKStack(devices=devices, workers=workers, fork=fork, **SETTINGS)
    stack.start()
    try:
        processes = {c: psutil.Process(pid) for c in stack.components if (pid := stack.pid(c)) is not None}
        processes["generator"] = psutil.Process(os.getpid())
        marks: dict[str, dict[str, float]] = {}

        spies: list[subprocess.Popen] = []

        def on_mark(name: str) -> None:
            marks[name] = {c: _cpu(p) for c, p in processes.items()}
            if name == "start" and profile is not None:
                spies.extend(_profile(processes, seconds, profile))

        outcome = asyncio.run(
            _read_for(stack.plan.host, stack.plan.gateway_port, stack.device_ids(), readers, seconds, on_mark)
        )
        for spy in spies:
            spy.wait(30)
    finally:
        stack.stop()
    used = {c: marks["end"][c] - marks["start"][c] for c in marks["end"]}
    reads = outcome["reads"]
    stand_in = sum(v for c, v in used.items() if c != "generator")
    return {
        "fleet": f"{devices}x{workers}",
        "start": "fork" if fork else "spawn",
        "readers": readers,
        "seconds": round(outcome["seconds"], 2),
        "reads": reads,
        "reads_per_s": round(reads / outcome["seconds"], 1),
        "statuses": outcome["statuses"],
        "cpu_s": {c: round(v, 2) for c, v in used.items()},
        "cpu_ms_per_read": {c: round(1000 * v / reads, 3) for c, v in used.items()} if reads else {},
        "stand_in_ms_per_read": round(1000 * stand_in / reads, 3) if reads else None,
        "stand_in_cores": round(stand_in / outcome["seconds"], 2),
        "load_avg": round(os.getloadavg()[0], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mdk_read_cpu", description=__doc__.splitlines()[0])
    parser.add_argument("--fleet", default="2000x1", help="DEVICESxWORKERS")
    parser.add_argument("--readers", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=10.0, help="the window measured, after the warm-up")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--profile", type=Path, help="py-spy each stand-in process into this folder (its CPU adds)")
    parser.add_argument("--starts", default="spawn", help="spawn, fork, or both in turn: fork,spawn")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each start")
    args = parser.parse_args()
    devices, workers = (int(part) for part in args.fleet.split("x"))
    starts = [part.strip() for part in args.starts.split(",") if part.strip()]
    if not starts or set(starts) - {"fork", "spawn"} or not 1 <= args.repeats <= 20:
        parser.error("--starts takes fork and/or spawn; --repeats 1 to 20")
    rows = []
    for _ in range(args.repeats):
        for start in starts:
            row = measure(devices, workers, args.readers, args.seconds, args.profile, fork=start == "fork")
            rows.append(row)
            per_read = ", ".join(f"{c} {ms:.3f}" for c, ms in row["cpu_ms_per_read"].items())
            print(
                f"{row['fleet']} ({start}) with {row['readers']} readers: {row['reads_per_s']:.0f} reads/s over "
                f"{row['seconds']:.1f} s, stand-in {row['stand_in_ms_per_read']} ms of CPU a read "
                f"({row['stand_in_cores']:.2f} cores); per read, ms: {per_read}; statuses {row['statuses']}; "
                f"load {row['load_avg']:.1f}",
                flush=True,
            )
    summary = {
        start: statistics.median(r["stand_in_ms_per_read"] for r in rows if r["start"] == start and r["reads"])
        for start in starts
        if any(r["start"] == start and r["reads"] for r in rows)
    }
    if len(summary) > 1:
        shown = ", ".join(f"{start} {ms:.3f}" for start, ms in summary.items())
        print(f"median stand-in ms of CPU a read over {args.repeats} run(s) each: {shown}")
    out = rows[0] if len(rows) == 1 else {"runs": rows, "median_stand_in_ms_per_read": summary}
    print(f"written {write_json(args.out, out)}")


if __name__ == "__main__":
    main()
