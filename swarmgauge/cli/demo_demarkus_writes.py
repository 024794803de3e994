"""The demarkus page's write and MCP rows as ``swarmgauge demo demarkus`` runs them (concatenated by ``_demarkus``).

Writes go through the embedded Mark server's commit pacing (``targets/mark/commits.py``): one commit start per
``--commit-interval`` (the page's 1.5 s), each commit ``--commit-cost`` long (the page's spaced write: about 60 ms),
the next slot to whichever waiting writer races first. The burst runs at a fifth of the page's times (0.3 s pacing,
2 s request timeout: the same ratio of timeout to pacing, so the same share lost) to keep it near a minute. MCP rows
run the gateway (sweeping idle sessions every TTL/2, as the page's mcp-go) in front of a Mark server with the reads'
bottleneck. Every hold scales with ``--scale``; the burst's count scales, never below 40 writes.
"""

from __future__ import annotations

import math
from typing import Any

from swarmgauge.cli.demo_pages import MARK_BOTTLENECK, Workload, hold, hold_seconds

#: the page's pacing and the commit's own bucket writes (spaced writes about 60 ms, the soak's p50 58 ms)
WRITE_PACING = "--commit-interval 1.5s --commit-cost 56ms"
#: the burst at a fifth of the page's times: pacing 1.5 s -> 0.3 s, request timeout 10 s -> 2 s
BURST_TIME_FACTOR = 0.2
BURST_PACING = "--commit-interval 0.3s --commit-cost 11ms --request-timeout 2s"
BURST_WRITERS = 4
#: the concurrent writers' hold at least this long: a dozen writes at the page's real 1.5 s pacing
CONCURRENT_LEAST_S = 16.0
#: ...and at any scale at least this long, a floor that never shrinks (``needs``): the mean wait reads the queue (4
#: writers x 1.5 s, about 6 s) only from the writers' second round on; the first round's four waited 0 to 4.5 s. An
#: 8 s hold counts about 10 writes, 6 of them past the first round (3.97 s at --scale 0.25, amber at +-30 %, the
#: shape check's "queue" over 3 s holding); a 5 s hold would count 8, half of them the first round's, its last write
#: (queued from 4.5 s to 10.5 s) past the 5 s grace: a mean pulled toward the first round's 2.3 s, the check at risk
CONCURRENT_QUEUE_S = 8.0
CONCURRENT_WRITERS = 4
PAGE_PACING_S = 1.5
#: the concurrent writers' grace at the hold's end (``--stop-timeout``, the recording users' own default): their 4
#: writes in flight then are queued on the pacing (up to 6 s) and answered, counted, within it (13.1 s for an 8 s hold)
CONCURRENT_STOP_S = 5.0
PAGE_BURST_WRITES = 200
CHURN_RATE = 5
#: the page's dedup cap against its live sessions: 4,096 of 5/s x 1,800 s = 9,000 (0.455)
DEDUP_SHARE = 4096 / 9000
MCP_WORKERS = (1, 8, 32)
#: the page's gateway (mcp-go's StreamableHTTPServer) answers a POST with application/json unless a notification
#: upgrades it to SSE; ours does the same with this (SSE and JSON were under 1 ms a call apart at 1 worker here)
GATEWAY_AS_MCP_GO = "--json-response"


def one_writer_hold(scale: float) -> dict[str, str]:
    """The one writer's soak: 24 s at scale 1 (as the page's rows were judged). Shorter, its rate is read over whole
    pacing periods after one period's warm-up: the first write takes a free slot at once, so a 6 s hold read 5 writes
    (0.83/s, red against the page's 0.67 that a 24 s hold reads at 0.71); from the second period on, one write starts a
    period, so 4.5 s after the warm-up read 3."""
    seconds = hold_seconds(24, scale)
    if seconds >= 24:
        return {"duration": f"{seconds:g}s"}
    periods = max(2, math.floor((seconds - PAGE_PACING_S) / PAGE_PACING_S))
    return {"duration": f"{PAGE_PACING_S * (periods + 1):g}s", "warmup": f"{PAGE_PACING_S:g}s"}


def burst_writes(scale: float) -> int:
    return max(40, round(PAGE_BURST_WRITES * scale))


def churn_ttl(scale: float) -> int:
    return max(4, round(12 * scale))


def dedup_cap(scale: float) -> int:
    return max(4, round(DEDUP_SHARE * CHURN_RATE * churn_ttl(scale)))


def _soak(description: str, users: int, duration: str, slos: list[str]) -> dict[str, Any]:
    return {
        "name": f"demo-demarkus-{description.split()[0]}",
        "description": description,
        "kind": "soak",
        "users": users,
        "duration": duration,
        "slos": slos,
    }


