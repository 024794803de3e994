"""Each embedded HTTP target's latency (and the real kneo-serv's) on one kept-open connection beside fresh ones.

A target that answers a kept-open connection slower than a new one adds latency of its own (the 2dph brain
stand-in's headers and body as two segments: Nagle plus delayed ACK, about 40 ms), and every figure a load test
takes through it is that much off. Per probe, a fresh target is started with its configured cost (``--search-ms``,
``--delay``, ``--read-cost-ms``) or, without such a knob, at its natural floor; then ``--requests`` requests go over
ONE kept-open connection, interleaved with as many on a new connection each, so both see the same machine. A target
with a cost knob is started once more at cost 0: its kept-open median there is its floor, and "over cost" is what it
adds beyond the configured cost and that floor (0 for a target that does not distort). Prints a table and
merges the figures under ``--label`` (e.g. ``before`` / ``after`` a fix) into the JSON. Figures only.

    python -m benchmarks.targets_kept_open [--label after] [--requests 50] [--only brain,sim-http] [--out FILE]
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from swarmgauge.cli.demo_brain_rows import MODEL_LOAD_MS, SEARCH_MS
from swarmgauge.errors import UsageError
from swarmgauge.files import write_json
from swarmgauge.protocols.kneo import run_request
from swarmgauge.protocols.mcp import SESSION_HEADER, MCPSession, read_messages, result_of
from swarmgauge.targets.kneo.service import ECHO_SPEC_NAME
from swarmgauge.targets.launch import launch_target

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "targets_kept_open.json"
TIMEOUT_S = 10.0
MCP_DOCUMENT = "/corpus/quic/doc-0000.md"
RUNS_PATH = "/v1/runs"

Send = Callable[[http.client.HTTPConnection], None]


@dataclass(frozen=True)
class Probe:
    """One target and one request: ``start(cost_ms)`` yields (host, port, send), ``send`` makes one request on a
    connection. A target with a cost knob is started at ``configured_ms`` and at 0 (its floor: parsing, hops), so
    what it adds beyond its configured cost shows; one without (``configured_ms`` None) is measured at its floor."""

    name: str
    request: str
    configured_ms: float | None
    start: Callable[[float], AbstractContextManager[tuple[str, int, Send]]]
    needs: str | None = None  # a pytest fixture the target needs first (the kneo-serv venv)


def exchange(conn: http.client.HTTPConnection, method: str, path: str, body: bytes = b"", headers=None):
    """One request and its whole answer; a non-2xx status is an error (a probe must measure successes)."""
    conn.request(method, path, body=body or None, headers=dict(headers or {}))
    response = conn.getresponse()
    data = response.read()
    if not 200 <= response.status < 300:
        raise RuntimeError(f"{method} {path}: HTTP {response.status}: {data[:200]!r}")
    return response, data


def _host_port(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return str(parts.hostname), int(parts.port or 80)


def _get(path: str) -> Send:
    def send(conn: http.client.HTTPConnection) -> None:
        exchange(conn, "GET", path)

    return send


@contextmanager
def brain(search_ms: float = SEARCH_MS) -> Iterator[tuple[str, int, Send]]:
    """The brain stand-in as ``demo brain``'s after-fix workload starts it: the model loaded once (the 1,429 ms load
    is paid by the kept-open connection's first request, which is not counted), then ``search_ms`` a search."""
    args = ["--port", "0", "--model-load-ms", f"{MODEL_LOAD_MS:g}", "--search-ms", f"{search_ms:g}"]
    with launch_target("brain", args) as target:
        yield (*_host_port(target.url), _get("/search?q=quic+memory&n=5"))


@contextmanager
def sim_http(delay_ms: float = 5.0) -> Iterator[tuple[str, int, Send]]:
    with launch_target("sim-http", ["--port", "0", "--delay", f"const:{delay_ms:g}"]) as target:
        yield (*_host_port(target.url), _get("/item"))


