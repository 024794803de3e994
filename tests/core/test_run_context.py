"""Per-Environment records: one per record class and Environment, made once, renewed on demand, gone with their
Environment; a listener added through ``listen`` gets its Environment and does not keep it alive."""

from __future__ import annotations

import argparse
import gc
import types
from dataclasses import dataclass, field

from locust.env import Environment

from swarmgauge.core import run_context
from swarmgauge.core.run_context import PerEnvironment, RunContext


@dataclass
class Seen(PerEnvironment):
    """A record of this test's own."""

    names: list[str] = field(default_factory=list)


def test_a_record_is_made_once_per_environment_and_two_environments_do_not_share_it():
    first, second = Environment(), Environment()
    Seen.of(first).names.append("a")
    assert Seen.of(first).names == ["a"]
    assert Seen.of(second).names == []
    assert Seen.peek(Environment()) is None


def test_two_record_classes_of_one_environment_are_apart_and_renew_starts_one_afresh():
    environment = Environment()
    RunContext.of(environment).run_info["started_at"] = 1.0
    Seen.of(environment).names.append("a")
    fresh = Seen.renew(environment)
    assert fresh.names == [] and Seen.of(environment) is fresh
    assert RunContext.of(environment).run_info == {"started_at": 1.0}


def test_a_stand_in_that_cannot_be_weakly_referenced_keeps_its_records():
    stand_in = types.SimpleNamespace()
    RunContext.of(stand_in).slo_verdicts = [{"status": "pass"}]
    assert RunContext.of(stand_in).slo_verdicts == [{"status": "pass"}]
    assert run_context.options(stand_in) == argparse.Namespace()


def test_an_environment_that_is_gone_leaves_no_records_behind():
    environment = Environment()
    RunContext.of(environment).run_info["big"] = bytearray(10)
    key = id(environment)
    assert key in run_context.held_ids() and environment in run_context.environments()
    del environment
    gc.collect()
    assert key not in run_context.held_ids()


def test_a_listener_added_by_listen_gets_its_environment_and_lets_it_go():
    shared = Environment()  # its events stand for Locust's process-wide events, shared by every Environment
    heard: list[tuple[int, str]] = []
    environment = Environment()
    run_context.listen(
        environment, shared.events.worker_report, lambda env, client_id, data: heard.append((id(env), client_id))
    )
    shared.events.worker_report.fire(client_id="w1", data={})
    assert heard == [(id(environment), "w1")]
    key = id(environment)
    del environment
    gc.collect()
    shared.events.worker_report.fire(client_id="w2", data={})
    assert heard == [(key, "w1")] and key not in run_context.held_ids()
