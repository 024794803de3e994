"""Worker loss: which worker went missing mid-run, when, and in which step.

Locust's master marks a worker *missing* after a few silent heartbeats and carries on with the rest, but fires no
event for it. This listener watches the master's worker table once a second, records each loss (worker id, the
last time the worker was heard from and its last report, when the master noticed, the step it was in then, and
the requests it had reported per step: the steps it touched) and puts the list into ``run.json`` as
``lost_workers``; the report's workers section reads it from there. What a lost worker reported before it died
stays in the stats and in the per-step histograms, because both are merged on arrival.

A worker cut off by the network, not dead, comes back when its link does: Locust 2.47's master takes the first
heartbeat from a worker it marked missing as a return ("self-healed"), gives it users again, and the reports the
worker queued meanwhile arrive and are merged like any other. The entry then gets ``rejoined_at``, and its
``requests_reported`` is kept up to date to the end (``requests_reported_when_lost`` keeps the figure at the loss),
so it says what the steps hold from that worker. A worker that is lost again after a return gets a new entry.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import gevent
from locust import events
from locust.env import Environment
from locust.runners import MasterRunner

from swarmgauge.core.locust_compat import missing_worker_ids
from swarmgauge.listeners import rundir, step_state

log = logging.getLogger(__name__)

POLL_INTERVAL_S = 1.0


class WorkerLossWatcher:
    """Polls the master's worker table; bounded by the run (stopped at test_stop / quitting)."""

    def __init__(self, environment: Environment):
        self.environment = environment
        self.last_seen: dict[str, float] = {}
        self.last_report: dict[str, float] = {}
        self.reported: dict[str, dict[int, int]] = {}
        self.locust_reported: dict[str, int] = {}
        self.lost: list[dict[str, Any]] = []
        self._greenlet: gevent.Greenlet | None = None

    def heard_from(self, client_id: str) -> None:
        """A heartbeat: from a worker that is lost, it is its return (Locust's master re-admits it on this one)."""
        now = time.time()
        self.last_seen[client_id] = now
        for entry in self._away(client_id):
            entry["rejoined_at"] = now
            log.warning(
                "worker %s is back after %.1f s (its heartbeat reached the master again); it takes users again, "
                "and what it measured meanwhile is counted as its reports arrive",
                client_id,
                now - (entry["last_seen"] or entry["noticed_at"]),
            )
            self._publish()

    def _away(self, client_id: str) -> list[dict[str, Any]]:
        """The entries of ``client_id`` lost and not back (at most one)."""
        return [e for e in self.lost if e["worker"] == client_id and e.get("rejoined_at") is None]

    def reported_by(self, client_id: str, data: dict[str, Any]) -> None:
        """Tally what a worker's report adds: per-step requests (as steps.csv counts them) and Locust's total."""
        now = time.time()
        self.last_seen[client_id] = self.last_report[client_id] = now
        per_step = self.reported.setdefault(client_id, {})
        batch = data.get("swarmgauge_steps") or {}
        for step, _rtype, _name, _encoded, requests, *_rest in batch.get("entries", []):
            per_step[int(step)] = per_step.get(int(step), 0) + int(requests)
        total = (data.get("stats_total") or {}).get("num_requests")
        if total:
            self.locust_reported[client_id] = self.locust_reported.get(client_id, 0) + int(total)
        if any(entry["worker"] == client_id for entry in self.lost):
            self._publish()  # a report that arrives after the loss (queued while cut off, or the last at its quit)

    def start(self) -> None:
        if self._greenlet is None or self._greenlet.dead:
            self._greenlet = gevent.spawn(self._watch)

    def stop(self) -> None:
        if self._greenlet is not None:
            self._greenlet.kill(block=False)
        self.check()
        self._publish()

    def _watch(self) -> None:
        while True:
            self.check()
            gevent.sleep(POLL_INTERVAL_S)

    def check(self) -> None:
        runner = self.environment.runner
        for worker_id in missing_worker_ids(runner):
            if not self._away(worker_id):
                self._record(worker_id)

    def _step_at(self, wall_time: float | None) -> Any:
        if wall_time is not None:
            found = step_state.step_at(self.environment, wall_time)
            if found is not None:
                return found[0]
        return step_state.current_step(self.environment)

    def _record(self, client_id: str) -> None:
        last_seen = self.last_seen.get(client_id)
        step = self._step_at(last_seen)
        per_step = self.reported.get(client_id, {})
        entry: dict[str, Any] = {
            "worker": client_id,
            "last_seen": last_seen,
            "last_report_at": self.last_report.get(client_id),
            "noticed_at": time.time(),
            "step": getattr(step, "index", None),
            "step_label": getattr(step, "label", None),
            "steps_touched": sorted(s for s, n in per_step.items() if n),
            "requests_reported": {str(s): n for s, n in sorted(per_step.items())},
            "locust_requests_reported": self.locust_reported.get(client_id, 0),
            "rejoined_at": None,
        }
        entry["requests_reported_when_lost"] = dict(entry["requests_reported"])
        self.lost.append(entry)
        log.warning(
            "worker %s lost (last heard from %.1f s ago); the run goes on with the others",
            client_id,
            entry["noticed_at"] - (entry["last_seen"] or entry["noticed_at"]),
        )
        self._publish()

    def _publish(self) -> None:
        """Into run.json, each entry with what its worker reported by now: a worker that came back, or whose queued
        reports arrived after the loss, has more in the steps than when it was noticed."""
        for entry in self.lost:
            per_step = self.reported.get(entry["worker"], {})
            entry["requests_reported"] = {str(s): n for s, n in sorted(per_step.items())}
            entry["steps_touched"] = sorted(s for s, n in per_step.items() if n)
            entry["locust_requests_reported"] = self.locust_reported.get(entry["worker"], 0)
        rundir.add_run_info(self.environment, "lost_workers", list(self.lost))


_watchers: dict[int, WorkerLossWatcher] = {}


def watcher_for(environment: Environment) -> WorkerLossWatcher | None:
    """The master's worker-loss watcher (the live view lists what it saw), or None on other runners."""
    return _watchers.get(id(environment))


@events.init.add_listener
def _on_init(environment: Environment, **_kwargs: Any) -> None:
    if not isinstance(environment.runner, MasterRunner):
        return
    watcher = WorkerLossWatcher(environment)
    _watchers[id(environment)] = watcher
    environment.events.heartbeat_sent.add_listener(lambda client_id, **_: watcher.heard_from(client_id))
    environment.events.worker_report.add_listener(lambda client_id, data, **_: watcher.reported_by(client_id, data))
    environment.events.test_start.add_listener(lambda **_: watcher.start())
    environment.events.test_stop.add_listener(lambda **_: watcher.stop())
