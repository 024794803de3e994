"""CPU per request that ``import swarmgauge.locust`` adds to Locust's fastest request, side by side in one run.

``python -m benchmarks.overhead [--users 16] [--warmup 3] [--window 8] [--rounds 5] [--profile]
[--out benchmarks/results/overhead.json]``

The target is Debian's nginx serving a small static file (``benchmarks.scaling.Nginx``: our own process, temp
config, loopback, access log off; not the bottleneck, its CPU is reported beside). Each case is one ``locust
--headless`` process running ``benchmarks/overhead_locustfile.py`` (``FastHttpUser`` GET, no wait, ``--users``
users), whose probe reports the generator process's CPU time per completed request over a steady window after a
warm-up:

- ``fasthttp``: plain Locust (the anchor);
- ``swarmgauge``: the same file with ``import swarmgauge.locust`` (every listener, as a user's own locustfile).

The two cases alternate round by round, the order rotated, so a neighbour's burst hits both alike; with 2 CPUs or
more each case's generator runs on CPU 1 and nginx on CPU 0 (``--pin``, the default there). The figure is
the median of the per-round ratios swarmgauge / fasthttp, with every round and the 1-minute load average beside
it; the target is a ratio of at most 1.05 (all listeners together at most 5 % of a FastHttpUser GET). Beside it,
each process times in loops after the window one ``request`` event through its listeners and one task iteration
(schedule, execute, zero wait) through what swarmgauge puts around it: the two differences added are swarmgauge's
constant cost per request (one GET per iteration here) without the noise of a shared machine, in µs and as a share
of the GET.
``--profile`` runs one more swarmgauge case under cProfile (CPU clock) and lists swarmgauge's own functions by
time. Figures only: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.scaling import Nginx, NginxUnavailable
from swarmgauge.errors import UsageError
from swarmgauge.files import write_json

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "overhead.json"
LOCUSTFILE = ROOT / "benchmarks" / "overhead_locustfile.py"
TARGET_RATIO = 1.05
CASES = ("fasthttp", "swarmgauge")
OWN_CODE = tuple(str(ROOT / part) for part in ("listeners", "swarmgauge", "shapes", "users", "protocols"))


#: ``--pin``: the generator on one core and nginx on the other, so neither is moved between cores mid-window and the
#: two cases meet the same cache and scheduler; unpinned, rounds of one run spread 0.96-1.16, pinned 1.00-1.06
GENERATOR_CPU, NGINX_CPU = 1, 0


def pinned(cpu: int | None) -> list[str]:
    """The command's prefix that keeps it on ``cpu`` (``taskset``); none when not pinned."""
    return [] if cpu is None else ["taskset", "-c", str(cpu)]


def pin_nginx(nginx: Nginx) -> None:
    """nginx's master and workers on :data:`NGINX_CPU`."""
    import psutil

    master = psutil.Process(nginx.process.pid)
    for process in (master, *master.children(recursive=True)):
        process.cpu_affinity([NGINX_CPU])