@contextmanager
def mdk(route: str, read_ms: float = 5.0) -> Iterator[tuple[str, int, Send]]:
    """The MDK Gateway: ``echo`` (no Kernel behind it) or ``telemetry`` (one device's live read of ``read_ms``,
    through the Kernel and its Worker)."""
    cost = f"{read_ms:g}-{read_ms:g}"
    args = ["--port", "0", "--devices", "2", "--workers", "1", "--cache-s", "1", "--read-cost-ms", cost]
    with launch_target("mdk", args, wait_for=("ready", "root")) as target:
        host, port = _host_port(target.url)
        path = "/echo?value=kept"
        if route == "telemetry":
            conn = http.client.HTTPConnection(host, port, timeout=TIMEOUT_S)
            _, summary = exchange(conn, "GET", "/api/fleet/summary")
            conn.close()
            path = f"/api/fleet/device/{json.loads(summary)['devices'][0]['deviceId']}/telemetry"
        yield host, port, _get(path)


@contextmanager
def mcp_gateway(json_response: bool) -> Iterator[tuple[str, int, Send]]:
    """The MCP gateway (with its own Mark server): one session, ``mark_fetch`` of one document per request."""
    from swarmgauge.targets.mcp_gateway import launch

    process = launch(["--json-response"] if json_response else [])
    try:
        host, port = _host_port(process.url)
        path = urlsplit(process.url).path
        session = MCPSession()
        conn = http.client.HTTPConnection(host, port, timeout=TIMEOUT_S)
        opening = session.initialize()
        response, data = exchange(conn, "POST", path, opening.body, opening.headers)
        session.on_initialize_result(_result(response, data), response.getheader(SESSION_HEADER))
        ready = session.initialized()
        exchange(conn, "POST", path, ready.body, ready.headers)
        conn.close()

        def send(conn: http.client.HTTPConnection) -> None:
            call = session.call_tool("mark_fetch", {"url": MCP_DOCUMENT})
            exchange(conn, "POST", path, call.body, call.headers)

        yield host, port, send
    finally:
        process.stop()


@contextmanager
def kneo(route: str) -> Iterator[tuple[str, int, Send]]:
    """The real kneo-serv (one process, SQLite): ``readyz``, or ``run sync`` of the echo spec (one stored run each)."""
    with launch_target("kneo", ["--store", "sqlite"], timeout=120, wait_for=("ready", "pids")) as target:
        host, port = _host_port(target.url)
        if route == "readyz":
            yield host, port, _get("/readyz")
            return
        body = json.dumps(
            run_request("kept-open", spec_path=ECHO_SPEC_NAME, target="agent", async_mode=False, run_tag="kept-open")
        )

        def send(conn: http.client.HTTPConnection) -> None:
            exchange(conn, "POST", RUNS_PATH, body.encode(), {"Content-Type": "application/json"})

        yield host, port, send


def _result(response: http.client.HTTPResponse, data: bytes):
    return result_of(read_messages(response.getheader("Content-Type") or "", data, 1), 1)


PROBES = (
    Probe("brain", "GET /search", float(SEARCH_MS), brain),
    Probe("sim-http", "GET /item", 5.0, sim_http),
    Probe("mdk", "GET /echo", None, lambda _cost: mdk("echo")),
    Probe("mdk", "GET /api/fleet/device/ID/telemetry", 5.0, lambda cost: mdk("telemetry", cost)),
    Probe("mcp-gateway json", "POST /mcp tools/call mark_fetch", None, lambda _cost: mcp_gateway(True)),
    Probe("mcp-gateway sse", "POST /mcp tools/call mark_fetch", None, lambda _cost: mcp_gateway(False)),
    Probe("kneo", "GET /readyz", None, lambda _cost: kneo("readyz"), needs="kneo_venv"),
    Probe("kneo", "POST /v1/runs (run sync, echo)", None, lambda _cost: kneo("run"), needs="kneo_venv"),
)


def _timed(send: Send, conn: http.client.HTTPConnection) -> float:
    started = time.perf_counter()
    send(conn)
    return (time.perf_counter() - started) * 1000.0


def kept_and_fresh(host: str, port: int, send: Send, requests: int) -> tuple[list[float], list[float]]:
    """``requests`` round trips on one kept-open connection, interleaved with as many on a new connection each.

    The kept-open connection's first request (its connect) is not counted; a fresh one's connect is, since that is
    what a new connection costs."""
    kept = http.client.HTTPConnection(host, port, timeout=TIMEOUT_S)
    kept_ms, fresh_ms = [], []
    try:
        send(kept)
        for _ in range(requests):
            kept_ms.append(_timed(send, kept))
            fresh = http.client.HTTPConnection(host, port, timeout=TIMEOUT_S)
            try:
                fresh_ms.append(_timed(send, fresh))
            finally:
                fresh.close()
    finally:
        kept.close()
    return kept_ms, fresh_ms


