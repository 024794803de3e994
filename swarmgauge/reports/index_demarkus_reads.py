"""The demarkus page's Reads section in the index: every read row of its table beside the measured one, the shape
checks of its read bullets, and the read rows that cannot be reproduced here.

The measured rows come from the ``reads``, ``fresh``, ``lookup`` and ``list`` workloads' ``steps.csv``; the page's
figures are transcribed from ``../shared/docs/reference-pages/demarkus-kind-bench.md``. The stand-in's bottleneck is
3 backend slots of two ~9.4 ms round trips and a 45 ms stall of the whole backend after about every 640 reads
(``swarmgauge.cli.demo_pages.MARK_BOTTLENECK``): it fixes the 1-user figures, the 160 req/s ceiling and the tail past
the knee, so those rows say so (``set_by``, as each run had it); past the knee p50 follows from the ceiling by Little's
law.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pandas as pd

from swarmgauge.reports.index_figures import (
    Check,
    PageSection,
    figure,
    flat,
    ms,
    read_steps,
    requests_of,
    run_json,
    step_table,
)
from swarmgauge.reports.index_grades import misses

POOLED: dict[int, tuple[float, ...]] = {
    1: (53, 20, 26),
    4: (160, 21, 45),
    16: (159, 100, 166),
    64: (158, 423, 486),
    256: (151, 1770, 1790),
}
FRESH: dict[int, tuple[float, ...]] = {16: (157, 23, 323), 64: (159, 343, 1160)}
LOOKUP: dict[int, tuple[float, ...]] = {16: (159, 101, 124), 64: (158, 501, 506)}
LIST: dict[int, tuple[float, ...]] = {16: (159, 80, 185)}
CEILING = 160.0
READ_VERBS = ("FETCH", "LOOKUP", "LIST")

ROUND_TRIPS = "--read-delay-ms 9.2 --reads-stat-head"
SLOTS = "--backend-concurrency 3 (3 slots of two round trips: 160 reads/s)"

#: (the page's row, why it is not attempted here)
NOT_REPRODUCIBLE = [
    (
        "Reads: the three pods together used 0.12 to 0.37 cores and 65 to 118 MiB, no pod past 51 MiB",
        "the Go binary's pods on kind: no Kubernetes here, and the stand-in is a Python process",
    ),
    (
        "Handshakes are cheap: fresh connections raised CPU from 0.23 to 0.30 cores, about 0.5 ms per handshake",
        "the Go server's (quic-go) handshake CPU; the stand-in's is Python's (qh3: about 1.9 ms a fresh request)",
    ),
    (
        "Connections are cheap in memory: 256 open connections took the pods from about 65 to 117 MiB",
        "the Go binary's pod working set on kind; the stand-in's memory per connection is Python's",
    ),
]

WHY = "why it does not hold"
#: (step, workers) -> why that row of the page is out of reach here, in one line; shown only when the row strays
#: the simulation of the stand-in's bucket with a cost per verb, cited by the LOOKUP and MCP rows
VERB_MODEL = "benchmarks/verb_cost_model.py, the stand-in's slots and stalls simulated"
SIXTEEN_TAILS = (
    "the page's three 16-user rows through one bucket end p99 at 124 (LOOKUP), 166 (FETCH) and 185 ms (LIST)"
)
REASONS = {
    ("QUIC FETCH, pooled connections", 16): "a first-come queue of reads that spread 1.3x alone (the page's 1 user) "
    "cannot spread 1.66x at 16 users; the backend's stalls (--backend-stall-ms) give that tail, and this run had none",
    ("QUIC LOOKUP", 16): "the page's 16-user FETCH and LOOKUP share a p50 (100 and 101 ms at 159 req/s) but not a "
    "tail: FETCH's p99 holds with a tail over p50 of 41 ms or more (0.85 x 166 = 141 ms), LOOKUP's with 42 or less "
    "(1.15 x 124 = 143 ms), and the backend's stalls give both verbs the same tail, about a stall long; no cost per "
    f"verb holds it beside the page's other LOOKUP rows ({VERB_MODEL}): the real server answers a LOOKUP from its "
    "snapshot after one Head of the head object, but one round trip all but doubled LOOKUP's rate here (282-310 "
    "req/s at 16 and 64 users over three runs, p50 0.50-0.52x and 0.40-0.41x) where the page's LOOKUPs run at "
    "FETCH's 158-160 req/s at every step; at FETCH's cost, a LOOKUP counted as half a read towards the stalls holds "
    "this row in 79 % of 9 s windows but puts "
    "mark_lookup_all's 8-worker p99 at 0.61x (the page's longest 8-worker tail), and a LOOKUP spread tighter or wider "
    f"than FETCH's leaves this p99 at 1.17-1.21x; {SIXTEEN_TAILS}",
    ("QUIC LIST", 16): "the page's LIST p50 (80 ms) sits below its own mean by Little's law (16 / 159 req/s = 101 "
    "ms): each of demarkus-loadtest's 16 workers waits for its answer before its next request, so a read no stall "
    "meets waits behind the other 15, 16 / the bucket's rate; 80 ms needs the bucket at 200 reads/s between stalls, "
    "and stalled a fifth of the time to come down to 159 req/s, where FETCH and LOOKUP through the same bucket at 16 "
    f"workers (p50 100 and 101 ms at 159 req/s) show it at 159; {SIXTEEN_TAILS}",
    ("QUIC FETCH, fresh connection per request", 16): "p50 above the page's at any share of lost first flights: "
    "the model simulated (benchmarks/fresh_dial_model.py, quic-go's 200 ms timer, shares 0 to 0.6) gives p50 43 ms "
    "at best (1.88x, shares 0.40-0.45, at 143-135 req/s; 42 ms with the page's 0.5 ms handshake for the stand-in's "
    "2.8) and 215 ms once half the dials wait; the users not in a "
    "timer outnumber the 3 slots whenever the bucket is full, so the median read queues, where the page's 23 ms at "
    "157 req/s is a full bucket its median read never queued at",
    ("QUIC FETCH, fresh connection per request", 64): "p99 below the page's at any share: the same simulation gives "
    "0.45-0.51x (a lost dial waits 200 ms, then the ~340 ms queue); the page's 1.16 s needs over 1 % of dials to "
    "lose their retransmit too (200 + 400 ms of timers and the queue: about 0.94 s), and the same 1 % at 16 users "
    "would put that row's p99 near 0.63 s (1.95x its 323 ms): both rows dial about 158 times a second, so one loss "
    "rate cannot give both",
    ("QUIC LOOKUP", 64): "the page's figures disagree for a closed loop: each of demarkus-loadtest's 64 workers "
    "waits for its answer before its next request, so by Little's law they wait 64 / 158 req/s = 405 ms on average "
    "(at most: its rate's time includes each worker's uncounted warm-up read); p50 501 and p99 506 put half the "
    "reads at 501 ms or more, so the other half would average 309 ms or less (2 x 405 - 501) with the slowest 1 % "
    "only 5 ms above the median, or 158 req/s x 501 ms = 79 reads in flight from 64 workers; a closed loop of 64 "
    "reaches p50 426 ms (0.85x) only at 150 req/s or less, a LOOKUP slower at the bucket than FETCH, which the "
    "page's LOOKUP rows (158-159 req/s, as FETCH) do not show",
}
#: the fresh rows of a run made without the lossy path (``--initial-loss``)
NO_LOSSY_PATH = {
    ("QUIC FETCH, fresh connection per request", users): "this run's path lost no Initial (no --initial-loss): every "
    "fresh read queued at the bucket, none waited a retransmit timer as a share of the page's did"
    for users in FRESH
}

NOTE = (
    "Reads: the embedded Mark server stands in for the page's bottleneck (fake-gcs-server) with 3 backend slots, each "
    "read holding one through two ~9.4 ms round trips (lognormal, sigma 0.2): 160 reads/s, reached at 4 users, where "
    "the fourth read waits only for the first slot to free. The rate bucket it replaces idled while every user was in "
    "its round trips (136-139 req/s at 4 users). The page's tail past the knee is a fixed amount, not a spread: p99 "
    "sits about 65 ms above p50 at 16 users (166 vs 100 ms) and at 64 (486 vs 423 ms), 20 ms at 256 (on 1.77 s) and "
    "6 ms at 1 user; spread reads in a first-come queue tighten as it grows (115 ms at 16 users, 0.69x). A pause that "
    "every read in the system sits through at once gives it: a 100 ms read at 16 users spans one or not, a 1.7 s read "
    "at 256 spans about one whatever it does. So the whole backend stands still 45 ms after about every 640 reads "
    "(576 to 704 apart, seeded: --backend-stall-ms 45 --backend-stall-reads 640; about every 4 s at the ceiling): the "
    "page does not say what paused, and a collection cycle of fake-gcs-server, paced by what it allocates and so by "
    "the reads it serves, would. The length is fitted on the rows a stall decides: the 16-user FETCH p99 "
    "(166 ms) wants at least 40 ms, MCP's 8-worker p99 (85 ms) at most 53; 60 ms put that MCP row at 1.29x. It "
    "leaves the 1-, 4- and 256-user rows near where they were (one user meets a stall every 14 s). Fresh connections are timed as demarkus-loadtest times them (dial, request and answer: FETCH+dial). "
    "Its -fresh mode builds a new client per request (tools/demarkus-loadtest/main.go, client/fetch/fetch.go): a new "
    "UDP socket and a full handshake each time, with no session cache, so no resumption and no 0-RTT; the close is "
    "outside the timed call, and a failed dial would be retried 100 ms later (no errors on the page). "
    "The page's fresh rows are bimodal: at 16 users p50 23 ms against a mean of 102 ms by Little's law (16 / 157 "
    "req/s) and p99 323 ms, so some of its dials waited a retransmit timer before their handshake, off the bucket "
    "(lost Initial packets on kind's UDP path would do it; the page does not say). Loopback loses nothing, so the "
    "stand-in's path loses the first flight of a seeded 30 % of new connections (--initial-loss 0.3) and the "
    "client's own timer decides the wait: quic-go's, the page's client, resends a first Initial after 200 ms (twice "
    "its 100 ms initial RTT), qh3's after 667 ms (twice 0.333 s), so the generator's client is set to quic-go's "
    "(--mark-initial-rtt 0.1). 30 % is the share that gives the page's 16-user mean and throughput with 200 ms "
    "timers. The page's 300 ms between p50 and p99 fits a 300 ms timer better (26 %), which quic-go's code does not "
    "have. A fresh request costs the stand-in and the "
    "generator about 1.9 and 1.7 ms of CPU (qh3, Python), the page's Go server 0.5 ms: 160 a second fit a quiet "
    "2-core box, a loaded one caps them below the bucket (60-77 req/s at load average 9). LOOKUP and LIST hold a "
    "slot as long as FETCH. The real server answers them from its snapshot (catalog, directories) after one Head of "
    "the head object (bucketstore's refreshSnapshot), where a FETCH also reads the document's objects; but the page's "
    "LOOKUP and LIST rows run at FETCH's rate at every step (158-160 req/s), and one round trip for a LOOKUP all but "
    "doubled its rate here (282-310 req/s, p50 0.40-0.52x at 16 and 64 users over three runs; simulated 313 req/s: "
    "benchmarks/verb_cost_model.py): at the page's ceiling a read cost the same whatever its verb."
)


def with_reasons(table: pd.DataFrame, reasons: dict[tuple[str, int], str]) -> pd.DataFrame:
    """A ``why it does not hold`` column: the reason of each row (by its step and workers) whose figures stray past
    its tolerance, blank for the rows that hold; no column when every row holds."""
    if table.empty:
        return table
    why, step = [], ""
    for _, row in table.iterrows():
        step = str(row["Step"]) or step
        why.append(reasons.get((step, int(row["Workers"])), "") if misses(row.to_dict()) else "")
    return table.assign(**{WHY: why}) if any(why) else table


def _table(
    label: str, steps: pd.DataFrame, page: dict[int, tuple[float, ...]], setting: str = SLOTS
) -> list[pd.DataFrame]:
    """The rows of one step, each group with the tolerance and stand-in setting that applies to it."""
    if steps.empty:
        return []
    parts = []
    # 1 user: the two round trips are the whole latency (our own client and server add about 2 ms); 15 %.
    one = steps[steps["users"] == 1]
    if not one.empty:
        parts.append(step_table(one, page, label, "Step", tolerance=0.15, set_by=ROUND_TRIPS))
    # the knee: the page's own figures disagree there by 19 % (p50 21 ms against 4 / 160 req/s = 25 ms mean); 20 %.
    knee = steps[steps["users"] == 4]
    if not knee.empty:
        parts.append(step_table(knee, page, "" if parts else label, "Step", tolerance=0.2, set_by=SLOTS))
    # past the knee: the page's ceilings spread 151-159 (5 %) and its tails are single runs; 15 %. The ceiling is the
    # slots', the tail the stalls' (``setting``, as the run had them).
    past = steps[steps["users"] > 4]
    if not past.empty:
        parts.append(step_table(past, page, "" if parts else label, "Step", tolerance=0.15, set_by=setting))
    return parts


def _stalls(words: list[str]) -> tuple[str, str]:
    """The backend-stall flags of a Mark server's arguments and what they do, or two blanks when it had none."""
    stall_ms = words[words.index("--backend-stall-ms") + 1] if "--backend-stall-ms" in words[:-1] else "0"
    if not float(stall_ms):
        return "", ""
    every = words[words.index("--backend-stall-reads") + 1] if "--backend-stall-reads" in words[:-1] else "640"
    shown = f"{float(stall_ms):g}"
    return (
        f" --backend-stall-ms {shown} --backend-stall-reads {every}",
        f"; the whole backend stands still {shown} ms after about every {every} reads",
    )


