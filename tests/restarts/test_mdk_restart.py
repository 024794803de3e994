"""Issue 18.5 for MDK: the Gateway stand-in killed and restarted on its port mid-run; the run goes on."""

from __future__ import annotations

import pytest
from locust.env import Environment

from swarmgauge.targets.launch import launch_target
from swarmgauge.users.mdk_client import MDKClient
from tests.thirdparty import restart
from tests.thirdparty.servers import free_port

pytestmark = pytest.mark.integration


@pytest.mark.timeout(300)
def test_mdk_gateway_restart_mid_run(capsys):
    args = ["--devices", "4", "--port", str(free_port())]
    target = [launch_target("mdk", args)]
    environment = Environment()
    recorded: list[dict] = []
    environment.events.request.add_listener(lambda **kw: recorded.append(kw))
    client = MDKClient(target[0].url, environment.events, timeout=2.0)
    calls = [0]

    def iterate() -> None:
        calls[0] += 1
        client.summary()

    def kill() -> None:
        target[0].stop(timeout=5)  # SIGTERM: the stand-in's Kernel and Workers are its children and go with it

    def start() -> None:
        target[0] = launch_target("mdk", args)

    try:
        outage = restart.through_restart(recorded, iterate, kill, start)
    finally:
        target[0].stop()
        client.close()
    assert len(outage.events) == calls[0]  # one row per call: nothing counted twice
    outage.check({"GatewayUnreachable", "GatewayTimeout"})  # named by the client, one class per kind of fault
    with capsys.disabled():
        print("\n" + outage.summary("mdk gateway"))
