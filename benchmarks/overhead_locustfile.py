"""The locustfile of ``benchmarks.overhead``: FastHttpUser GETs with no wait, with or without swarmgauge's listeners.

``SG_OVERHEAD_SWARMGAUGE=1`` adds ``import swarmgauge.locust`` (every listener, as a user's own locustfile gets
them); otherwise the file is plain Locust. Both variants carry the same probe: a greenlet that, ``SG_OVERHEAD_WARMUP``
seconds after the test starts, reads this process's CPU time and Locust's own completed-request count, reads both
again ``SG_OVERHEAD_WINDOW`` seconds later, and prints one ``RESULT {json}`` line. It adds no request listener, so
the two variants differ only by swarmgauge. After the window it also times, in loops, ``request`` events fired
(``event_us``: the listeners' cost per request without the network's noise) and task iterations as Locust's
``TaskSet.run`` loop makes them, each with its zero wait (``iteration_us``: what swarmgauge adds around a task, the
task routing and Locust classes it replaces). ``SG_OVERHEAD_PROFILE=<path>`` profiles the window with cProfile on
the CPU clock and dumps the stats there. The window's CPU is also split into user and kernel time per request, with
page faults and context switches per 1,000 requests (``getrusage``).

For bisecting the swarmgauge case, ``SG_OVERHEAD_DROP=<module>,...`` (``listeners.steps_requests``, ``summary``, ...; ``*``
for all) unregisters those swarmgauge modules' handlers from every Locust event right after the import: their code is
loaded and the patches applied, but they never run. ``benchmarks.overhead`` itself never sets it.
"""

import gc
import json
import os
import resource
import time

import gevent
from locust import FastHttpUser, User, constant, events, task
from locust.user.task import DefaultTaskSet

if os.environ.get("SG_OVERHEAD_SWARMGAUGE") == "1":
    import swarmgauge.locust  # noqa: F401

    _DROP = [name for name in os.environ.get("SG_OVERHEAD_DROP", "").split(",") if name]
    if _DROP:

        def _module_of(handler) -> str:
            function = getattr(handler, "func", handler)
            return getattr(getattr(function, "__func__", function), "__module__", "") or ""

        def _dropped(handler) -> bool:
            module = _module_of(handler)
            return module.startswith("swarmgauge.") and ("*" in _DROP or module.removeprefix("swarmgauge.") in _DROP)

        for _hook in vars(events).values():
            if hasattr(_hook, "_handlers"):
                _hook._handlers[:] = [h for h in _hook._handlers if not _dropped(h)]

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
    collections = [generation["collections"] for generation in gc.get_stats()]
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu, wall, done = time.process_time(), time.perf_counter(), _completed(environment)
    gevent.sleep(WINDOW_S)
    cpu, wall, done = time.process_time() - cpu, time.perf_counter() - wall, _completed(environment) - done
    usage_after = resource.getrusage(resource.RUSAGE_SELF)
    collections = [g["collections"] - before for g, before in zip(gc.get_stats(), collections, strict=True)]
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
        "gc_collections": collections,  # per generation, in the window: a full one walks every tracked object
        "gc_tracked_objects": len(gc.get_objects()),
        **_usage_per_request(usage, usage_after, max(done, 1)),
    }
    result["event_us"] = _event_cost(environment)
    result["iteration_us"] = _iteration_cost(environment)
    print("RESULT " + json.dumps(result), flush=True)
    if environment.runner is not None:
        environment.runner.quit()


def _usage_per_request(before: resource.struct_rusage, after: resource.struct_rusage, done: int) -> dict:
    """The window's CPU split into user and kernel time per request, with page faults and context switches per 1,000
    requests: where a difference that the per-request code does not explain is spent (a kernel-side one is system
    calls or faults, not Python)."""
    return {
        "user_us_per_request": round((after.ru_utime - before.ru_utime) / done * 1e6, 2),
        "sys_us_per_request": round((after.ru_stime - before.ru_stime) / done * 1e6, 2),
        "minor_faults_per_1k": round((after.ru_minflt - before.ru_minflt) * 1000 / done, 2),
        "voluntary_switches_per_1k": round((after.ru_nvcsw - before.ru_nvcsw) * 1000 / done, 2),
        "involuntary_switches_per_1k": round((after.ru_nivcsw - before.ru_nivcsw) * 1000 / done, 2),
    }


def _event_cost(environment, count: int = 20_000) -> float:
    """CPU µs of one ``request`` event as a FastHttpUser GET fires it, through every listener this process has
    (Locust's statistics; with swarmgauge, its wrapper and listeners too): the listeners' share without the noise
    of the network and the other users. Timed after the window, with the users still running."""
    request = environment.events.request
    began, now = time.process_time(), time.time()
    for index in range(count):
        request.fire(
            request_type="GET",
            name="GET /",
            response_time=0.8 + (index % 97) * 0.01,
            response_length=200,
            response=None,
            context={},
            exception=None,
            start_time=now,
            url="/",
        )
    return round((time.process_time() - began) * 1e6 / count, 3)


def _iteration_cost(environment, count: int = 20_000) -> float:
    """CPU µs of one task iteration's own frame, as ``TaskSet.run`` makes it for a user with a no-op task and a zero
    wait: schedule the next task, execute it, wait. ``gevent.sleep`` is a no-op stand-in for the loop (restored
    after), the same in both variants: a zero wait yields to the hub, and the loop would time the other users'
    requests instead of the wrappers around a task. The user class is made here, so Locust does not run it."""

    class IterationProbe(User):
        wait_time = constant(0)

        @task
        def nothing(self) -> None:
            pass

    taskset = DefaultTaskSet(IterationProbe(environment))
    sleep = gevent.sleep
    gevent.sleep = lambda seconds=0, ref=True: None
    try:
        began = time.process_time()
        for _ in range(count):
            taskset.schedule_task(taskset.get_next_task())
            taskset.execute_next_task()
            taskset.wait()
        spent = time.process_time() - began
    finally:
        gevent.sleep = sleep
    return round(spent * 1e6 / count, 3)


@events.test_start.add_listener
def _start_probe(environment, **_kwargs) -> None:
    gevent.spawn(_probe, environment)