def bucket_setting(args: str) -> str:
    """The stand-in settings that fix the bucket's figures, as a run's Mark server had them: the slots, and the
    backend's stalls when it had them."""
    flags, why = _stalls(shlex.split(args or ""))
    return f"--backend-concurrency 3{flags} (3 slots of two round trips: 160 reads/s{why})"


def _run_setting(runs: dict[str, Path | None], workload: str) -> str:
    options = (run_json(runs, workload, "run.json") or {}).get("options") or {}
    return bucket_setting(str(options.get("mark_embedded_args") or ""))


def fresh_setting(runs: dict[str, Path | None]) -> str:
    """The stand-in settings that fix the fresh rows, as the run had them: the slots, and the lossy path with the
    client's retransmit timer when the run used them."""
    options = (run_json(runs, "fresh", "run.json") or {}).get("options") or {}
    words = shlex.split(str(options.get("mark_embedded_args") or ""))
    share = words[words.index("--initial-loss") + 1] if "--initial-loss" in words[:-1] else None
    if share is None:
        return bucket_setting(str(options.get("mark_embedded_args") or ""))
    flags, why = _stalls(words)
    initial_rtt = options.get("mark_initial_rtt")
    timer = f" --mark-initial-rtt {float(initial_rtt):g}" if initial_rtt else ""
    wait = f"the client's {2 * float(initial_rtt) * 1000:.0f} ms" if initial_rtt else "the client's"
    return (
        f"--backend-concurrency 3 --initial-loss {share}{timer}{flags} ({float(share):.0%} of dials lose their first "
        f"flight and wait {wait} retransmit timer{why})"
    )


