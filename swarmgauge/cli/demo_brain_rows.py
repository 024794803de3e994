"""The 2dph brain PERF page's rows as demo workloads: the leak before and after the fix (with the zombies and the
model loads), and the buffer-pool exhaustion before and after its fix at 8 and 16 concurrent.

The stand-in takes the page's own timings (a model load of 1,429 ms, a p50 of 6 ms after the fix); the memory kept per search
and the pool's size are the stand-in's settings, named beside the figures they fix. ``scale`` shortens the holds.
"""

from __future__ import annotations

from swarmgauge.cli.demo_pages import Workload, hold

MODEL_LOAD_MS = 1429  # the page: p50 1,429 ms per search before the fix (the model reloaded per search)
#: the page's p50 after the fix is 6.0 ms end to end; the stand-in's own HTTP floor is about 1 ms kept open
#: (benchmarks/targets_kept_open.py: 0.8 ms at load 8.6), so its search spends the other 5 (with 6: p50 7.56 ms)
SEARCH_MS = 5
#: the page's ~490 MB kept a search / about 30: ~20 searches (30 s) stay far past the 50 MiB gate and well inside 2
#: cores' memory without swap; the index grades the RSS kept against this setting, the page's figures divided alike
LEAK_PER_SEARCH_KB = 16 * 1024
ZOMBIES = 20  # the page: "~20 zombie [serve] subprocesses"
POOL_RESULTS = 200  # unclosed results that fill the stand-in's pool (the page's 512 MiB pool, in results)
POOL_MIX = "search:6,get:2,stats:1,audit:1,health:1"  # the stress tool's mix, plus /health (never touches the DB)
LEAK_GATE_EXIT = 3  # rss_delta<50MiB and the stress gates are SLOs: a failed one exits 3

BEFORE_FIX = (
    f"--leak-per-search {LEAK_PER_SEARCH_KB} --model-load-ms {MODEL_LOAD_MS} --search-ms {SEARCH_MS} "
    f"--zombies-per-search {ZOMBIES}"
)
AFTER_FIX = f"--model-load-ms {MODEL_LOAD_MS} --search-ms {SEARCH_MS}"


def leak(name: str, what: str, target: str, scale: float, expected_exit: int) -> Workload:
    """One user of sequential searches (``--mix search:1 --c 1``) with the target's RSS and counts sampled."""
    # brain_leak.py has no shape class, so its hold is -t rather than a plan
    options = ("-u", "1", "-r", "1", "-t", hold(30, scale, 10.0), "--brain-embedded-args", target)
    return Workload(
        name,
        what,
        "brain_leak.py",
        (*options, "--sample-interval", "1", "--sample-warmup", "3s"),
        None,
        expected_exit=expected_exit,
    )


def pool(name: str, what: str, target: str, scale: float, expected_exit: int) -> Workload:
    """The stress tool's mix at 8 then 16 concurrent (the page's live proof), every route's errors counted."""
    plan = {
        "name": f"demo-brain-{name}",
        "description": what,
        "kind": "step_ramp",
        "steps": [8, 16],
        "step_time": hold(10, scale, 3.0),  # the pool fills in the first second at c=8 (200 results)
        "warmup": hold(1, scale, 0.0),
    }
    options = ("--brain-mix", POOL_MIX, "--brain-embedded-args", target, "--sample-interval", "1")
    return Workload(name, what, "brain_stress.py", options, plan, expected_exit=expected_exit)


def brain_rows(scale: float) -> tuple[Workload, ...]:
    return (
        leak(
            "before-fix",
            "sequential searches, the model reloaded and kept per search, zombie children",
            BEFORE_FIX,
            scale,
            LEAK_GATE_EXIT,  # the leak gate fails by design
        ),
        leak("after-fix", "sequential searches, the model loaded once", AFTER_FIX, scale, 0),
        pool(
            "pool-before-fix",
            "8 then 16 concurrent with every query result left open: the pool fills, every route 502",
            f"--pool-exhaustion {POOL_RESULTS} --search-ms {SEARCH_MS}",
            scale,
            LEAK_GATE_EXIT,  # the stress gates (errors < 1 % per route) fail by design
        ),
        pool(
            "pool-after-fix",
            "8 then 16 concurrent with every result closed: 0 % errors",
            f"--search-ms {SEARCH_MS}",
            scale,
            0,
        ),
    )
