"""CPU cost per request of swarmgauge's measuring parts beside a plain FastHttpUser request, in one process.

``python -m benchmarks.overhead [--requests 3000] [--rounds 5] [--out benchmarks/results/overhead.json]``

Starts ``targets/sim_http.py`` (no delay) on loopback and measures, in this process's CPU time and interleaved
round by round so drift hits every column alike:

- ``fasthttp``: one ``FastHttpSession.get`` as a FastHttpUser makes it, with Locust's own stats listener on the
  request event (the reference: what a plain Locust request costs the generator);
- ``steps_listener``: :func:`listeners.steps.on_request` per request, plus its share of the drain that ships the
  histograms to the master and the master's merge (one drain per ``--requests`` requests);
- ``steps_end_to_end``: the same FastHttp request with the steps listener on the event, minus ``fasthttp``, both
  on one connection in alternating chunks of 100 (a cross-check of the line above; noisier, it is a difference);
- ``open_model``: one ticket of the open-model scheduler issued at a high rate and taken by waiting users,
  greenlet switches included.

Medians over the rounds, in microseconds, and each as a share of ``fasthttp``; the target is under 10 %. Figures
only: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gevent
import locust  # noqa: F401 - gevent's monkey patching, before anything opens a socket
from locust.contrib.fasthttp import FastHttpSession
from locust.env import Environment
from locust.event import Events

from swarmgauge.files import write_json
from swarmgauge.listeners import steps
from swarmgauge.listeners.step_stats import StepMerge
from swarmgauge.shapes.open_model import TicketScheduler
from swarmgauge.targets.launch import launch_target

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "overhead.json"
TARGET_SHARE = 0.10
TICKET_RATE = 50_000.0
TICKET_USERS = 8
CHUNK = 100


def _cpu_us_per(count: int, work: Callable[[], None]) -> float:
    began = time.process_time()
    work()
    return (time.process_time() - began) * 1e6 / count


def _environment() -> Environment:
    environment = Environment(events=Events())
    environment.create_local_runner()  # its stats listener is on the request event, as in any Locust run
    steps.announce(environment, steps.StepInfo(0, "bench", 1, None, time.time()))
    return environment


def _session(environment: Environment, url: str) -> FastHttpSession:
    """The client a FastHttpUser builds, with its default options, reporting to ``environment``'s event."""
    return FastHttpSession(
        base_url=url,
        request_event=environment.events.request,
        user=None,
        network_timeout=60.0,
        connection_timeout=60.0,
        max_redirects=30,
        max_retries=0,
        concurrency=10,
    )


def _requests(session: FastHttpSession, count: int) -> Callable[[], None]:
    def run() -> None:
        for _ in range(count):
            session.get("/item", name="GET /item")

    return run


def _steps_listener(environment: Environment, count: int) -> Callable[[], None]:
    def run() -> None:
        now = time.time()
        for index in range(count):
            steps.on_request(environment, "GET", "/item", 1.0 + (index % 97) * 0.37, None, start_time=now)
        StepMerge().add_batch("worker", steps._state(environment).recorder.drain())

    return run


def _open_model(count: int) -> Callable[[], None]:
    def run() -> None:
        environment = Environment(events=Events())
        scheduler = TicketScheduler(environment)
        info = steps.StepInfo(
            0, "bench", TICKET_USERS, TICKET_RATE, time.time(), duration=count / TICKET_RATE, drop_after=60.0
        )
        taken = [0]

        def user() -> None:
            while taken[0] < count and scheduler.take(timeout=2.0) is not None:
                taken[0] += 1

        scheduler.start(info)
        gevent.joinall([gevent.spawn(user) for _ in range(TICKET_USERS)], timeout=60)
        scheduler.stop_issuing()

    return run


def _paired_requests(environment: Environment, session: FastHttpSession, count: int) -> tuple[float, float]:
    """CPU per request without and with the steps listener on the event, alternating in chunks on one connection."""

    def listener(**kwargs: Any) -> None:
        steps.on_request(environment, **kwargs)

    chunk = max(1, min(CHUNK, count))
    plain_s = with_steps_s = 0.0
    done = 0
    while done < count:
        size = min(chunk, count - done)
        began = time.process_time()
        _requests(session, size)()
        plain_s += time.process_time() - began
        environment.events.request.add_listener(listener)
        began = time.process_time()
        _requests(session, size)()
        with_steps_s += time.process_time() - began
        environment.events.request.remove_listener(listener)
        done += size
    return plain_s * 1e6 / count, with_steps_s * 1e6 / count


def measure(url: str, requests: int, rounds: int) -> dict[str, Any]:
    environment, listener_env = _environment(), _environment()
    session = _session(environment, url)
    _requests(session, min(200, requests))()  # connect and warm up
    samples: dict[str, list[float]] = {
        "fasthttp": [],
        "fasthttp_with_steps": [],
        "steps_listener": [],
        "open_model": [],
    }
    for _ in range(rounds):
        plain, with_steps = _paired_requests(environment, session, requests)
        samples["fasthttp"].append(plain)
        samples["fasthttp_with_steps"].append(with_steps)
        samples["steps_listener"].append(_cpu_us_per(requests, _steps_listener(listener_env, requests)))
        samples["open_model"].append(_cpu_us_per(requests, _open_model(requests)))
    for env in (environment, listener_env):
        steps._state(env).sampler_stop = True
    medians = {name: statistics.median(values) for name, values in samples.items()}
    base = medians["fasthttp"]
    differences = [b - a for a, b in zip(samples["fasthttp"], samples["fasthttp_with_steps"])]
    figures = {
        "fasthttp": {"us_per_request": base},
        "steps_listener": {"us_per_request": medians["steps_listener"]},
        "steps_end_to_end": {"us_per_request": statistics.median(differences)},
        "open_model": {"us_per_request": medians["open_model"]},
    }
    for name, figure in figures.items():
        figure["share_of_fasthttp"] = figure["us_per_request"] / base if base else None
        if name != "fasthttp":
            figure["under_target"] = (
                figure["share_of_fasthttp"] is not None and figure["share_of_fasthttp"] < TARGET_SHARE
            )
    return {
        "requests_per_round": requests,
        "rounds": rounds,
        "target_share": TARGET_SHARE,
        "figures": figures,
        "samples_us": samples,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "measured_at": time.time(),
    }


def print_table(result: dict[str, Any]) -> None:
    print(f"CPU per request, median of {result['rounds']} rounds x {result['requests_per_round']} requests")
    print(f"{'part':<18} {'us/request':>11} {'share of FastHttp':>18}  target < {result['target_share']:.0%}")
    for name, figure in result["figures"].items():
        share = figure["share_of_fasthttp"]
        verdict = "" if name == "fasthttp" else ("ok" if figure.get("under_target") else "OVER")
        print(f"{name:<18} {figure['us_per_request']:>11.1f} {share:>17.1%}  {verdict}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.overhead", description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000, help="requests per round (default 3000)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds, interleaved (default 5)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON result (default {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    if args.requests < 1 or args.rounds < 1:
        print("benchmarks.overhead: --requests and --rounds must be at least 1", file=sys.stderr)
        return 2
    with launch_target("sim-http", ["--port", "0", "--delay", "const:0", "--max-seconds", "600"]) as target:
        result = measure(target.url, args.requests, args.rounds)
    print_table(result)
    print(f"written to {write_json(args.out, result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
