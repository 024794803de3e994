"""Issue 18.5 for brain: the stand-in killed and restarted on its port mid-run; the run goes on."""

from __future__ import annotations

import pytest
from locust.env import Environment

from swarmgauge.targets.launch import launch_target
from swarmgauge.users.brain_user import BrainUser
from tests.thirdparty import restart
from tests.thirdparty.servers import free_port

pytestmark = pytest.mark.integration


@pytest.mark.timeout(300)
def test_brain_restart_mid_run(capsys):
    args = ["--port", str(free_port()), "--search-ms", "1"]
    target = [launch_target("brain", args)]

    class Probe(BrainUser):
        host = target[0].url.rstrip("/")

    environment = Environment(user_classes=[Probe])
    recorded: list[dict] = []
    environment.events.request.add_listener(lambda **kw: recorded.append(kw))
    user = Probe(environment)
    user.on_start()
    calls = [0]

    def iterate() -> None:
        calls[0] += 1
        user.search()

    def kill() -> None:
        target[0].process.kill()
        target[0].stop(timeout=5)

    def start() -> None:
        target[0] = launch_target("brain", args)

    try:
        outage = restart.through_restart(recorded, iterate, kill, start)
    finally:
        target[0].stop()
    assert len(outage.events) == calls[0]  # one row per call: nothing counted twice
    outage.check({"BrainUnreachable"})  # named by the client, one class per kind of fault
    with capsys.disabled():
        print("\n" + outage.summary("brain"))