def _bimodal_table(
    label: str, steps: pd.DataFrame, page: dict[int, tuple[float, ...]], setting: str
) -> list[pd.DataFrame]:
    """Fresh rows: the ceiling is the stand-in's slots, the spread its lossy path's; 25 %, since the page's rows are
    single runs of a bimodal mix whose share of slow dials moves by a few points from run to run."""
    if steps.empty:
        return []
    return [step_table(steps, page, label, "Step", tolerance=0.25, set_by=setting)]


def reads(runs: dict[str, Path | None], section: PageSection) -> pd.DataFrame:
    """Fill ``section`` with the read rows' checks, note and rows not attempted; return the Reads table."""
    pooled = requests_of(read_steps(runs.get("reads")), "FETCH")
    fresh_steps = read_steps(runs.get("fresh"))
    fresh = requests_of(fresh_steps, "FETCH+dial")
    lookup = requests_of(read_steps(runs.get("lookup")), "LOOKUP")
    listed = requests_of(read_steps(runs.get("list")), "LIST")
    parts = [
        *_table("QUIC FETCH, pooled connections", pooled, POOLED, _run_setting(runs, "reads")),
        *_bimodal_table("QUIC FETCH, fresh connection per request", fresh, FRESH, fresh_setting(runs)),
        *_table("QUIC LOOKUP", lookup, LOOKUP, _run_setting(runs, "lookup")),
        *_table("QUIC LIST", listed, LIST, _run_setting(runs, "list")),
    ]
    _ceiling_checks(pooled, section)
    section.checks.extend(_errors_check(runs))
    handshakes = requests_of(fresh_steps, "QUIC")
    rows = [
        figure(f"QUIC handshake p50 at {int(row['users'])} fresh users", row["p50_ms"], None, ms)
        for _, row in handshakes.iterrows()
    ]
    if rows:
        section.tables.append(("Reads: the handshakes inside FETCH+dial (the page gives none)", pd.DataFrame(rows)))
    section.notes.append(NOTE)
    section.not_reproducible.extend(NOT_REPRODUCIBLE)
    reasons = REASONS if "--initial-loss" in fresh_setting(runs) else REASONS | NO_LOSSY_PATH
    return with_reasons(pd.concat(parts, ignore_index=True), reasons) if parts else pd.DataFrame()


