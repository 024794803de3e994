"""The feeder's per-process draw on a real Locust Environment without a runner (a local run's path, in-process)."""

from __future__ import annotations

import argparse
from types import SimpleNamespace

import pytest
from locust.env import Environment
from locust.exception import StopUser

from swarmgauge.core import hooks
from swarmgauge.listeners import feeder, feeder_state


def _environment(tmp_path, mode: str, exhausted: str = "") -> Environment:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(f'{{"n": {i}}}\n' for i in range(3)))
    options = argparse.Namespace(feeder=str(path), feeder_mode=mode, feeder_exhausted=exhausted, feeder_batch=20)
    environment = Environment(user_classes=[], parsed_options=options)
    feeder.load(environment)
    return environment


def _draws(user: SimpleNamespace, count: int) -> list[int]:
    return [hooks.next_row(user)["n"] for _ in range(count)]


def test_unique_stop_hands_each_row_once_then_stops_the_user(tmp_path):
    user = SimpleNamespace(environment=_environment(tmp_path, "unique"))
    assert _draws(user, 3) == [0, 1, 2]
    with pytest.raises(StopUser):
        hooks.next_row(user)
    assert feeder_state.summary(user.environment)["used"] == 3


def test_shared_recycles_by_default_in_file_order(tmp_path):
    user = SimpleNamespace(environment=_environment(tmp_path, "shared"))
    assert _draws(user, 7) == [0, 1, 2, 0, 1, 2, 0]


def test_a_new_run_starts_with_every_row_unused(tmp_path):
    environment = _environment(tmp_path, "unique")
    user = SimpleNamespace(environment=environment)
    _draws(user, 3)
    with pytest.raises(StopUser):
        hooks.next_row(user)
    feeder.begin_run(environment)
    assert _draws(user, 3) == [0, 1, 2]
