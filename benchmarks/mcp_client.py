"""Generator CPU per MCP ``tools/call``: MCPUser, the official SDK client, and bare HTTP POSTs of the same bytes.

``python -m benchmarks.mcp_client [--duration 10] [--warmup 2] [--mode sse|json] [--out FILE]``

One gateway (``swarmgauge target mcp`` with its reference Mark server) serves every case; each case is one
client making ``tools/call mark_fetch`` of the same document back to back, in its own child process (gevent's
monkey-patching and asyncio never meet), and reports process CPU (user+sys) and completed calls over the steady
window after a warm-up:

- ``mcpuser``: ``users.mcp_user.MCPUser`` (``MCPClient`` on ``FastHttpSession``) under a Locust local runner;
- ``sdk``: the ``mcp`` package's ``ClientSession`` over ``streamable_http_client`` (asyncio, httpx);
- ``bare-fasthttp``: a ``FastHttpUser`` POSTing the bytes MCPUser sends (session already open), reading the answer;
- ``bare-requests``: the same with ``HttpUser`` (requests), the other client MCPClient could have been built on.

Printed side by side, written as JSON with the goals (MCPUser at most 0.5 x the SDK, at most 1.5 x the bare
FastHttpUser POST) and whether they were reached. Figures only: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from swarmgauge.files import write_json

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "mcp_client.json"
CASES = ("mcpuser", "sdk", "bare-fasthttp", "bare-requests")
TOOL, DOC = "mark_fetch", "/corpus/quic/doc-0000.md"
MAX_CALLS = 10_000_000  # the SDK loop's count bound; its time bound is the window
GOALS = {"mcpuser_over_sdk": 0.5, "mcpuser_over_bare_fasthttp": 1.5}
HEADER = ("client", "calls", "calls/s", "CPU µs/call", "p50 ms", "failed", "MCPUser / this")


class BenchmarkError(Exception):
    """A case could not run (its child failed or printed no result)."""


# -- children: one client each, measured over the window --------------------------------------------------------
def _window_result(calls: int, failed: int, cpu: float, wall: float, latencies: list[float]) -> dict[str, Any]:
    latencies = sorted(latencies)
    return {
        "calls": calls,
        "failed": failed,
        "cpu_s": cpu,
        "wall_s": wall,
        "cpu_us_per_call": cpu / calls * 1e6 if calls else None,
        "calls_per_s": calls / wall if wall else None,
        "p50_ms": latencies[len(latencies) // 2] if latencies else None,
    }


def _locust_case(case: str, url: str, warmup: float, duration: float) -> dict[str, Any]:
    import gevent
    from locust import FastHttpUser, HttpUser, task
    from locust.env import Environment

    from swarmgauge.targets.mcp_gateway import gateway_base_url
    from swarmgauge.users.mcp_client import MCPClient
    from swarmgauge.users.mcp_user import MCPUser

    base = gateway_base_url(url)
    arguments = {"url": DOC}
    if case == "mcpuser":

        class Caller(MCPUser):
            host = base

            def one_call(self) -> None:
                self.call_with_recovery(TOOL, arguments)
    else:
        opener = MCPClient(base)
        opener.open_session()
        outgoing = opener.session.call_tool(TOOL, arguments)
        body, headers = outgoing.body, dict(outgoing.headers)
        base_class = FastHttpUser if case == "bare-fasthttp" else HttpUser

        class Caller(base_class):  # type: ignore[no-redef]
            host = base

            @task
            def call(self) -> None:
                with self.client.post(
                    "/mcp", data=body, headers=headers, name=f"tools/call {TOOL}", catch_response=True
                ) as answer:
                    if answer.status_code != 200 or b'"isError":false' not in (answer.content or b""):
                        answer.failure(f"HTTP {answer.status_code}")

    environment = Environment(user_classes=[Caller])
    seen: dict[str, Any] = {"on": False, "calls": 0, "failed": 0, "latencies": []}

    def on_request(name: str, response_time: float, exception: Any = None, **_kw: Any) -> None:
        if seen["on"] and name == f"tools/call {TOOL}":
            seen["calls"] += 1
            seen["failed"] += exception is not None
            seen["latencies"].append(response_time)

    environment.events.request.add_listener(on_request)
    runner = environment.create_local_runner()
    runner.start(1, spawn_rate=1)
    gevent.sleep(warmup)
    seen["on"], cpu0, wall0 = True, time.process_time(), time.perf_counter()
    gevent.sleep(duration)
    seen["on"], cpu, wall = False, time.process_time() - cpu0, time.perf_counter() - wall0
    runner.quit()
    return _window_result(seen["calls"], seen["failed"], cpu, wall, seen["latencies"])


def _sdk_case(url: str, warmup: float, duration: float) -> dict[str, Any]:
    import asyncio

    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def run() -> dict[str, Any]:
        async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            calls = failed = 0
            latencies: list[float] = []
            began = time.perf_counter()
            cpu0 = wall0 = None
            for _ in range(MAX_CALLS):
                now = time.perf_counter()
                if cpu0 is None and now - began >= warmup:
                    cpu0, wall0 = time.process_time(), now
                if wall0 is not None and now - wall0 >= duration:
                    break
                result = await session.call_tool(TOOL, {"url": DOC})
                if wall0 is not None:
                    calls += 1
                    failed += bool(result.is_error)
                    latencies.append((time.perf_counter() - now) * 1000.0)
            return _window_result(calls, failed, time.process_time() - cpu0, time.perf_counter() - wall0, latencies)

    return asyncio.run(run())


def child_main(case: str, url: str, warmup: float, duration: float) -> int:
    result = _sdk_case(url, warmup, duration) if case == "sdk" else _locust_case(case, url, warmup, duration)
    print("RESULT " + json.dumps(result), flush=True)
    return 0


# -- orchestration ----------------------------------------------------------------------------------------------
def run_case(case: str, url: str, warmup: float, duration: float) -> dict[str, Any]:
    from swarmgauge.targets.launch import child_env

    command = [
        sys.executable,
        "-m",
        "benchmarks.mcp_client",
        "--child",
        case,
        "--url",
        url,
        "--warmup",
        str(warmup),
        "--duration",
        str(duration),
    ]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, cwd=str(ROOT), env=child_env(), timeout=warmup + duration + 60
        )
    except subprocess.TimeoutExpired:
        raise BenchmarkError(f"case {case} did not finish") from None
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        raise BenchmarkError(f"case {case} failed (exit {done.returncode}): {done.stderr.strip()[-600:]}")
    return {"client": case, **json.loads(lines[-1][len("RESULT ") :])}


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def table(rows: list[dict[str, Any]]) -> str:
    ours = next((r["cpu_us_per_call"] for r in rows if r["client"] == "mcpuser"), None)
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "|".join("---" for _ in HEADER) + "|"]
    for row in rows:
        ratio = _ratio(ours, row["cpu_us_per_call"])
        cells = [
            row["client"],
            str(row["calls"]),
            f"{row['calls_per_s']:.0f}",
            f"{row['cpu_us_per_call']:.0f}",
            f"{row['p50_ms']:.2f}",
            str(row["failed"]),
            "" if ratio is None else f"{ratio:.2f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def goals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    cpu = {r["client"]: r["cpu_us_per_call"] for r in rows}
    reached = {
        "mcpuser_over_sdk": _ratio(cpu.get("mcpuser"), cpu.get("sdk")),
        "mcpuser_over_bare_fasthttp": _ratio(cpu.get("mcpuser"), cpu.get("bare-fasthttp")),
    }
    return {
        key: {"goal_at_most": GOALS[key], "measured": value, "met": value is not None and value <= GOALS[key]}
        for key, value in reached.items()
    }


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mcp_client", description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=10.0, help="measured seconds per case")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds per case before measuring")
    parser.add_argument("--mode", default="sse", help="gateway answers: sse (the SDK default) or json")
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated subset of {', '.join(CASES)}")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="JSON result file")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def _check(opts: argparse.Namespace) -> list[str]:
    cases = [c.strip() for c in opts.cases.split(",") if c.strip()]
    unknown = [c for c in cases if c not in CASES]
    if unknown or not cases:
        raise ValueError(f"--cases takes {', '.join(CASES)}, not {', '.join(unknown) or 'nothing'}")
    if opts.mode not in ("sse", "json"):
        raise ValueError(f"--mode takes sse or json, not {opts.mode!r}")
    if opts.duration <= 0 or opts.warmup < 0:
        raise ValueError("--duration must be positive and --warmup not negative")
    return cases


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(list(sys.argv[1:] if argv is None else argv))
    if opts.child:
        return child_main(opts.child, opts.url, opts.warmup, opts.duration)
    try:
        cases = _check(opts)
    except ValueError as exc:
        print(f"mcp_client: {exc}", file=sys.stderr)
        return 2
    from swarmgauge.targets.mcp_gateway import launch

    gateway = launch(["--json-response"] if opts.mode == "json" else [])
    try:
        rows = [run_case(case, gateway.url, opts.warmup, opts.duration) for case in cases]
    except BenchmarkError as exc:
        print(f"mcp_client: {exc}", file=sys.stderr)
        return 1
    finally:
        gateway.stop()
    print(table(rows))
    doc = {
        "settings": {
            "duration_s": opts.duration,
            "warmup_s": opts.warmup,
            "mode": opts.mode,
            "tool": TOOL,
            "document": DOC,
        },
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "rows": rows,
        "goals": goals(rows),
    }
    for key, goal in doc["goals"].items():
        measured = "n/a" if goal["measured"] is None else f"{goal['measured']:.2f}"
        print(f"{key}: {measured} (goal <= {goal['goal_at_most']}) {'met' if goal['met'] else 'NOT met'}")
    print(f"written to {write_json(opts.out, doc)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
