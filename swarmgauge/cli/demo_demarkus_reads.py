"""The demarkus page's read rows as demo workloads: pooled FETCH at every step of its table, fresh connections, LOOKUP
and LIST, each a headless Locust run against the embedded Mark server with the page's bottleneck simulated.

Holds are the demo's (12 s a step, 3 s of it warm-up, at scale 1; the pooled ramp 14 s and 6 s, the 256-user step's
warm-up never under 5 s, so its queue is full, its spawn held 2 s and 192 handshakes done, before its measured
requests start, and its measured part 8 s, at least 4 s at scale 1 and above, 2 s at 0.25); the steps and the page's
figures are the page's (``../shared/docs/reference-pages/demarkus-kind-bench.md``, Reads). Below 256 users a step
adds at most 48 users (a tenth of a second of handshakes) and its queue fills in one round of reads (0.4 s at 64
users), so its warm-up shrinks with the scale like any hold.

A request counts in the step it started in, and the last step ends the run: without ``--stop-timeout`` the users are
stopped with their requests in flight, and those are lost. At 256 users that is 1.6 s of requests (256 of them), so
the step showed 95-130 req/s where the slots serve 160; ``STOP_TIMEOUT`` lets them finish and be counted.
"""

from __future__ import annotations

from typing import Any

from swarmgauge.cli.demo_pages import MARK_BOTTLENECK, Workload, hold_seconds, reads_plan

PAGE = "demarkus-kind-bench.md#reads"
STEP_S, WARMUP_S = 12.0, 3.0
STOP_TIMEOUT = "3"  # seconds: above the slowest read's answer (the page's 256-user p99 is 1.79 s)
POOLED_STEP_S, POOLED_WARMUP_S = (14.0, 9.0), (6.0, 5.0)  # (at scale 1, the least at any scale)
#: the pooled steps whose warm-up keeps POOLED_WARMUP_S's least at any scale: the 256-user step's spawn and handshakes
WARMUP_FLOOR_STEPS = (256,)

#: the page's rows: (users, req/s, p50 ms, p99 ms)
POOLED_STEPS = [1, 4, 16, 64, 256]
FRESH_ROWS = [(16, 157, 23, 323), (64, 159, 343, 1160)]
LOOKUP_ROWS = [(16, 159, 101, 124), (64, 158, 501, 506)]
LIST_ROWS = [(16, 159, 80, 185)]
#: fresh dials as the page's client makes them: quic-go resends a first Initial that got no answer after 200 ms
#: (twice its 100 ms initial RTT, internal/utils/rtt_stats.go); qh3's own would wait 667 ms (twice 0.333 s)
FRESH_CLIENT = ("--mark-initial-rtt", "0.1")
#: the share of fresh dials whose first flight the path loses (``targets/mark/initial_loss.py``), from the page's
#: 16-user row: its mean by Little's law is 102 ms (16 / 157 req/s) against p50 23 ms, and with 200 ms timers a 3-slot
#: bucket gives that mean at 157 req/s when 30 % of dials wait one out (a simulation of the model: 156 req/s, 103 ms)
FRESH_LOSS_SHARE = 0.3
FRESH_TARGET = f"{MARK_BOTTLENECK} --initial-loss {FRESH_LOSS_SHARE:g}"


def _rows(name: str, rows: list[tuple[int, int, int, int]]) -> list[dict[str, Any]]:
    return [{"name": name, "users": u, "rps": rps, "p50_ms": p50, "p99_ms": p99} for u, rps, p50, p99 in rows]


def _plan(
    user_class: str,
    row_name: str,
    rows: list[tuple[int, int, int, int]],
    scale: float,
    part: str,
    target_args: str = MARK_BOTTLENECK,
) -> dict:
    plan = reads_plan([row[0] for row in rows], STEP_S, WARMUP_S, scale) | {"user_classes": [user_class]}
    plan["reference"] = {
        "page": f"{PAGE} ({part})",
        "target": {"embedded": "mark", "args": target_args},
        "rows": _rows(row_name, rows),
    }
    return plan


def _workload(
    name: str,
    what: str,
    user_class: str,
    plan: dict[str, Any],
    target_args: str = MARK_BOTTLENECK,
    client_args: tuple[str, ...] = (),
) -> Workload:
    options = (user_class, "--mark-embedded-args", target_args, *client_args, "--stop-timeout", STOP_TIMEOUT)
    return Workload(name, what, "demarkus_reads.py", options, plan)


def pooled_plan(scale: float) -> dict[str, Any]:
    """The pooled ramp as stages (a warm-up each): the same measured part at every step, the warm-up's floor only where
    ``WARMUP_FLOOR_STEPS`` says; at scale 1 and above every step's is the same 6 s."""
    # the 256-user step's warm-up least is its spawn and handshakes, whatever the scale; the measured part's is a
    # sample count, which shrinks below scale 1 (``demo_pages.least_at``)
    floored_s = hold_seconds(POOLED_WARMUP_S[0], scale, needs=POOLED_WARMUP_S[1])
    warmup_s = hold_seconds(POOLED_WARMUP_S[0], scale)
    measured_s = hold_seconds(POOLED_STEP_S[0] - POOLED_WARMUP_S[0], scale, POOLED_STEP_S[1] - POOLED_WARMUP_S[1])
    pooled = reads_plan(POOLED_STEPS, floored_s + measured_s, floored_s)  # scaled already
    for key in ("steps", "step_time", "warmup"):
        del pooled[key]
    stages = []
    for users in POOLED_STEPS:
        warm = floored_s if users in WARMUP_FLOOR_STEPS else warmup_s
        stages.append(
            {"label": f"{users} users", "users": users, "duration": f"{warm + measured_s:g}s", "warmup": f"{warm:g}s"}
        )
    pooled.update(kind="stages", stages=stages)
    pooled["reference"] = dict(pooled["reference"], target={"embedded": "mark", "args": MARK_BOTTLENECK})
    return pooled


def read_workloads(scale: float) -> tuple[Workload, ...]:
    """Every read row of the page: pooled FETCH at 1 to 256 users, fresh at 16 and 64, LOOKUP at 16 and 64, LIST."""
    pooled = pooled_plan(scale)
    return (
        _workload("reads", "QUIC FETCH, pooled, 1 to 256 users, against the simulated bucket", "FetchUser", pooled),
        _workload(
            "fresh",
            f"QUIC FETCH, a fresh connection per request, 16 and 64 users, {FRESH_LOSS_SHARE:.0%} of dials losing "
            "their first flight",
            "FreshFetchUser",
            _plan("FreshFetchUser", "FETCH+dial", FRESH_ROWS, scale, "fresh connection per request", FRESH_TARGET),
            FRESH_TARGET,
            FRESH_CLIENT,
        ),
        _workload(
            "lookup",
            "QUIC LOOKUP over the world, 16 and 64 users",
            "LookupUser",
            _plan("LookupUser", "LOOKUP", LOOKUP_ROWS, scale, "QUIC LOOKUP"),
        ),
        _workload(
            "list",
            "QUIC LIST of a topic, 16 users",
            "ListUser",
            _plan("ListUser", "LIST", LIST_ROWS, scale, "QUIC LIST"),
        ),
    )
