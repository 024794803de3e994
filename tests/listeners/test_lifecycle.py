"""Each step of a run's end, run through the real modules' handlers in their written order: a probe after every step
sees what that step did and that the later ones have not happened yet."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gevent
from locust import User, argument_parser, constant, task
from locust import events as locust_events
from locust.env import Environment
from locust.event import Events
from locust.runners import WorkerRunner

import swarmgauge.locust  # noqa: F401 - every listener, so every step has its real handlers
from swarmgauge.core import lifecycle
from swarmgauge.core.lifecycle import END_STEPS, OPENING, RUN_END, RunEnd
from swarmgauge.core.run_context import RunContext
from swarmgauge.listeners import resources, rundir, signals, slo, steps, webui
from swarmgauge.targets import embedded
from swarmgauge.users import kneo_ledger, mark_user


class IdleUser(User):
    wait_time = constant(1)

    @task
    def idle(self) -> None:
        pass


class FakeClient:
    """Stands in for a shared Mark connection: records its close."""

    def __init__(self, closed: list[str]) -> None:
        self.closed = closed

    def close(self) -> None:
        self.closed.append("client")


class FakeTarget:
    """Stands in for an embedded target process: records its stop."""

    name = "fake"

    def __init__(self, stopped: list[str]) -> None:
        self.stopped = stopped

    def stop(self) -> int:
        self.stopped.append("target")
        return 0


def test_every_step_has_the_handler_of_the_module_that_owns_it():
    assert RUN_END.handlers["users stopped"] == [signals.stop_users_first]
    assert RUN_END.handlers["final reports in"] == [signals.send_last_figures]
    assert RUN_END.handlers["web run closed"] == [webui._on_quitting]
    assert RUN_END.handlers["ledgers reconciled"] == [kneo_ledger._on_quitting]
    assert RUN_END.handlers["resources sampled"] == [resources.finish_sampling]
    assert RUN_END.handlers["tables rewritten"] == [steps.finalize]
    assert RUN_END.handlers["verdicts decided"] == [slo._on_quitting]
    assert RUN_END.handlers["run folder closed"] == [rundir.close_run]
    assert RUN_END.handlers["connections closed"] == [mark_user._close_shared]
    assert RUN_END.handlers["targets stopped"] == [embedded._on_quitting]


def _run_environment(tmp_path: Path) -> Environment:
    options = argument_parser.get_parser().parse_args(
        ["-f", "locustfiles/http_ramp.py", "--headless", "--run-dir", str(tmp_path), "--slo", "requests>=1"]
    )
    environment = Environment(user_classes=[IdleUser], parsed_options=options)
    environment.create_local_runner()
    rundir.open_new_run(environment)
    return environment


def _probed(seen: dict[str, Any], environment: Environment) -> RunEnd:
    """The real handlers, in their steps, each step followed by a probe noting what is on disk and in the run."""
    end = RunEnd()
    for step in END_STEPS:
        for handler in RUN_END.handlers[step]:
            end.at_end(step, handler)
        end.at_end(step, lambda env, step=step: seen.update({step: _observe(env)}))
    return end


def _observe(environment: Environment) -> dict[str, Any]:
    folder = rundir.run_dir(environment) or RunContext.of(environment).closed_run
    run_json = json.loads((folder / "run.json").read_text()) if folder and (folder / "run.json").is_file() else {}
    files = sorted(p.name for p in folder.iterdir()) if folder else []
    return {
        "users": environment.runner.user_count,
        "files": files,
        "final": "ended_at" in run_json,
        "closed": rundir.run_is_closed(environment),
        "verdicts": RunContext.of(environment).slo_verdicts,
    }


def test_the_end_of_a_local_run_step_by_step(tmp_path: Path):
    environment = _run_environment(tmp_path)
    environment.runner.start(2, spawn_rate=100, wait=False)
    gevent.sleep(0.3)
    assert environment.runner.user_count == 2
    steps.on_request(environment, "GET", "/", 12.0)
    kneo_ledger.ledger_for(environment)  # as a run with kneo users has
    closed: list[str] = []
    mark_user._SHARED_CLIENTS[("fake",)] = FakeClient(closed)  # type: ignore[assignment]
    embedded._running.append(FakeTarget(closed))  # type: ignore[arg-type]
    folder = rundir.run_dir(environment)
    seen: dict[str, Any] = {}
    _probed(seen, environment).run(environment, END_STEPS)

    assert seen["users stopped"]["users"] == 0
    assert seen["web run closed"]["files"] == []  # nothing written yet
    assert "kneo.json" in seen["ledgers reconciled"]["files"] and "steps.csv" not in seen["ledgers reconciled"]["files"]
    tables = seen["tables rewritten"]
    assert {"steps.csv", "timeline.csv"} <= set(tables["files"]) and tables["verdicts"] is None
    verdicts = seen["verdicts decided"]
    assert "slo.json" in verdicts["files"] and verdicts["verdicts"][0]["status"] == "pass" and not verdicts["final"]
    assert not seen["run folder closed"]["files"]  # closed: run_dir answers None, and no web run kept it
    assert rundir.run_is_closed(environment)
    doc = json.loads((folder / "run.json").read_text())
    assert "ended_at" in doc and (folder / "report.md").is_file() and (folder / "locust_stats.csv").is_file()
    assert closed == ["client", "target"]  # connections closed before the targets stop, both after the folder


def test_a_worker_sends_its_last_figures_at_final_reports_in():
    class FakeWorker(WorkerRunner):
        """A worker runner that records what it sends instead of connecting to a master."""

        def __init__(self) -> None:
            self.sent: list[str] = []
            self.greenlet = None

        def _send_stats(self) -> None:
            self.sent.append("stats")

        def send_message(self, msg_type: str, data: Any = None, client_id: Any = None) -> None:
            self.sent.append(msg_type)

    environment = Environment(user_classes=[IdleUser])
    worker = FakeWorker()
    environment.runner = worker
    assert lifecycle.RUN_END.run(environment, ("final reports in",)) == ["final reports in"]
    assert worker.sent == ["stats", steps.FLUSHED_MESSAGE]


def test_the_opening_steps_run_first_at_quitting_the_closing_ones_last_and_a_locustfiles_own_in_between(monkeypatch):
    events = Events()
    order: list[str] = []
    monkeypatch.setattr(
        lifecycle.RUN_END, "run", lambda env, chosen: order.append("opening" if chosen == OPENING else "closing")
    )
    events.quitting.add_listener(lifecycle.close_the_end)  # as at import, before every other swarmgauge listener
    events.quitting.add_listener(lambda **_kw: order.append("the locustfile's own"))  # imported after
    environment = Environment(user_classes=[IdleUser], events=events)
    lifecycle._on_init(environment=environment)
    events.quitting.fire(environment=environment, reverse=True)
    assert order == ["opening", "the locustfile's own", "closing"]
    assert lifecycle.close_the_end in locust_events.quitting._handlers  # registered when swarmgauge.locust loads
