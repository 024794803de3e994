"""An observer locustfile for the compose test: each worker keeps its own count of requests per step.

Loaded beside the service's locustfile (``-f a.py,tests/deploy/worker_tally.py``); it declares no users. Every
worker counts the ``request`` events it fires, by the step that was current when each started (warm-up apart, as
the steps listener does), and writes ``worker-PID-RANDOM.json`` into ``$SWARMGAUGE_TEST_TALLY_DIR`` when it quits,
so the test can hold the master's ``steps.csv`` against what the workers themselves measured. (In containers every
worker is PID 1, hence the random part.)
"""

import json
import os
import time
import uuid
from pathlib import Path

from locust import events
from locust.runners import WorkerRunner

from swarmgauge.listeners import steps

_counts: dict[str, dict[str, int]] = {}


@events.init.add_listener
def _on_init(environment, **_kwargs) -> None:
    if not isinstance(environment.runner, WorkerRunner):
        return

    def on_request(start_time=None, **_kw) -> None:
        started = start_time if start_time is not None else time.time()
        found = steps.step_at(environment, started)
        if found is None:
            key, kind = "none", "requests"
        else:
            info, began = found
            key = str(info.index)
            kind = "warmup" if info.warmup and started < began + info.warmup else "requests"
        bucket = _counts.setdefault(key, {"requests": 0, "warmup": 0})
        bucket[kind] += 1

    environment.events.request.add_listener(on_request)


@events.quitting.add_listener
def _on_quitting(environment, **_kwargs) -> None:
    directory = os.environ.get("SWARMGAUGE_TEST_TALLY_DIR")
    if not directory or not isinstance(environment.runner, WorkerRunner):
        return
    path = Path(directory) / f"worker-{os.getpid()}-{uuid.uuid4().hex[:8]}.json"
    path.write_text(json.dumps({"pid": os.getpid(), "steps": _counts}))
