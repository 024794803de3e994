"""Per-Environment state: one slot per name and Environment, made once, gone with its Environment."""

from __future__ import annotations

import argparse
import gc
import types

from locust.env import Environment

from swarmgauge.core import env_state


def test_a_slot_is_made_once_per_environment_and_two_environments_do_not_share_it():
    first, second = Environment(), Environment()
    made = env_state.slot(first, "steps", list)
    made.append(1)
    assert env_state.slot(first, "steps", list) == [1]
    assert env_state.slot(second, "steps", list) == []
    assert env_state.get(second, "absent", "default") == "default"


def test_put_get_and_pop_on_a_stand_in_that_cannot_be_weakly_referenced():
    stand_in = types.SimpleNamespace()
    env_state.put(stand_in, "verdicts", ["ok"])
    assert env_state.get(stand_in, "verdicts") == ["ok"]
    assert env_state.pop(stand_in, "verdicts") == ["ok"]
    assert env_state.get(stand_in, "verdicts") is None


def test_an_environment_that_is_gone_leaves_no_slots_behind():
    environment = Environment()
    env_state.put(environment, "big", bytearray(10))
    key = id(environment)
    assert key in env_state._SLOTS
    del environment
    gc.collect()
    assert key not in env_state._SLOTS  # other Environments of the same process may come and go meanwhile


def test_options_are_the_parsed_command_line_or_an_empty_one():
    environment = Environment()
    assert vars(env_state.options(environment)) == {}
    environment.parsed_options = argparse.Namespace(run_dir="/tmp/x")
    assert env_state.options(environment).run_dir == "/tmp/x"