def run_case(case: str, url: str, opts: argparse.Namespace, profile_path: str = "") -> dict[str, Any]:
    """One ``locust --headless`` process of ``case``; its probe's figures, the load average and nginx's CPU beside."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "SG_OVERHEAD_SWARMGAUGE": "1" if case == "swarmgauge" else "0",
        "SG_OVERHEAD_WARMUP": str(opts.warmup),
        "SG_OVERHEAD_WINDOW": str(opts.window),
        "SG_OVERHEAD_PROFILE": profile_path,
    }
    limit = opts.warmup + opts.window + 20
    command = pinned(GENERATOR_CPU if opts.pin else None)
    command += [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "--only-summary"]
    command += ["-u", str(opts.users), "-r", str(opts.users), "-t", f"{int(limit)}s", "--host", url]
    command += ["--stop-timeout", "1"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=limit + 60)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if not lines:
        raise RuntimeError(f"case {case} reported nothing (exit {done.returncode}): {done.stderr.strip()[-1500:]}")
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    result["load_average"] = round(os.getloadavg()[0], 2)
    return result


def measure(url: str, opts: argparse.Namespace, nginx: Nginx) -> dict[str, Any]:
    rounds: dict[str, list[dict[str, Any]]] = {case: [] for case in CASES}
    for index in range(opts.rounds):
        order = CASES if index % 2 == 0 else CASES[::-1]
        for case in order:
            nginx_before = nginx.cpu_seconds()
            result = run_case(case, url, opts)
            result["nginx_cpu_s"] = round(nginx.cpu_seconds() - nginx_before, 2)
            rounds[case].append(result)
            print(
                f"round {index + 1}/{opts.rounds} {case}: {result['cpu_us_per_request']} µs CPU/request, "
                f"{result['req_per_s']} req/s, load {result['load_average']}",
                file=sys.stderr,
                flush=True,
            )
    per_round = [
        s["cpu_us_per_request"] / f["cpu_us_per_request"] for f, s in zip(rounds["fasthttp"], rounds["swarmgauge"])
    ]
    medians = {case: statistics.median(r["cpu_us_per_request"] for r in rounds[case]) for case in CASES}
    events = {case: statistics.median(r["event_us"] for r in rounds[case]) for case in CASES}
    iterations = {case: statistics.median(r["iteration_us"] for r in rounds[case]) for case in CASES}
    constant_us = events["swarmgauge"] - events["fasthttp"] + iterations["swarmgauge"] - iterations["fasthttp"]
    ratio = statistics.median(per_round)
    return {
        "benchmark": "overhead",
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "settings": {
            "users": opts.users,
            "warmup_s": opts.warmup,
            "window_s": opts.window,
            "rounds": opts.rounds,
            "pinned": bool(opts.pin),
        },
        "target_ratio": TARGET_RATIO,
        "cpu_us_per_request": {case: round(value, 2) for case, value in medians.items()},
        "listeners_us_per_request": round(medians["swarmgauge"] - medians["fasthttp"], 2),
        "ratio": round(ratio, 4),
        "event_us": {case: round(value, 3) for case, value in events.items()},
        "event_listeners_share": round((events["swarmgauge"] - events["fasthttp"]) / medians["fasthttp"], 4),
        "iteration_us": {case: round(value, 3) for case, value in iterations.items()},
        "constant_us_per_request": round(constant_us, 3),
        "constant_share": round(constant_us / medians["fasthttp"], 4),
        "ratio_rounds": [round(value, 4) for value in per_round],
        "reached": ratio <= TARGET_RATIO,
        "load_average": [round(value, 2) for value in os.getloadavg()],
        "rounds": rounds,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
    }


def profile_listeners(url: str, opts: argparse.Namespace, top: int = 25) -> dict[str, Any]:
    """One more swarmgauge case under cProfile: swarmgauge's own functions by their own CPU time."""
    import pstats

    path = Path(tempfile.mkstemp(suffix=".prof")[1])
    try:
        result = run_case("swarmgauge", url, opts, str(path))
        stats = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
    finally:
        path.unlink(missing_ok=True)
    total = sum(row[2] for row in stats.values()) or 1e-9
    own = sorted(
        ((where, row) for where, row in stats.items() if where[0].startswith(OWN_CODE)),
        key=lambda item: item[1][2],
        reverse=True,
    )
    return {
        "requests": result["requests"],
        "own_share": round(sum(row[2] for _, row in own) / total, 4),
        "top": [
            {
                "function": f"{where[0].replace(str(ROOT) + '/', '')}:{where[1]}({where[2]})",
                "calls": row[1],
                "own_share": round(row[2] / total, 4),
                "cumulative_share": round(row[3] / total, 4),
            }
            for where, row in own[:top]
        ],
    }