def _ceiling_checks(pooled: pd.DataFrame, section: PageSection) -> None:
    past_knee = pooled[pooled["users"] >= 4] if not pooled.empty else pooled
    if past_knee.empty:
        return
    rps = [float(v) for v in past_knee["rps"]]
    mean = sum(rps) / len(rps)
    holds = flat(rps, 0.15) and abs(mean - CEILING) <= 0.2 * CEILING
    section.checks.append(
        Check(holds, f"ceiling {min(rps):.0f} to {max(rps):.0f} req/s from 4 workers on (page: about 160)")
    )
    top = past_knee.iloc[-1]
    little = 1000.0 * float(top["users"]) / float(top["rps"])
    mean_ms = float(top.get("avg_ms", top["p50_ms"]))
    section.checks.append(
        Check(
            abs(mean_ms - little) <= 0.25 * little,
            f"mean latency at {int(top['users'])} workers {ms(mean_ms)}, Little's law ({int(top['users'])} / "
            f"{float(top['rps']):.0f} req/s) says {ms(little)}",
        )
    )


def _errors_check(runs: dict[str, Path | None]) -> list[Check]:
    """The page's "zero errors in about 65,000 requests", over every read workload's requests."""
    requests = failures = 0
    for name in ("reads", "fresh", "lookup", "list"):
        steps = read_steps(runs.get(name))
        if steps.empty or "failures" not in steps:
            continue
        verbs = steps[
            steps["request_type"].isin(READ_VERBS)
        ]  # FETCH+dial repeats FETCH; the handshakes' failures count
        tried = steps[steps["request_type"].isin((*READ_VERBS, "QUIC"))]
        requests += int(pd.to_numeric(verbs["requests"], errors="coerce").fillna(0).sum())
        failures += int(pd.to_numeric(tried["failures"], errors="coerce").fillna(0).sum())
    if not requests:
        return []
    return [Check(failures == 0, f"{failures} errors in {requests:,} read requests (page: zero in about 65,000)")]
