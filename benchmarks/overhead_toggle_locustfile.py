"""The locustfile of ``benchmarks.overhead_toggle``: one process, swarmgauge imported, a part switched off and on.

FastHttpUser GETs with no wait, as ``benchmarks/overhead_locustfile.py``. After ``SG_TOGGLE_WARMUP`` seconds a probe
runs ``SG_TOGGLE_PAIRS`` pairs of windows of ``SG_TOGGLE_HALF`` seconds, one window of each pair with the part on and
one with it off, the order within a pair drawn at random (seeded), and prints one ``RESULT {json}`` line: CPU per
completed request in every window. A pair's two windows are a fraction of a second apart in one process, so the
machine's drift and the process's own layout (its imports, its hash seed) hit both alike: what the
process-against-process comparison of ``benchmarks.overhead`` cannot resolve below a few per cent on a shared machine.

``SG_TOGGLE=steps``: the steps listener's ``request`` handler unregistered in the off windows (what it costs a
request where it runs, its share of the once-a-second fold included); ``SG_TOGGLE=noop``: nothing switched, the
control (its on/off ratio is the method's own bias and spread).
"""

import json
import os
import random
import time

import gevent
from locust import FastHttpUser, constant, events, task

import swarmgauge.locust  # noqa: F401

TOGGLE = os.environ.get("SG_TOGGLE", "noop")
WARMUP_S = float(os.environ.get("SG_TOGGLE_WARMUP", "8"))
HALF_S = float(os.environ.get("SG_TOGGLE_HALF", "0.3"))
PAIRS = int(os.environ.get("SG_TOGGLE_PAIRS", "50"))


class PlainGetUser(FastHttpUser):
    wait_time = constant(0)

    @task
    def get_root(self) -> None:
        self.client.get("/", name="GET /")


def _completed(environment) -> int:
    total = environment.stats.total
    return total.num_requests - total.num_failures


def _switch(environment):
    """``switch(on)`` for :data:`TOGGLE`."""
    if TOGGLE == "noop":
        return lambda on: None
    if TOGGLE != "steps":
        raise SystemExit(f"SG_TOGGLE={TOGGLE!r}: steps or noop")
    handlers = environment.events.request._handlers
    (steps,) = [
        h
        for h in handlers
        if getattr(getattr(h, "func", None), "__module__", "") == "swarmgauge.listeners.steps_requests"
    ]

    def switch(on: bool) -> None:
        if on and steps not in handlers:
            handlers.append(steps)
        elif not on and steps in handlers:
            handlers.remove(steps)

    return switch


def _probe(environment) -> None:
    gevent.sleep(WARMUP_S)
    switch = _switch(environment)
    rng = random.Random(7)
    windows = []
    for _ in range(PAIRS):
        order = [True, False]
        rng.shuffle(order)
        for on in order:
            switch(on)
            cpu, done = time.process_time(), _completed(environment)
            gevent.sleep(HALF_S)
            cpu, done = time.process_time() - cpu, _completed(environment) - done
            windows.append({"on": on, "requests": done, "cpu_us_per_request": round(cpu / max(done, 1) * 1e6, 2)})
    switch(True)
    print("RESULT " + json.dumps({"toggle": TOGGLE, "windows": windows}), flush=True)
    if environment.runner is not None:
        environment.runner.quit()


@events.test_start.add_listener
def _start_probe(environment, **_kwargs) -> None:
    gevent.spawn(_probe, environment)