def mcp_tools_plan(scale: float) -> dict[str, Any]:
    """mark_fetch then mark_lookup_all at 1, 8 and 32 workers, then the direct QUIC FETCH at 1 worker."""
    step, warmup = hold(6, scale, 4.0), hold(2, scale, 1.0)
    stages: list[dict[str, Any]] = []
    for user_class, tool in (("MCPFetchUser", "mark_fetch"), ("MCPLookupAllUser", "mark_lookup_all")):
        for workers in MCP_WORKERS:
            stages.append(
                {
                    "label": f"{tool} {workers}",
                    "users": workers,
                    "spawn_rate": 100,
                    "duration": step,
                    "warmup": warmup,
                    "user_classes": [user_class],
                }
            )
        # Locust keeps its users when only the class changes at the same count: a second at 0 users swaps them
        stages.append({"label": "switch", "users": 0, "spawn_rate": 100, "duration": "1s"})
    stages.append(
        {"label": "QUIC FETCH 1", "users": 1, "duration": step, "warmup": warmup, "user_classes": ["DirectFetchUser"]}
    )
    return {
        "name": "demo-mcp-tools",
        "description": "the page's MCP tool tables and the direct FETCH at 1 worker, behind the ~160 req/s bucket",
        "kind": "stages",
        "stages": stages,
        "slos": ["fail_ratio<0.01"],
    }


def churn_plan(scale: float) -> dict[str, Any]:
    ttl = churn_ttl(scale)
    return {
        "name": "demo-mcp-churn",
        "description": f"{CHURN_RATE} new MCP sessions a second, never DELETEd, then idle past the {ttl} s session TTL",
        "kind": "stages",
        "stages": [
            {
                "label": "churn",
                "rate": CHURN_RATE,
                "duration": hold(30, scale),
                "max_users": 32,
                "drop_after": "5s",
                "user_classes": ["MCPChurnUser"],
            },
            {"label": "idle", "users": 0, "duration": hold(18, scale)},
        ],
        "slos": ["fail_ratio<0.01"],
    }


def writes_and_mcp(scale: float) -> tuple[Workload, ...]:
    """The page's write rows, its MCP tool tables and its session churn, in the order the page has them."""
    burst = burst_writes(scale)
    burst_s = burst * PAGE_PACING_S * BURST_TIME_FACTOR  # a commit slot a write: the count ends the run
    burst_cap = math.ceil(burst_s) + 5  # -t only caps it
    ttl = churn_ttl(scale)
    return (
        Workload(
            "writes",
            "PUBLISH back to back, one writer, against 1.5 s commit pacing",
            "demarkus_writes.py",
            ("WriterUser", "--mark-embedded-args", WRITE_PACING),
            _soak(
                "writes: one writer back to back against the 1.5 s commit pacing",
                1,
                hold(24, scale),
                ["fail_ratio==0"],
            )
            | one_writer_hold(scale),
        ),
        Workload(
            "writes-concurrent",
            "4 writers back to back on their own paths, queueing on the commit pacing",
            "demarkus_writes.py",
            ("OwnPathWriterUser", "--mark-embedded-args", WRITE_PACING, "--stop-timeout", f"{CONCURRENT_STOP_S:g}"),
            _soak(
                "concurrent: 4 writers back to back on one world",
                CONCURRENT_WRITERS,
                hold(20, scale, CONCURRENT_LEAST_S, needs=CONCURRENT_QUEUE_S),
                ["fail_ratio<0.5"],
            ),
            answered_after_s=min(CONCURRENT_WRITERS * PAGE_PACING_S, CONCURRENT_STOP_S),
        ),
        Workload(
            "writes-burst",
            f"4 writers, {burst} publishes, pacing and timeout at a fifth of the page's (0.3 s, 2 s)",
            "demarkus_writes.py",
            (
                "BurstWriterUser",
                "-u",
                str(BURST_WRITERS),
                "-r",
                str(BURST_WRITERS),
                "-t",
                f"{burst_cap}s",
                "--mark-burst-writes",
                str(burst),
                "--mark-embedded-args",
                BURST_PACING,
            ),
            None,
            expected_exit=1,  # writes lost to the request timeout are failed requests: Locust ends with 1, by design
            count_ends_s=burst_s,
        ),
        Workload(
            "writes-soak",
            "one writer at 0.5 writes/s (spaced below the pacing), every write pruning from 43 % of the soak on",
            "demarkus_writes.py",
            (
                "SoakWriterUser",
                "--mark-write-rate",
                "0.5",
                "--mark-write-paths",
                "5",
                "--mark-retention",
                "3",
                "--mark-embedded-args",
                WRITE_PACING,
                "--sample-interval",
                "1",
            ),
            _soak(
                "soak: one writer at 0.5 writes/s, the page's 30 minutes scaled", 1, hold(40, scale), ["fail_ratio==0"]
            ),
        ),
        Workload(
            "mcp-tools",
            "MCP mark_fetch and mark_lookup_all at 1/8/32 workers, then QUIC FETCH at 1, behind the simulated bucket",
            "mcp_churn.py",
            (
                "--mcp-mark-args",
                MARK_BOTTLENECK,
                f"--mcp-embedded-args={GATEWAY_AS_MCP_GO}",  # joined: argparse takes a lone "--json-response" for a flag
                "--sample-interval",
                "1",
                "--stop-timeout",
                "5",
            ),
            mcp_tools_plan(scale),
        ),
        Workload(
            "churn",
            f"MCP session churn at {CHURN_RATE}/s, swept every TTL/2 with a {ttl} s idle TTL",
            "mcp_churn.py",
            (
                "--mcp-embedded-args",
                f"{GATEWAY_AS_MCP_GO} --session-idle-timeout {ttl} --dedup-cap {dedup_cap(scale)}",
                "--sample-interval",
                "1",
                "--stop-timeout",
                "5",
            ),
            churn_plan(scale),
        ),
    )
