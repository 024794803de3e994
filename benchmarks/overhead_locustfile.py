"""The locustfile of ``benchmarks.overhead``: FastHttpUser GETs with no wait, with or without swarmgauge's listeners.

``SG_OVERHEAD_SWARMGAUGE=1`` adds ``import swarmgauge.locust`` (every listener, as a user's own locustfile gets
them); otherwise the file is plain Locust. Both variants carry the same probe: a greenlet that, ``SG_OVERHEAD_WARMUP``
seconds after the test starts, reads this process's CPU time and Locust's own completed-request count, reads both
again ``SG_OVERHEAD_WINDOW`` seconds later, and prints one ``RESULT {json}`` line. It adds no request listener, so
the two variants differ only by swarmgauge. ``SG_OVERHEAD_PROFILE=<path>`` profiles the window with cProfile on the
CPU clock and dumps the stats there.
"""

import json
import os
import time

import gevent
from locust import FastHttpUser, constant, events, task

if os.environ.get("SG_OVERHEAD_SWARMGAUGE") == "1":
    import swarmgauge.locust  # noqa: F401

WARMUP_S = float(os.environ.get("SG_OVERHEAD_WARMUP", "3"))
WINDOW_S = float(os.environ.get("SG_OVERHEAD_WINDOW", "8"))
PROFILE_PATH = os.environ.get("SG_OVERHEAD_PROFILE", "")


class PlainGetUser(FastHttpUser):
    wait_time = constant(0)

    @task
    def get_root(self) -> None:
        self.client.get("/", name="GET /")


def _completed(environment) -> int:
    total = environment.stats.total
    return total.num_requests - total.num_failures


def _probe(environment) -> None:
    gevent.sleep(WARMUP_S)
    profile = None
    if PROFILE_PATH:
        import cProfile

        profile = cProfile.Profile(time.process_time)
        profile.enable()
    cpu, wall, done = time.process_time(), time.perf_counter(), _completed(environment)
    gevent.sleep(WINDOW_S)
    cpu, wall, done = time.process_time() - cpu, time.perf_counter() - wall, _completed(environment) - done
    if profile is not None:
        profile.disable()
        profile.dump_stats(PROFILE_PATH)
    result = {
        "requests": done,
        "failures": environment.stats.total.num_failures,
        "seconds": round(wall, 3),
        "req_per_s": round(done / wall, 1),
        "cpu_use": round(cpu / wall, 3),
        "cpu_us_per_request": round(cpu / max(done, 1) * 1e6, 2),
    }
    print("RESULT " + json.dumps(result), flush=True)
    if environment.runner is not None:
        environment.runner.quit()


@events.test_start.add_listener
def _start_probe(environment, **_kwargs) -> None:
    gevent.spawn(_probe, environment)
