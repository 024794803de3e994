"""The MCP gateway target on the official SDK server, with the reference Mark server it starts behind it: the full
handshake and every demarkus tool in JSON and SSE response modes, answers in the demarkus text convention with the
corpus bytes, stateless (2026-07-28) calls, the ready line, usage errors and a clean stop of both processes."""

from __future__ import annotations

import signal
import subprocess
import sys

import psutil
import pytest
from gevent import monkey

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs

monkey.patch_all()

from swarmgauge.protocols import mcp as proto  # noqa: E402
from swarmgauge.targets.launch import TargetStartError, child_env  # noqa: E402
from swarmgauge.targets.mark.seed import corpus  # noqa: E402
from swarmgauge.targets.mcp_gateway import gateway_base_url, launch, launch_beside_mark  # noqa: E402
from swarmgauge.targets.mcp_gateway.mark_backend import MarkAddress, MarkBackendError, target_path  # noqa: E402
from swarmgauge.users.mcp_client import MCPClient  # noqa: E402
from tests import REPO_ROOT  # noqa: E402

DOCS = {doc.path: doc for doc in corpus(300)}
FIRST = "/corpus/quic/doc-0000.md"
TOOLS = {"mark_fetch", "mark_list", "mark_versions", "mark_lookup", "mark_lookup_all"}


@pytest.fixture(scope="module", params=["sse", "json"])
def gateway(request):
    process = launch(["--json-response"] if request.param == "json" else [])
    yield request.param, process
    process.stop()


@pytest.mark.timeout(60)
def test_handshake_and_every_tool_with_the_corpus_bytes(gateway):
    mode, process = gateway
    client = MCPClient(process.base_url, timeout=10.0, require_session_id=True)
    result = client.open_session()
    assert result["protocolVersion"] == proto.DEFAULT_VERSION
    assert result["serverInfo"]["name"] == "swarmgauge-mark-gateway"
    assert {tool["name"] for tool in client.list_tools()} == TOOLS

    fetched = proto.parse_tool_text(client.call_tool("mark_fetch", {"url": FIRST}))
    assert fetched.status == "ok" and fetched.fields["version"] == "1"
    assert fetched.body == DOCS[FIRST].body.decode()
    assert fetched.fields["type"] == DOCS[FIRST].metadata["type"]
    same = proto.parse_tool_text(client.call_tool("mark_fetch", {"url": process.mark_url + FIRST}))
    assert same.body == fetched.body and same.fields["etag"] == fetched.fields["etag"]

    heading = next(line for line in fetched.body.splitlines() if line.startswith("## "))
    anchor = heading[3:].strip().lower()
    section = proto.parse_tool_text(client.call_tool("mark_fetch", {"url": f"{process.mark_url}{FIRST}#{anchor}"}))
    assert section.fields["section"] == anchor and section.body.startswith(heading)

    missing = proto.parse_tool_text(client.call_tool("mark_fetch", {"url": "/corpus/none.md"}))
    assert missing.status == "not-found"  # a world-side answer is an ordinary result, not isError

    listed = proto.parse_tool_text(client.call_tool("mark_list", {"url": "/corpus/quic"}))
    in_topic = [path for path in DOCS if path.startswith("/corpus/quic/")]
    assert listed.status == "ok" and int(listed.fields["entries"]) == len(in_topic)
    assert all(path.rsplit("/", 1)[1] in listed.body for path in in_topic)

    versions = proto.parse_tool_text(client.call_tool("mark_versions", {"url": FIRST}))
    assert versions.fields["current"] == "1" and versions.fields["total"] == "1"

    lookup = proto.parse_tool_text(client.call_tool("mark_lookup", {"url": "/", "query": "quic", "limit": 3}))
    assert lookup.status == "ok" and lookup.fields["matches"] == "3"
    everywhere = proto.parse_tool_text(client.call_tool("mark_lookup_all", {"query": "quic", "limit": 3}))
    assert everywhere.fields["worlds"] == "1" and everywhere.fields["world"] == process.mark_url
    assert everywhere.body == lookup.body

    with pytest.raises(proto.ToolError) as unknown:
        client.call_tool("mark_fetch", {"url": "mark://elsewhere:1/x.md"})
    assert "unknown world" in unknown.value.text
    assert proto.parse_tool_text(client.call_tool("mark_fetch", {"url": FIRST})).status == "ok"  # session goes on
    client.close()


