"""The built-in Users take their inputs from ``--feeder`` rows, one documented column each, and their own without.

``hooks.next_row`` is replaced by a fake that hands out fixed rows: the seam under test is the User's use of the row
(the feeder itself runs for real in ``tests/listeners/test_feeder.py``).
"""

from __future__ import annotations

from typing import Any

import pytest
from locust.env import Environment

from swarmgauge.core import hooks
from swarmgauge.users.kneo_user import KneoUser
from swarmgauge.users.mark_user import MarkUser
from swarmgauge.users.mcp_user import MCPToolUser
from swarmgauge.users.mdk_user import MDKUser


class ToolUser(MCPToolUser):
    host = "http://127.0.0.1:9"


class DeviceUser(MDKUser):
    host = "http://127.0.0.1:9"


class RunUser(KneoUser):
    host = "http://127.0.0.1:9"


class ReadUser(MarkUser):
    host = "mark://127.0.0.1:9"


@pytest.fixture
def environment() -> Environment:
    return Environment(user_classes=[ToolUser, DeviceUser, RunUser, ReadUser])


def _feed(monkeypatch: pytest.MonkeyPatch, row: dict[str, Any] | None) -> None:
    """A fake feeder below the seam: every draw is ``row``."""
    monkeypatch.setattr(hooks.next_row, "implementation", lambda user: row)


def test_each_builtin_user_names_the_column_it_takes():
    assert ToolUser.feeder_columns == ("arguments",) and ToolUser.feeder_json_columns == ("arguments",)
    assert (DeviceUser.feeder_columns, RunUser.feeder_columns, ReadUser.feeder_columns) == (
        ("device_id",),
        ("input",),
        ("path",),
    )


@pytest.mark.parametrize("arguments", ['{"path": "/x", "n": 2}', {"path": "/x", "n": 2}])
def test_mcp_tool_arguments_come_from_the_row_as_csv_text_or_a_jsonl_object(monkeypatch, environment, arguments):
    _feed(monkeypatch, {"arguments": arguments})
    assert ToolUser(environment).tool_arguments() == {"path": "/x", "n": 2}


def test_mdk_device_kneo_input_and_mark_path_come_from_the_row(monkeypatch, environment):
    _feed(monkeypatch, {"device_id": "dev-7", "input": "per-run text", "path": "/corpus/a"})
    assert DeviceUser(environment).pick_device() == "dev-7"
    user = RunUser(environment)
    user.feed_input()
    assert user.client.input_text == "per-run text"
    assert ReadUser(environment).fed_path() == "/corpus/a"


def test_without_a_feeder_each_user_keeps_its_own_inputs(monkeypatch, environment):
    _feed(monkeypatch, None)
    tool_user = ToolUser(environment)
    assert tool_user.tool_arguments() == tool_user.options.args
    device_user = DeviceUser(environment)
    device_user.device_ids = ["known"]
    assert device_user.pick_device() == "known"
    run_user = RunUser(environment)
    before = run_user.client.input_text
    run_user.feed_input()
    assert run_user.client.input_text == before
    assert ReadUser(environment).fed_path() is None