def measure(probe: Probe, requests: int) -> dict:
    with probe.start(probe.configured_ms or 0.0) as (host, port, send):
        kept_ms, fresh_ms = kept_and_fresh(host, port, send, requests)
    floor = None
    if probe.configured_ms is not None:
        with probe.start(0.0) as (host, port, send):
            floor = statistics.median(kept_and_fresh(host, port, send, requests)[0])
    return {
        "target": probe.name,
        "request": probe.request,
        "configured_ms": probe.configured_ms,
        "requests": requests,
        "kept_open_p50_ms": round(statistics.median(kept_ms), 2),
        "fresh_p50_ms": round(statistics.median(fresh_ms), 2),
        "kept_open_max_ms": round(max(kept_ms), 2),
        "fresh_max_ms": round(max(fresh_ms), 2),
        "floor_kept_open_p50_ms": None if floor is None else round(floor, 2),
    }


def over_cost(row: dict) -> float | None:
    """What the target adds beyond its configured cost and its own floor, kept open (None without a cost knob)."""
    if row.get("configured_ms") is None or row.get("floor_kept_open_p50_ms") is None:
        return None
    return row["kept_open_p50_ms"] - row["floor_kept_open_p50_ms"] - row["configured_ms"]


def row_key(row: dict) -> str:
    return f"{row['target']} {row['request']}"


def merge(previous: dict, label: str, rows: list[dict], settings: dict) -> dict:
    """The JSON with ``label``'s rows replaced by these (other labels, e.g. ``before``, are kept)."""
    merged = {"settings": dict(previous.get("settings") or {}), "runs": dict(previous.get("runs") or {})}
    merged["settings"][label] = settings
    merged["runs"][label] = {row_key(row): row for row in rows}
    return merged


def table(merged: dict) -> str:
    """One line per label and probe: configured cost, kept-open and fresh medians, and what kept-open adds."""
    header = (
        f"{'label':<7} {'target':<17} {'request':<35} {'cost ms':>7} {'kept p50':>9} {'fresh p50':>9} "
        f"{'kept-fresh':>10} {'floor':>6} {'over cost':>9}"
    )
    lines = [header, "-" * len(header)]
    for label, rows in merged.get("runs", {}).items():
        for row in rows.values():
            cost = "floor" if row["configured_ms"] is None else f"{row['configured_ms']:g}"
            added = row["kept_open_p50_ms"] - row["fresh_p50_ms"]
            floor, over = row.get("floor_kept_open_p50_ms"), over_cost(row)
            lines.append(
                f"{label:<7} {row['target']:<17} {row['request']:<35} {cost:>7} "
                f"{row['kept_open_p50_ms']:>9.2f} {row['fresh_p50_ms']:>9.2f} {added:>+10.2f} "
                f"{'' if floor is None else f'{floor:.2f}':>6} {'' if over is None else f'{over:+.2f}':>9}"
            )
    return "\n".join(lines)


def chosen_probes(only: str, requests: int) -> list[Probe]:
    """The probes ``--only`` names (every one when empty); a bad choice is a :class:`UsageError`."""
    if requests < 1:
        raise UsageError(f"--requests must be at least 1, not {requests}")
    targets = sorted({probe.name.split()[0] for probe in PROBES})
    wanted = {name.strip() for name in only.split(",") if name.strip()}
    if wanted - set(targets):
        raise UsageError(f"--only {only!r}: the targets are {', '.join(targets)}")
    return [probe for probe in PROBES if not wanted or probe.name.split()[0] in wanted]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.targets_kept_open", description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="after", help="name these figures are kept under in the JSON")
    parser.add_argument("--requests", type=int, default=50, help="round trips per connection kind and probe")
    parser.add_argument("--only", default="", help="comma-separated target names (default: every probe)")
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    args = parser.parse_args(argv)
    try:
        probes = chosen_probes(args.only, args.requests)
    except UsageError as exc:
        print(f"targets_kept_open: {exc}", file=sys.stderr)
        return 2
    rows = [measure(probe, args.requests) for probe in probes]
    out = Path(args.out)
    previous = json.loads(out.read_text()) if out.is_file() else {}
    merged = merge(previous, args.label, rows, {"requests": args.requests, "only": args.only})
    print(table(merged))
    write_json(out, merged)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