@pytest.mark.timeout(30)
def test_answers_come_in_the_mode_asked_for(gateway):
    mode, process = gateway
    import requests

    client = MCPClient(process.base_url, timeout=10.0)
    client.open_session()
    outgoing = client.session.call_tool("mark_versions", {"url": FIRST})
    answer = requests.post(process.url, data=outgoing.body, headers=outgoing.headers, timeout=10)
    expected = "application/json" if mode == "json" else "text/event-stream"
    assert answer.status_code == 200 and answer.headers["content-type"].startswith(expected)
    messages = proto.read_messages(answer.headers["content-type"], answer.content, outgoing.request_id)
    assert "status: ok" in proto.tool_text(proto.result_of(messages, outgoing.request_id))
    client.close()


@pytest.mark.timeout(30)
def test_stateless_protocol_calls_tools_without_a_session(gateway):
    _mode, process = gateway
    client = MCPClient(process.base_url, timeout=10.0, protocol_version="2026-07-28")
    text = client.call_tool("mark_fetch", {"url": FIRST})
    assert proto.parse_tool_text(text).body == DOCS[FIRST].body.decode()
    assert client.session.session_id is None and client.session.initializations == 0
    client.close()


@pytest.mark.timeout(30)
def test_sigterm_stops_the_gateway_and_the_mark_server_it_started():
    process = launch([])
    children = psutil.Process(process.pid).children(recursive=True)
    assert children, "the gateway started no Mark server"
    process.process.send_signal(signal.SIGTERM)
    assert process.process.wait(15) == 0
    gone, alive = psutil.wait_procs(children, timeout=10)
    assert not alive
    process.stop()


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "args, says",
    [
        (["--host", "0.0.0.0"], "binds loopback only"),
        (["--path", "mcp"], "--path must start with '/'"),
        (["--mark", "http://127.0.0.1:1"], "--mark must look like mark://"),
        (["--max-sessions", "-1"], "must be positive"),
        (["--dedup-cap", "0"], "--dedup-cap must be at least 1"),
        (["--session-reaper", "never"], "invalid choice"),
    ],
)
def test_bad_options_exit_2_with_one_line(args, says):
    done = subprocess.run(
        [sys.executable, "-m", "swarmgauge.cli", "target", "mcp", "--mark", "mark://127.0.0.1:9", *args],
        capture_output=True,
        text=True,
        timeout=25,
        env=child_env(),
        cwd=REPO_ROOT,
    )
    assert done.returncode == 2 and says in done.stderr
    assert "ready" not in done.stdout


MARK_ARGS = ["--port", "0", "--seed-corpus", "300"]


@pytest.mark.timeout(60)
def test_beside_mark_the_gateway_fronts_the_server_it_was_told_and_each_stops_on_its_own():
    mark, gateway = launch_beside_mark(MARK_ARGS, ["--json-response"])
    try:
        assert gateway.mark_url == mark.url
        assert not psutil.Process(gateway.pid).children()  # its memory is its own
        client = MCPClient(gateway.base_url, timeout=10.0, require_session_id=True)
        client.open_session()
        fetched = proto.parse_tool_text(client.call_tool("mark_fetch", {"url": mark.url + FIRST}))
        assert fetched.body == DOCS[FIRST].body.decode()
        client.close()
        assert gateway.stop() == 0
        assert mark.alive()
    finally:
        gateway.stop()
        mark.stop()


@pytest.mark.timeout(60)
def test_a_mark_server_that_fails_beside_it_leaves_no_gateway_running():
    before = {child.pid for child in psutil.Process().children()}
    with pytest.raises(TargetStartError, match="target mark"):
        launch_beside_mark(["--port", "0", "--seed-corpus", "-5"])
    left = [child for child in psutil.Process().children() if child.pid not in before and child.is_running()]
    assert not [child for child in left if child.status() != psutil.STATUS_ZOMBIE]


@pytest.mark.timeout(30)
def test_mark_from_stdin_with_nothing_said_exits_2_with_one_line():
    done = subprocess.run(
        [sys.executable, "-m", "swarmgauge.cli", "target", "mcp", "--mark-from-stdin"],
        input="",
        capture_output=True,
        text=True,
        timeout=25,
        env=child_env(),
        cwd=REPO_ROOT,
    )
    assert done.returncode == 2 and "--mark must look like mark://" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "ready" not in done.stdout


def test_tool_urls_and_base_url():
    address = MarkAddress("127.0.0.1", 6309)
    assert target_path(address, "/a.md#x") == "/a.md#x"
    assert target_path(address, "mark://127.0.0.1:6309/a.md#x") == "/a.md#x"
    assert target_path(address, "mark://localhost:6309") == "/"
    with pytest.raises(MarkBackendError):
        target_path(address, "https://127.0.0.1/a.md")
    assert gateway_base_url("http://127.0.0.1:8000/mcp") == "http://127.0.0.1:8000"
