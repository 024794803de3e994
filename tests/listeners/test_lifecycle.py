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
from swarmgauge.core.lifecycle import END_STEPS, NOT_AT_STOP, OPENING, RUN_END, STOP_STEPS, RunEnd
from swarmgauge.core.run_context import RunContext
from swarmgauge.listeners import handoff, resources, rundir, signals, slo, steps, steps_requests, webui_close
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
    assert RUN_END.handlers["one end at a time"] == [signals.one_end_at_a_time]
    assert RUN_END.handlers["users stopped"] == [signals.stop_users_first]
    assert RUN_END.handlers["final reports in"] == [signals.send_last_figures, handoff.say_load_ended]
    assert RUN_END.handlers["web run closed"] == [webui_close.finish_close_at_quit]
    assert RUN_END.handlers["ledgers reconciled"] == [kneo_ledger._on_quitting]
    assert RUN_END.handlers["resources sampled"] == [resources.finish_sampling, handoff.say_load_done]
    assert RUN_END.handlers["tables rewritten"] == [steps.finalize]
    assert RUN_END.handlers["verdicts decided"] == [slo._on_quitting]
    assert RUN_END.handlers["run folder closed"] == [rundir.close_run]
    assert RUN_END.handlers["connections closed"] == [mark_user._close_shared]
    assert RUN_END.handlers["targets stopped"] == [embedded._on_quitting]


def test_a_web_stop_adds_its_waits_and_its_log_at_their_steps_and_nothing_at_the_process_steps():
    assert RUN_END.stop_handlers["users stopped"] == [webui_close.wait_for_workers]
    assert RUN_END.stop_handlers["final reports in"] == [webui_close.wait_for_final_reports]
    assert RUN_END.stop_handlers["verdicts decided"] == [webui_close.log_verdicts_and_repeat_command]
    assert set(RUN_END.stop_handlers) == set(STOP_STEPS)


def _command_line(tmp_path: Path) -> list[str]:
    return ["-f", "locustfiles/http_ramp.py", "--headless", "--run-dir", str(tmp_path), "--slo", "requests>=1"]


def _run_environment(tmp_path: Path) -> Environment:
    options = argument_parser.get_parser().parse_args(_command_line(tmp_path))
    environment = Environment(user_classes=[IdleUser], parsed_options=options)
    environment.create_local_runner()
    rundir.open_new_run(environment)
    return environment


def _probed(seen: dict[str, Any], *, at_stop: bool = False) -> RunEnd:
    """The real handlers, in their steps, each step followed by a probe noting what is on disk and in the run
    (``at_stop``: the probe after the step's STOP-only handlers too)."""
    end = RunEnd()
    for step in END_STEPS:
        for handler in RUN_END.handlers[step]:
            end.at_end(step, handler)
        for handler in RUN_END.stop_handlers.get(step, []):
            end.at_end(step, handler, only_at_stop=True)
        probe_at_stop = at_stop and step in STOP_STEPS
        end.at_end(step, lambda env, step=step: seen.update({step: _observe(env)}), only_at_stop=probe_at_stop)
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
        "repeat_command": "repeat_command" in RunContext.of(environment).run_info,
    }


def test_the_end_of_a_local_run_step_by_step(tmp_path: Path):
    environment = _run_environment(tmp_path)
    environment.runner.start(2, spawn_rate=100, wait=False)
    gevent.sleep(0.3)
    assert environment.runner.user_count == 2
    steps_requests.on_request(environment, "GET", "/", 12.0)
    kneo_ledger.ledger_for(environment)  # as a run with kneo users has
    closed: list[str] = []
    mark_user._SHARED_CLIENTS[("fake",)] = FakeClient(closed)  # type: ignore[assignment]
    embedded.stop_at_end(FakeTarget(closed))  # type: ignore[arg-type]
    folder = rundir.run_dir(environment)
    seen: dict[str, Any] = {}
    _probed(seen).run(environment, END_STEPS)

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


def test_a_web_stop_closes_the_run_through_the_same_steps_in_the_same_order_and_keeps_the_targets(
    tmp_path: Path, monkeypatch
):
    environment = _run_environment(tmp_path)
    environment.runner.start(2, spawn_rate=100, wait=False)
    gevent.sleep(0.3)
    steps_requests.on_request(environment, "GET", "/", 12.0)
    closed: list[str] = []
    client, target = FakeClient(closed), FakeTarget(closed)
    mark_user._SHARED_CLIENTS[("fake",)] = client  # type: ignore[assignment]
    embedded.stop_at_end(target)  # type: ignore[arg-type]
    folder = rundir.run_dir(environment)
    seen: dict[str, Any] = {}
    monkeypatch.setattr(lifecycle, "RUN_END", _probed(seen, at_stop=True))
    monkeypatch.setattr("sys.argv", ["locust", *_command_line(tmp_path)])  # the repeat command reads it
    try:
        environment.runner.stop()  # what STOP does; Locust's test_stop then starts the close, as the web UI's does
        webui_close.begin_close(environment)
        webui_close.finish_close(environment)

        assert list(seen) == list(STOP_STEPS) == [step for step in END_STEPS if step not in NOT_AT_STOP]
        assert seen["users stopped"]["users"] == 0
        assert seen["final reports in"]["files"] == []  # nothing written yet
        assert "resources sampled" in seen and "steps.csv" not in seen["resources sampled"]["files"]
        tables = seen["tables rewritten"]
        assert {"steps.csv", "timeline.csv"} <= set(tables["files"]) and tables["verdicts"] is None
        verdicts = seen["verdicts decided"]
        assert "slo.json" in verdicts["files"] and verdicts["verdicts"][0]["status"] == "pass"
        assert verdicts["repeat_command"] and not verdicts["final"]
        assert seen["run folder closed"]["closed"] and not seen["run folder closed"]["files"]  # run_dir: None
        doc = json.loads((folder / "run.json").read_text())
        assert "ended_at" in doc and "repeat_command" in doc and (folder / "report.md").is_file()
        assert RunContext.of(environment).closed_run == folder
        assert closed == []  # the shared connections and the targets stay for the next START
        assert target in embedded.stopped_at_end() and mark_user._SHARED_CLIENTS[("fake",)] is client
    finally:
        mark_user._SHARED_CLIENTS.pop(("fake",), None)
        embedded.stop_embedded()


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
