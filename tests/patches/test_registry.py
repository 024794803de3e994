"""Each registered dependency patch still fits: the installed version is in its range, and what it replaces or
reads is still there and still behaves as the patch assumes. A failure names the patch; its record in
``swarmgauge.patches`` says what to check and what to ask upstream."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import logging
import re
import sys
from importlib import metadata

import configargparse
import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from swarmgauge.patches import CHECKED_VERSIONS, PATCHES, Kind, Patch

BY_NAME = {patch.name: patch for patch in PATCHES}


def _installed(dependency: str) -> Version:
    if dependency == "python":
        return Version(".".join(str(part) for part in sys.version_info[:3]))
    return Version(metadata.version(dependency))


def test_every_checked_range_is_a_patched_dependencys():
    assert set(CHECKED_VERSIONS) == {patch.dependency for patch in PATCHES}


def test_every_patch_says_what_where_why_and_what_to_file():
    assert len(BY_NAME) == len(PATCHES)
    for patch in PATCHES:
        assert isinstance(patch.kind, Kind) and patch.touches and patch.why and patch.upstream, patch.name
        assert patch.dependency in CHECKED_VERSIONS, f"{patch.name}: no checked range for {patch.dependency}"
        SpecifierSet(patch.versions)  # a valid PEP 440 range
        for module in patch.where:
            assert importlib.util.find_spec(module) is not None, f"{patch.name}: {module} does not exist"


@pytest.mark.parametrize("patch", PATCHES, ids=lambda patch: patch.name)
def test_the_installed_dependency_is_in_the_range_the_patch_was_made_for(patch: Patch):
    installed = _installed(patch.dependency)
    assert installed in SpecifierSet(patch.versions), (
        f"{patch.dependency} {installed} is outside {patch.versions}: re-check patch {patch.name!r} "
        f"({patch.why}); upstream: {patch.upstream}"
    )


@pytest.mark.parametrize(
    "patch",
    [p for p in PATCHES if all(t.split(" ")[0].count(".") >= 1 for t in p.touches)],
    ids=lambda patch: patch.name,
)
def test_every_dotted_thing_a_patch_touches_still_exists(patch: Patch):
    for dotted in patch.touches:
        if " " in dotted:
            continue
        parts = dotted.split(".")
        for split in range(len(parts) - 1, 0, -1):
            try:
                found: object = importlib.import_module(".".join(parts[:split]))
            except ImportError:
                continue
            for attribute in parts[split:]:
                if isinstance(found, type) and not hasattr(found, attribute):
                    assert _sets_field(found, attribute), f"{patch.name}: {dotted} is no longer set by its class"
                    break  # an instance field: what it holds is checked by the patch's own test below
                assert hasattr(found, attribute), f"{patch.name}: {dotted} is gone"
                found = getattr(found, attribute)
            break
        else:
            pytest.fail(f"{patch.name}: no module of {dotted} imports")


def _sets_field(cls: type, attribute: str) -> bool:
    """Whether ``cls`` or one of its bases assigns ``self.<attribute>`` (an instance field, not a class attribute); its
    annotation may span lines (qh3's ``update_traffic_key_cb: Callable[...]``)."""
    assigns = re.compile(rf"self\.{attribute}\b\s*(:[^=]+)?=")
    for klass in cls.__mro__[:-1]:
        try:
            if assigns.search(inspect.getsource(klass)):
                return True
        except (OSError, TypeError):
            continue
    return False


def test_qh3_faster_tls_is_what_its_functions_compute():
    """The replacements equal qh3's own HKDF (the block helpers are compared in test_quic_qh3_patches.py)."""
    from swarmgauge.quic import qh3_patches as quic_qh3_patches

    quic_qh3_patches.faster_tls()
    original = quic_qh3_patches.QH3_ORIGINALS["hkdf_expand_label"]
    tls = importlib.import_module("qh3.tls")
    assert tls.hkdf_expand_label is not original
    for algorithm in (256, 384):
        expected = original(algorithm, b"s" * 32, b"key", b"", 16)
        assert tls.hkdf_expand_label(algorithm, b"s" * 32, b"key", b"", 16) == expected


def test_qh3s_native_core_still_takes_28_arguments_with_the_stream_limits_at_21_and_22(monkeypatch):
    """qh3-stream-limits rewrites arguments 21/22 (100 and 103 by default) of a 28-argument native constructor."""
    connection = importlib.import_module("qh3.quic.connection")
    configuration = importlib.import_module("qh3.quic.configuration").QuicConfiguration(is_client=True)
    native = connection.QuicConnectionCore
    seen: list[tuple] = []

    def recording(*args):
        seen.append(args)
        return native(*args)

    monkeypatch.setattr(connection, "QuicConnectionCore", recording)
    quic = connection.QuicConnection(configuration=configuration)
    assert quic._core is None and quic._tls is None  # what limit_streams checks before patching
    quic.connect(("127.0.0.1", 4433), now=0.0)
    assert len(seen) == 1 and len(seen[0]) == 28
    assert (seen[0][21], seen[0][22]) == (100, 103)


def test_qh3s_connection_reads_of_its_tls_bridge_are_all_answered_by_the_post_handshake_stand_in():
    """qh3-post-handshake-tls: every ``self._tls.<name>`` of qh3's connection, but the two only a handshake in
    progress reaches, is one the stand-in has."""
    from swarmgauge.quic.qh3_post_handshake import PostHandshakeTls

    source = inspect.getsource(importlib.import_module("qh3.quic.connection"))
    read = set(re.findall(r"self\._tls\.(\w+)", source))
    handshake_only = {"start", "remote_initial_source_connection_id"}
    assert read - handshake_only <= set(dir(PostHandshakeTls)), BY_NAME["qh3-post-handshake-tls"].why


def test_qh3_connections_still_hold_the_fields_the_engine_reads():
    patch = BY_NAME["qh3-private-reads"]
    connection = importlib.import_module("qh3.quic.connection")
    configuration = importlib.import_module("qh3.quic.configuration").QuicConfiguration(is_client=True)
    quic = connection.QuicConnection(configuration=configuration)
    quic.connect(("127.0.0.1", 4433), now=0.0)
    missing = [name for name in patch.private_names if not hasattr(quic, name)]
    assert missing == [] and not hasattr(quic, "get_peer_address")  # when qh3 adds it, use it instead


def test_qh3s_tls_context_still_has_the_certificate_verify_step_the_trust_patch_wraps():
    tls = importlib.import_module("qh3.tls")
    assert callable(getattr(tls.Context, "_client_handle_certificate_verify", None))
    assert len(inspect.signature(tls.load_store_and_sort).parameters) >= 1


def test_aioquic_connections_still_hold_the_fields_the_engine_reads():
    patch = BY_NAME["aioquic-private-reads"]
    from aioquic.asyncio.server import QuicServer
    from aioquic.quic.configuration import QuicConfiguration
    from aioquic.quic.connection import QuicConnection

    quic = QuicConnection(configuration=QuicConfiguration(is_client=True))
    quic.connect(("127.0.0.1", 4433), now=0.0)
    missing = [name for name in patch.private_names if name != "_transport" and not hasattr(quic, name)]
    assert missing == []
    assert "self._transport" in inspect.getsource(QuicServer)
    assert quic.get_peer_address() == ("127.0.0.1", 4433)  # the public accessor the engine uses


def test_aioquics_client_still_initialises_its_tls_with_supported_groups():
    from aioquic.quic.configuration import QuicConfiguration
    from aioquic.quic.connection import QuicConnection

    quic = QuicConnection(configuration=QuicConfiguration(is_client=True))
    quic.connect(("127.0.0.1", 4433), now=0.0)
    assert len(quic.tls._supported_groups) == 4  # the four key shares the patch cuts to two


def test_locusts_runner_still_warns_of_a_high_spawn_rate_on_the_logger_the_filter_is_on():
    runners = importlib.import_module("locust.runners")
    assert "spawn rate is very high" in inspect.getsource(runners)
    assert runners.logger is logging.getLogger("locust.runners")


def test_locust_internals_the_compat_layer_replaces_are_still_there():
    from locust.runners import WorkerRunner
    from locust.user.task import TaskSet

    assert "_sleep" in TaskSet.__dict__ and callable(getattr(WorkerRunner, "_send_stats", None))


def test_locusts_taskset_still_makes_a_deque_and_calls_only_what_the_list_queue_has():
    """locust-task-queue-list: when Locust's TaskSet no longer makes a deque per instance, remove the patch."""
    from swarmgauge.core.locust_memory import TaskQueue

    task = importlib.import_module("locust.user.task")
    made = inspect.getsource(inspect.unwrap(task.TaskSet.__init__))
    assert re.search(r"self\._task_queue\b[^=]*= deque\(\)", made), BY_NAME["locust-task-queue-list"].upstream
    called = set(re.findall(r"self\._task_queue\.(\w+)", inspect.getsource(task)))
    assert called and called <= set(dir(TaskQueue))


def test_locusts_user_start_still_defines_a_run_function_per_user():
    """locust-one-run-function: when Locust's User.start spawns a function made once, remove the patch."""
    from locust import User

    started = inspect.getsource(inspect.unwrap(User.start))
    assert "def run_user(user)" in started, BY_NAME["locust-one-run-function"].upstream
    assert "group.spawn(run_user, self)" in started and "self._group = group" in started


def test_hdrhs_encoder_still_points_back_at_its_histogram():
    from hdrh.histogram import HdrHistogram

    histogram = HdrHistogram(1, 60_000, 2)
    assert histogram.encoder.histogram is histogram


def test_the_mcp_session_manager_still_keeps_its_sessions_in_a_private_table():
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    assert "self._server_instances" in inspect.getsource(StreamableHTTPSessionManager.__init__)
    public = [n for n in dir(StreamableHTTPSessionManager) if "session" in n.lower() and not n.startswith("_")]
    assert public == [], f"the SDK may now count its sessions publicly ({public}): use it in mcp_gateway.server"


def test_uvicorns_h11_protocol_still_writes_a_responses_head_and_body_apart():
    """uvicorn-one-write can go once uvicorn sends a small response in one write: then its h11 cycle no longer has a
    separate ``transport.write`` for the head before the body's."""
    from uvicorn.protocols.http.h11_impl import RequestResponseCycle

    source = inspect.getsource(RequestResponseCycle.send)
    assert source.count("self.transport.write(") >= 2, "uvicorn may now send a response at once: drop one_write.py"


def test_argparses_append_action_and_option_table_are_still_where_the_patch_reads_them():
    parser = argparse.ArgumentParser()
    action = parser.add_argument("--x", action="append")
    assert isinstance(action, argparse._AppendAction)
    assert parser._option_string_actions["--x"] is action


def test_a_parsers_actions_are_still_its_options_and_configargparse_still_finds_one_on_a_command_line():
    parser = configargparse.ArgumentParser()
    action = parser.add_argument("--stop-timeout", "-s")
    assert action in parser._actions
    assert configargparse.already_on_command_line(["--stop-timeout=3"], action.option_strings, parser.prefix_chars)
    assert not configargparse.already_on_command_line(["-u", "3"], action.option_strings, parser.prefix_chars)
    parser.parse_args(["-s", "3"])
    assert parser.get_source_to_settings_dict()["command_line"] == {"": (None, ["-s", "3"])}  # argv, as it was


def test_locusts_master_still_sends_its_whole_options_and_a_worker_takes_only_the_keys_sent():
    """``locust-worker-channel-secrets``: the spawn carries ``vars(parsed_options)`` (the master's own dict, so the
    scrub copies it), and a worker updates its options with the message's keys only, so one left out keeps the
    worker's own value."""
    from locust.runners import MasterRunner, WorkerRunner

    assert '"parsed_options": vars(self.environment.parsed_options)' in inspect.getsource(MasterRunner.start)
    worker = inspect.getsource(WorkerRunner.handle_message)
    assert 'for k, v in job["parsed_options"].items()' in worker
    assert "vars(self.environment.parsed_options).update(custom_args_from_master)" in worker


def test_locusts_sockets_are_made_before_they_bind_or_connect_and_the_runner_before_init():
    """``locust-worker-channel-curve``: ``Server``/``Client`` call ``BaseSocket.__init__`` and then bind or connect
    (the CURVE options go in between); ``main`` makes the runner (which binds or connects) before ``init``."""
    from locust import main
    from locust.rpc import zmqrpc

    server = inspect.getsource(zmqrpc.Server.__init__)
    client = inspect.getsource(zmqrpc.Client.__init__)
    assert server.index("BaseSocket.__init__") < server.index(".bind(")
    assert client.index("BaseSocket.__init__") < client.index(".connect(")
    source = inspect.getsource(main.main)
    assert source.index("create_master_runner(") < source.index("events.init.fire(")
    assert source.index("create_worker_runner(") < source.index("events.init.fire(")


def test_locusts_taskset_still_sleeps_through_gevent_sleep():
    """locust-wait-on-timer: our timer wait stands in for TaskSet._sleep's gevent.sleep(seconds); when Locust sleeps
    otherwise, re-read it (and when gevent.sleep waits without a Waiter, remove the patch)."""
    task = importlib.import_module("locust.user.task")
    slept = inspect.getsource(inspect.unwrap(task.TaskSet._sleep))
    assert re.search(r"def _sleep\(self, seconds\):\s+gevent\.sleep\(seconds\)\s*$", slept), slept
    hub = importlib.import_module("gevent.hub")
    assert "hub.wait(t)" in inspect.getsource(hub.sleep), BY_NAME["locust-wait-on-timer"].upstream
