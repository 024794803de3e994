"""Locust's internals that swarmgauge uses still exist and behave as the adapter expects: an upgrade that breaks
one fails here by name, not as a slow or silent run."""

import inspect

from locust import argument_parser
from locust.runners import MasterRunner, Runner, WorkerRunner

from swarmgauge.core import locust_compat


def test_default_args_dict_is_a_module_function_returning_the_defaults():
    assert callable(argument_parser.default_args_dict)
    defaults = argument_parser.default_args_dict()
    assert isinstance(defaults, dict) and "num_users" in defaults


def test_the_worker_still_looks_up_default_args_dict_through_the_module():
    """The cache works only while the worker calls ``argument_parser.default_args_dict`` at call time."""
    source = inspect.getsource(WorkerRunner)
    assert "default_args_dict" in source


def test_cache_default_args_builds_the_dict_once_and_hands_out_copies(monkeypatch):
    calls = []
    original = argument_parser.default_args_dict

    def counting() -> dict:
        calls.append(1)
        return original()

    monkeypatch.setattr(argument_parser, "default_args_dict", counting)
    locust_compat.cache_default_args()
    first = argument_parser.default_args_dict()
    first["num_users"] = -1
    second = argument_parser.default_args_dict()
    assert len(calls) == 1 and second["num_users"] != -1
    locust_compat.cache_default_args()
    assert argument_parser.default_args_dict().get("num_users") == second["num_users"]


def test_runners_keep_custom_messages_as_a_mapping_filled_by_register_message():
    source = inspect.getsource(Runner.register_message)
    assert "custom_messages" in source
    assert "custom_messages" in inspect.getsource(Runner.__init__) or "custom_messages" in inspect.getsource(Runner)
    assert issubclass(MasterRunner, Runner) and issubclass(WorkerRunner, Runner)


def test_has_message_handler_reads_the_registered_types():
    class RunnerWithMessages:
        def __init__(self) -> None:
            self.custom_messages = {"swarmgauge_step": (lambda **_: None, False)}

    assert locust_compat.has_message_handler(RunnerWithMessages(), "swarmgauge_step")
    assert not locust_compat.has_message_handler(RunnerWithMessages(), "other")
    assert not locust_compat.has_message_handler(object(), "swarmgauge_step")


def test_every_listed_private_attribute_is_checked_here():
    listed = {name for names in locust_compat.PRIVATE_ATTRIBUTES.values() for name in names}
    source = inspect.getsource(inspect.getmodule(test_every_listed_private_attribute_is_checked_here))
    assert all(name in source for name in listed)


def test_the_masters_worker_table_gives_live_and_missing_workers():
    from locust.runners import STATE_MISSING, STATE_RUNNING, MasterRunner, WorkerNode, WorkerNodes

    class MasterWithWorkers:
        def __init__(self) -> None:
            self.clients = WorkerNodes()

    runner = MasterWithWorkers()
    for worker_id, state in (("b", STATE_RUNNING), ("a", STATE_RUNNING), ("c", STATE_MISSING)):
        runner.clients[worker_id] = WorkerNode(worker_id, state=state)
    assert locust_compat.live_worker_ids(runner) == ["a", "b"]
    assert locust_compat.missing_worker_ids(runner) == ["c"]
    assert "self.clients = WorkerNodes()" in inspect.getsource(MasterRunner.__init__)