def render(doc: dict[str, Any]) -> str:
    cpu = doc["cpu_us_per_request"]
    rounds = doc["rounds"]
    lines = [
        f"CPU per completed request, {doc['settings']['users']} users, median of {doc['settings']['rounds']} "
        f"rounds x {doc['settings']['window_s']} s{', pinned (generator CPU 1, nginx CPU 0)' if doc['settings'].get('pinned') else ''} "
        f"(load average {', '.join(map(str, doc['load_average']))})",
        "| case | CPU µs/request | rounds | req/s | nginx CPU s |",
        "|---|---|---|---|---|",
    ]
    for case in CASES:
        lines.append(
            f"| {case} | {cpu[case]:.1f} | {', '.join(format(r['cpu_us_per_request'], '.1f') for r in rounds[case])} | "
            f"{statistics.median(r['req_per_s'] for r in rounds[case]):.0f} | "
            f"{statistics.median(r['nginx_cpu_s'] for r in rounds[case]):.1f} |"
        )
    verdict = "reached" if doc["reached"] else "NOT reached"
    lines += [
        "",
        f"listeners: {doc['listeners_us_per_request']:+.1f} µs per request; swarmgauge / fasthttp = "
        f"{doc['ratio']:.3f} (rounds {', '.join(f'{v:.3f}' for v in doc['ratio_rounds'])}; "
        f"loads {', '.join(str(r['load_average']) for r in rounds['swarmgauge'])}); "
        f"target ≤ {doc['target_ratio']:.2f}: {verdict}",
    ]
    event, iteration = doc["event_us"], doc["iteration_us"]
    lines += [
        f"timed in loops: one request event {event['fasthttp']:.2f} µs plain Locust, {event['swarmgauge']:.2f} µs "
        f"with swarmgauge ({event['swarmgauge'] - event['fasthttp']:+.2f} µs); one task iteration with its zero wait "
        f"{iteration['fasthttp']:.2f} µs, {iteration['swarmgauge']:.2f} µs "
        f"({iteration['swarmgauge'] - iteration['fasthttp']:+.2f} µs)",
        f"swarmgauge's constant cost per request (event + iteration): {doc['constant_us_per_request']:+.2f} µs = "
        f"{doc['constant_share']:.1%} of a FastHttpUser GET ({cpu['fasthttp']:.1f} µs)",
    ]
    profile = doc.get("profile")
    if profile:
        lines += ["", f"cProfile, swarmgauge's own functions: {profile['own_share']:.1%} of the process's CPU"]
        lines += [f"  {p['own_share']:.2%} own, {p['calls']} calls  {p['function']}" for p in profile["top"]]
    return "\n".join(lines)


def parse_options(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.overhead", description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=16, help="FastHttpUsers per case (default 16)")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds before the window (default 3)")
    parser.add_argument("--window", type=float, default=8.0, help="seconds of steady window per case (default 8)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds, both cases in each (default 5)")
    parser.add_argument("--profile", action="store_true", help="one more swarmgauge case under cProfile")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON result (default {DEFAULT_OUT})")
    parser.add_argument(
        "--pin",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the generator on CPU 1 and nginx on CPU 0 (default: on with 2 or more CPUs and taskset)",
    )
    opts = parser.parse_args(argv)
    if opts.users < 1 or opts.rounds < 1 or not opts.window > 0 or opts.warmup < 0:
        raise UsageError("--users and --rounds must be at least 1, --window > 0 and --warmup >= 0")
    can_pin = (os.cpu_count() or 1) >= 2 and shutil.which("taskset") is not None
    if opts.pin and not can_pin:
        raise UsageError("--pin needs 2 or more CPUs and taskset")
    opts.pin = can_pin if opts.pin is None else opts.pin
    return opts


def main(argv: list[str] | None = None) -> int:
    try:
        opts = parse_options(argv)
    except UsageError as exc:
        print(f"benchmarks.overhead: {exc}", file=sys.stderr)
        return 2
    try:
        nginx = Nginx(workers=1)
    except NginxUnavailable as exc:
        print(f"benchmarks.overhead: {exc}", file=sys.stderr)
        return 1
    try:
        if opts.pin:
            pin_nginx(nginx)
        doc = measure(nginx.url, opts, nginx)
        if opts.profile:
            doc["profile"] = profile_listeners(nginx.url, opts)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        print(f"benchmarks.overhead: {exc}", file=sys.stderr)
        return 1
    finally:
        nginx.stop()
    print(render(doc))
    print(f"written to {write_json(opts.out, doc)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
