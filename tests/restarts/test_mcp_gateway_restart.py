"""Issue 18.5 for the MCP gateway: killed and restarted mid-run on its port, the run goes on, a new session."""

from __future__ import annotations

import pytest
from locust.env import Environment

from swarmgauge.targets.launch import launch_target
from swarmgauge.targets.mcp_gateway import launch
from swarmgauge.users.mcp_user import MCPToolUser
from tests.thirdparty import restart
from tests.thirdparty.servers import free_port
from tests.thirdparty.test_mcp_servers import OUTAGE_NAMES, count_exchanges
from tests.users.test_mcp_user import Recorder, make_user

pytestmark = pytest.mark.integration
FIRST_DOC = "/corpus/quic/doc-0000.md"


@pytest.mark.timeout(300)
def test_gateway_restart_mid_run(capsys):
    mark = launch_target("mark", ["--port", "0", "--seed-corpus", "5"])
    port = free_port()
    gateway = [launch(["--mark", mark.url, "--port", str(port), "--mark-timeout", "3"])]
    try:
        environment = Environment()
        recorder = Recorder(environment)
        user = make_user(MCPToolUser, environment, gateway[0].base_url, timeout=5.0)
        user.options.tool, user.options.args = "mark_fetch", {"url": FIRST_DOC}
        made = count_exchanges(user.client)
        user.on_start()

        def kill() -> None:
            gateway[0].process.kill()
            gateway[0].stop(timeout=5)

        def start() -> None:
            gateway[0] = launch(["--mark", mark.url, "--port", str(port), "--mark-timeout", "3"])

        outage = restart.through_restart(recorder.events, user.call, kill, start)
        outage.check(OUTAGE_NAMES)
        assert len(outage.events) == made[0]
        assert user.client.session.initializations == 2
        with capsys.disabled():
            print("\n" + outage.summary("mcp gateway"))
    finally:
        gateway[0].stop()
        mark.stop()
