"""Issue 18.5 for Mark: the reference server killed and restarted on its UDP port mid-run; the run goes on."""

from __future__ import annotations

import pytest

from swarmgauge.targets.launch import launch_target
from tests.thirdparty import restart
from tests.users.test_mark_user import free_udp_port, user_on

pytestmark = pytest.mark.integration


@pytest.mark.timeout(300)
def test_mark_restart_mid_run(capsys):
    args = ["--port", str(free_udp_port()), "--seed-corpus", "3"]
    server = [launch_target("mark", args)]
    recorded: list[dict] = []
    user = user_on(server[0].url, recorded, mark_timeout=1.0)
    fetches = [0]

    def iterate() -> None:
        fetches[0] += 1
        user.client.fetch("/health")

    def kill() -> None:
        server[0].process.kill()
        server[0].stop(timeout=5)

    def start() -> None:
        server[0] = launch_target("mark", args)

    try:
        outage = restart.through_restart(recorded, iterate, kill, start)
    finally:
        server[0].stop()
        user.on_stop()
    fetch_events = [e for e in outage.events if e["request_type"] == "FETCH"]
    failed_connects = [e for e in outage.events if e["request_type"] == "QUIC" and e["exception"] is not None]
    # one row per fetch, nothing counted twice: a fetch whose connection could not be made is its QUIC row alone
    assert len(fetch_events) + len(failed_connects) == fetches[0]
    outage.check({name for name in (type(e["exception"]).__name__ for e in outage.failures)})
    with capsys.disabled():
        print("\n" + outage.summary("mark"))
